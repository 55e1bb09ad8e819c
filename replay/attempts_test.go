package replay

import (
	"fmt"
	"testing"
)

// TestAttemptHistory: each attempt's end is kept with its error, through a
// snapshot, and the history is bounded.
func TestAttemptHistory(t *testing.T) {
	s := New()
	spec := diamond()
	spec.Tasks[0].Retries = 30
	mustApply(t, s, &WorkflowPut{Spec: spec, At: 1}, &RunCreated{ID: "r1", Workflow: "diamond", Version: 1, At: 2})
	tr := TaskRef{Run: "r1", Task: 0}
	at := int64(10)
	for n := 1; n <= MaxAttemptsKept+2; n++ {
		ok := n == MaxAttemptsKept+2
		if n > 1 {
			at = s.Runs["r1"].Tasks[0].NotBefore
		}
		mustApply(t, s, &TaskDispatched{TaskRef: tr, Attempt: n, At: at}, &TaskStarted{TaskRef: tr, Attempt: n, At: at + 1},
			&TaskFinished{TaskRef: tr, Attempt: n, OK: ok, ExitCode: n, Error: fmt.Sprintf("exit status %d", n), At: at + 2})
	}
	check := func(what string, task *Task) {
		t.Helper()
		h := task.Attempts
		if len(h) != MaxAttemptsKept || h[0].Attempt != 3 || h[0].Error != "exit status 3" || h[0].Status != "failed" ||
			h[len(h)-1].Status != "success" || h[len(h)-1].Attempt != MaxAttemptsKept+2 || h[0].FinishedAt-h[0].StartedAt != 1 {
			t.Fatalf("%s: history %+v", what, h)
		}
	}
	check("live", s.Runs["r1"].Tasks[0])
	check("restored", restoreSnap(t, s.Snapshot(1)).Runs["r1"].Tasks[0])
}

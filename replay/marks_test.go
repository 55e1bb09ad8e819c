package replay

import (
	"errors"
	"testing"
)

func statuses(run *Run) string {
	out := ""
	for _, t := range run.Tasks {
		out += t.Name + "=" + string(t.Status) + " "
	}
	return out
}

// TestMarkTask: a task marked by hand ends so (a pending one at once, its
// downstream released or skipped); a failed task of a failed run marked
// success makes the tasks downstream of it run again.
func TestMarkTask(t *testing.T) {
	s := New()
	run := run1(s, t) // diamond: a → (b, c) → d
	mustApply(t, s, &TaskMarked{TaskRef: TaskRef{Run: "r1", Task: 0}, OK: true, At: 5})
	if got := readyNames(s); len(got) != 2 || run.Tasks[0].Error != "marked success by hand" {
		t.Fatalf("after marking a success: ready %v, %s", got, statuses(run))
	}
	mustApply(t, s, &TaskMarked{TaskRef: TaskRef{Run: "r1", Task: 1}, At: 6})
	if run.Tasks[1].Status != Failed || run.Tasks[3].Status != Skipped {
		t.Fatalf("after marking b failed: %s", statuses(run))
	}
	mustApply(t, s, finish(2, true, 7)...)
	if run.Status != RunFailed {
		t.Fatalf("run %s: %s", run.Status, statuses(run))
	}
	if err := s.Apply(&TaskMarked{TaskRef: TaskRef{Run: "r1", Task: 2}, At: 8}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("marking failed in an ended run: %v", err)
	}
	mustApply(t, s, &TaskMarked{TaskRef: TaskRef{Run: "r1", Task: 1}, OK: true, At: 9})
	if run.Status != RunPending || run.Tasks[1].Status != Success || run.Tasks[3].Status != Pending || len(readyNames(s)) != 1 {
		t.Fatalf("after marking b success in the failed run: run %s, %s, ready %v", run.Status, statuses(run), readyNames(s))
	}
	tr := TaskRef{Run: "r1", Task: 3}
	mustApply(t, s, &TaskDispatched{TaskRef: tr, Attempt: 1, At: 10}, &TaskFinished{TaskRef: tr, Attempt: 1, OK: true, At: 11})
	if run.Status != RunSuccess {
		t.Fatalf("run %s after d: %s", run.Status, statuses(run))
	}
	if err := s.Apply(&TaskMarked{TaskRef: TaskRef{Run: "r1", Task: 3}, OK: true, At: 12}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("marking a success success: %v", err)
	}
}

// TestRetryFrom: retry --from a task reruns it and its downstream tasks,
// whatever their outcome, even in a run that succeeded.
func TestRetryFrom(t *testing.T) {
	s := New()
	run := run1(s, t)
	for i := range 4 {
		mustApply(t, s, finish(i, true, int64(10+10*i))...)
	}
	if run.Status != RunSuccess {
		t.Fatalf("run %s", run.Status)
	}
	mustApply(t, s, &RunRetried{ID: "r1", Expand: true, From: "b", At: 100})
	if statuses(run) != "a=success b=pending c=success d=pending " || run.Status != RunPending {
		t.Fatalf("after retry from b: %s %s", run.Status, statuses(run))
	}
	if got := readyNames(s); len(got) != 1 || got[0] != "r1/b" {
		t.Fatalf("ready %v", got)
	}
	if err := s.Apply(&RunRetried{ID: "r1", From: "zz", At: 101}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("from an unknown task: %v", err)
	}
}

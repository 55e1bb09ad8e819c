package replay

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/orkwal/orkwal/replay/workflow"
)

// TestRunOrderMatchesTheRunList: the runs EachRunBefore gives for every
// filter (workflow, status, both, none) and bound, and RunCount, are those
// of the run list filtered, newest first, for runs of three workflows
// moved through random statuses (a workflow's runs of any status are a
// merge of its lists per status).
func TestRunOrderMatchesTheRunList(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	s := New()
	wfs := []string{"a", "b", "c"}
	for _, wf := range wfs {
		mustApply(t, s, &WorkflowPut{Spec: &workflow.Spec{Name: wf, Tasks: []*workflow.Task{{Name: "t", Executor: "noop"}}}, At: 1})
	}
	for i := 0; i < 1500; i++ {
		id := fmt.Sprintf("r%04d", i)
		mustApply(t, s, &RunCreated{ID: id, Workflow: wfs[rng.IntN(3)], Version: 1, At: 2})
		ref := TaskRef{Run: id}
		switch rng.IntN(5) {
		case 1:
			mustApply(t, s, &TaskDispatched{TaskRef: ref, Attempt: 1, At: 3})
		case 2:
			mustApply(t, s, &TaskDispatched{TaskRef: ref, Attempt: 1, At: 3}, &TaskFinished{TaskRef: ref, Attempt: 1, OK: true, At: 4})
		case 3:
			mustApply(t, s, &TaskDispatched{TaskRef: ref, Attempt: 1, At: 3}, &TaskFinished{TaskRef: ref, Attempt: 1, At: 4})
		case 4:
			mustApply(t, s, &RunCancelRequested{ID: id, At: 3})
		}
	}
	bounds := []uint64{^uint64(0), 0, 1, 700, 1499, 1500}
	for _, wf := range append(wfs, "", "none") {
		for _, st := range append(allRunStatuses[:], "") {
			for _, bound := range bounds {
				var want, got []string
				for _, r := range slices.Backward(s.RunList) {
					if r.Seq < bound && (wf == "" || r.Workflow == wf) && (st == "" || r.Status == st) {
						want = append(want, r.ID)
					}
				}
				s.EachRunBefore(wf, st, bound, func(r *Run) bool { got = append(got, r.ID); return true })
				if !slices.Equal(got, want) {
					t.Fatalf("workflow %q status %q before %d: %d runs %v…, want %d %v…", wf, st, bound, len(got), head(got), len(want), head(want))
				}
				if bound == ^uint64(0) && s.RunCount(wf, st) != len(want) {
					t.Fatalf("workflow %q status %q: count %d, want %d", wf, st, s.RunCount(wf, st), len(want))
				}
			}
		}
	}
}

func head(ids []string) []string { return ids[:min(len(ids), 5)] }

package replay

import (
	"testing"

	"github.com/orkwal/orkwal/replay/workflow"
)

// TestSnapshotOfRecreatedWorkflowKeepsItsSpec: a workflow deleted and put
// again starts over at version 1 (applyWorkflowPut), so a retained run of
// the deleted workflow and the new workflow pin two different specs under
// the same name and version. The snapshot must restore each to its own
// spec; Restore looked the workflow's spec up by "name@version", where the
// run's spec, numbered after the workflows', won: after a compaction and a
// restart the workflow ran the deleted definition.
func TestSnapshotOfRecreatedWorkflowKeepsItsSpec(t *testing.T) {
	old := &workflow.Spec{Name: "w", Tasks: []*workflow.Task{{Name: "old", Executor: "noop"}}}
	cur := &workflow.Spec{Name: "w", Tasks: []*workflow.Task{{Name: "new", Executor: "noop"}}}
	for _, incremental := range []bool{false, true} {
		s := New()
		mustApply(t, s,
			&WorkflowPut{Spec: old, Source: "old", At: 1},
			&RunCreated{ID: "r1", Workflow: "w", Version: 1, At: 2},
			&WorkflowDeleted{Name: "w", At: 3},
			&WorkflowPut{Spec: cur, Source: "new", At: 4})
		if w := s.Workflows["w"]; w.Version != 1 || w.Spec.Tasks[0].Name != "new" {
			t.Fatalf("live workflow: version %d, task %s", w.Version, w.Spec.Tasks[0].Name)
		}
		var snap *Snapshot
		if incremental {
			snap = s.BeginSnapshot(4)
			complete(t, snap, 1)
		} else {
			snap = s.Snapshot(4)
		}
		back := restoreSnap(t, snap)
		if got := back.Workflows["w"].Spec.Tasks[0].Name; got != "new" {
			t.Errorf("incremental=%v: restored workflow w runs task %q, the deleted version's; want %q", incremental, got, "new")
		}
		if got := back.Runs["r1"].Spec.Tasks[0].Name; got != "old" {
			t.Errorf("incremental=%v: restored run r1 pins task %q; want %q", incremental, got, "old")
		}
		h1, _ := s.Hash()
		if h2, _ := back.Hash(); h1 != h2 {
			t.Errorf("incremental=%v: restored state's hash differs from the live state's", incremental)
		}
	}
}

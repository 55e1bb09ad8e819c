package engine

import (
	"testing"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay/workflow"
)

// TestRecreatedWorkflowSurvivesSnapshot: delete a workflow that has a
// retained run, put it again (version 1 again, another definition), and
// restart: the clean shutdown's snapshot must bring back the new
// definition, not the deleted one, and the state the log folds to.
func TestRecreatedWorkflowSurvivesSnapshot(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, executors.Noop{}, 4)
	put(t, e, diamond("noop"))
	id := trigger(t, e, "diamond")
	waitFor(t, e, "run", finished(e, id))
	if err := e.DeleteWorkflow("diamond"); err != nil {
		t.Fatal(err)
	}
	again := &workflow.Spec{Name: "diamond", Tasks: []*workflow.Task{{Name: "only", Executor: "noop"}}}
	put(t, e, again)
	live, _ := e.StateHash()
	if err := e.Close(); err != nil { // compacts: a snapshot at the last index
		t.Fatal(err)
	}
	if idx, _ := snapshotIndexes(dir); len(idx) == 0 {
		t.Fatal("no snapshot written at shutdown")
	}
	e2 := openEngine(t, dir, executors.Noop{}, 4)
	defer e2.Close()
	w, err := e2.Workflow("diamond")
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Tasks) != 1 || w.Tasks[0].Name != "only" {
		names := []string{}
		for _, t := range w.Tasks {
			names = append(names, t.Name)
		}
		t.Errorf("after restart, workflow diamond v%d has tasks %v: the deleted definition; want [only]", w.Version, names)
	}
	if got, _ := e2.StateHash(); got != live {
		t.Error("state from the snapshot differs from the live state")
	}
}

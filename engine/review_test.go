package engine

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay/workflow"
	"github.com/orkwal/orkwal/wal"
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

// TestFailedCompactionLeaksNoRunFolders: a compaction that fails without a
// crash (here the snapshot's rename; a full disk fails its write the same
// way) after recording runs_pruned must not leave the pruned runs' logs/
// and work/ folders for as long as the daemon runs: the record is durable,
// so nothing needs them, and on a full disk they are the space the next
// try needs.
func TestFailedCompactionLeaksNoRunFolders(t *testing.T) {
	dir := t.TempDir()
	e, ids := retainedRuns(t, dir, 5, nil)
	stopLoop(e)
	failed := errors.New("injected: rename failed")
	e.cfg.CompactFault = func(s string) error {
		if s == "before-rename" {
			return failed
		}
		return nil
	}
	if err := e.Compact(); !errors.Is(err, failed) {
		t.Fatalf("compact: %v, want the injected failure", err)
	}
	e.cfg.CompactFault = nil
	if err := e.Compact(); err != nil { // the next try succeeds
		t.Fatal(err)
	}
	for i, id := range ids[:3] {
		if _, err := os.Stat(filepath.Join(dir, "logs", id)); err == nil {
			t.Errorf("run %d was pruned but its logs/ folder is still there after a later compaction", i)
		}
	}
	release(e)
}

// TestRecreatedWorkflowSnapshotThenRunsBoot: the same, with a snapshot in
// the middle of the log: the runs of the new definition recorded after it
// name tasks the deleted definition does not have, so a boot that restored
// the deleted definition refused the folder.
func TestRecreatedWorkflowSnapshotThenRunsBoot(t *testing.T) {
	dir := t.TempDir()
	e := openCompacting(t, dir, -1, 0)
	put(t, e, diamond("noop"))
	id := trigger(t, e, "diamond")
	waitFor(t, e, "run", finished(e, id))
	if err := e.DeleteWorkflow("diamond"); err != nil {
		t.Fatal(err)
	}
	again := &workflow.Spec{Name: "diamond"}
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		again.Tasks = append(again.Tasks, &workflow.Task{Name: n, Executor: "noop"})
	}
	put(t, e, again)
	stopLoop(e)
	if err := e.Compact(); err != nil {
		t.Fatal(err)
	}
	e.Start2()
	id2 := trigger(t, e, "diamond")
	waitFor(t, e, "run of the new definition", finished(e, id2))
	settle(t, e)
	live, _ := e.StateHash()
	crash(e)
	e2, err := Open(Config{DataDir: dir, Clock: &fakeClock{}, Logger: quiet, CompactBytes: -1,
		Executors: map[string]executors.Executor{"process": executors.Noop{}, "noop": executors.Noop{}}})
	if err != nil {
		t.Fatalf("boot after the snapshot: %v", err)
	}
	defer e2.Close()
	if got, _ := e2.StateHash(); got != live {
		t.Error("recovered state differs from the live state")
	}
}

// TestOpenMakesANewDataFolderDurable: a data folder the first boot creates
// (and the folders above it that it creates) is named in its parent, which
// must be fsynced before anything acknowledged can depend on the folder.
func TestOpenMakesANewDataFolderDurable(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a", "orkwal-data")
	var synced []string
	syncDir = func(d string) error { synced = append(synced, filepath.Clean(d)); return wal.SyncDir(d) }
	defer func() { syncDir = wal.SyncDir }()
	e := openEngine(t, dir, executors.Noop{}, 1)
	e.Close()
	has := func(d string) bool {
		for _, s := range synced {
			if s == d {
				return true
			}
		}
		return false
	}
	for _, parent := range []string{root, filepath.Join(root, "a")} {
		if !has(parent) {
			t.Errorf("%s, which names a folder the first boot created, was never fsynced (fsynced: %v)", parent, synced)
		}
	}
}

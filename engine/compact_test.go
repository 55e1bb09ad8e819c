package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orkwal/orkwal/replay/workflow"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/wal"
)

func openCompacting(t *testing.T, dir string, compactBytes int64, keepRuns int) *Engine {
	t.Helper()
	e, err := Open(Config{DataDir: dir, Clock: &fakeClock{}, Logger: quiet, CompactBytes: compactBytes, KeepRuns: keepRuns,
		SegmentSize: 2048, Executors: map[string]executors.Executor{"process": executors.Noop{}, "noop": executors.Noop{}}})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	return e
}

// work triggers n diamond runs and waits until they all succeeded.
func work(t *testing.T, e *Engine, n int) {
	t.Helper()
	var ids []string
	for i := 0; i < n; i++ {
		ids = append(ids, trigger(t, e, "diamond"))
	}
	waitFor(t, e, "runs", func() bool {
		for _, id := range ids {
			if runStatus(e, id) != "success" {
				return false
			}
		}
		return true
	})
}

// stopLoop stops the loop as a crash would, keeping the WAL open for a
// synchronous Compact; release then drops the files as the crash would.
func stopLoop(e *Engine) { close(e.halt); <-e.done }
func release(e *Engine)  { e.wal.Close(); e.lock.Release() }

func TestBackgroundSnapshotsTruncateAndRecover(t *testing.T) {
	dir := t.TempDir()
	e := openCompacting(t, dir, 4<<10, 0)
	put(t, e, diamond("noop"))
	// Work until two compactions have ended: one runs in the background,
	// and the next starts only with an append after it ends.
	for i := 0; e.compactions.Load() < 2; i++ {
		if i == 100 {
			t.Fatalf("%d compactions after %d runs", e.compactions.Load(), 10*i)
		}
		work(t, e, 10)
	}
	settle(t, e)
	live, _ := e.StateHash()
	first, _ := e.wal.FirstIndex()
	if first <= 1 {
		t.Fatalf("log not truncated after %d compactions", e.compactions.Load())
	}
	crash(e)
	e2 := openCompacting(t, dir, 4<<10, 0)
	defer e2.Close()
	if got, _ := e2.StateHash(); got != live {
		t.Fatal("state from snapshot + log differs from the live state")
	}
}

// compactedWork opens an engine on dir and runs a diamond workflow
// snapshots+1 times, each time `each` runs, with a compaction after each of
// the first snapshots. It returns the engine, its loop stopped, and the hash
// of its live state.
func compactedWork(t *testing.T, dir string, snapshots, each int) (*Engine, uint64) {
	t.Helper()
	e := openCompacting(t, dir, -1, 0)
	put(t, e, diamond("noop"))
	for i := 0; i < snapshots; i++ {
		work(t, e, each)
		stopLoop(e)
		if err := e.Compact(); err != nil {
			t.Fatal(err)
		}
		e.Start2()
	}
	work(t, e, each)
	settle(t, e)
	live, _ := e.StateHash()
	stopLoop(e)
	return e, live
}

// crashCompactionAt runs a compaction of e (its loop stopped) that a crash
// cuts short at step, then releases e's log and lock as a dead daemon would.
func crashCompactionAt(t *testing.T, e *Engine, step string) {
	t.Helper()
	crashAt := errors.New("crash at " + step)
	e.cfg.CompactFault = func(s string) error {
		if s == step {
			return crashAt
		}
		return nil
	}
	if err := e.Compact(); !errors.Is(err, crashAt) {
		t.Fatalf("compact: %v", err)
	}
	release(e)
}

func TestCrashAtEveryCompactionStep(t *testing.T) {
	for _, step := range []string{"before-rename", "after-rename", "after-truncate"} {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			// a first snapshot, so the second truncates
			e, live := compactedWork(t, dir, 1, 10)
			crashCompactionAt(t, e, step)
			e2 := openCompacting(t, dir, -1, 0)
			defer e2.Close()
			if got, _ := e2.StateHash(); got != live {
				t.Fatalf("crash %s: recovered state differs", step)
			}
			if tmp, _ := filepath.Glob(filepath.Join(Layout(dir).Snapshots(), "*.tmp")); len(tmp) != 0 {
				t.Fatalf("leftover %v", tmp)
			}
		})
	}
}

// TestBootFinishesACutRemoval: a compaction cut short after its rename
// (or its truncation) leaves three snapshots, the oldest of which its step
// 4 would have removed; the next boot removes it, keeping the newest and
// its fallback, so that a daemon stopped then with nothing to snapshot
// keeps two. Before, it kept three until its next compaction.
func TestBootFinishesACutRemoval(t *testing.T) {
	for _, step := range []string{"after-rename", "after-truncate"} {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			e, live := compactedWork(t, dir, 2, 5)
			crashCompactionAt(t, e, step)
			before, _ := snapshotIndexes(dir)
			if len(before) != 3 {
				t.Fatalf("the cut compaction left %d snapshots, want 3", len(before))
			}
			e2 := openCompacting(t, dir, -1, 0)
			if got, _ := e2.StateHash(); got != live {
				t.Fatalf("crash %s: recovered state differs", step)
			}
			stopLoop(e2)
			release(e2)
			after, _ := snapshotIndexes(dir)
			if len(after) != 2 || after[0] != before[0] || after[1] != before[1] {
				t.Fatalf("after the boot: snapshots %v, want the newest two of %v", after, before)
			}
		})
	}
}

func TestCorruptNewestSnapshotFallsBack(t *testing.T) {
	dir := t.TempDir()
	e := openCompacting(t, dir, -1, 0)
	put(t, e, diamond("noop"))
	for i := 0; i < 3; i++ {
		work(t, e, 5)
		stopLoop(e)
		if err := e.Compact(); err != nil {
			t.Fatal(err)
		}
		e.Start2()
	}
	settle(t, e)
	live, _ := e.StateHash()
	stopLoop(e)
	release(e)
	idxs, _ := snapshotIndexes(dir)
	if len(idxs) != 2 {
		t.Fatalf("kept %d snapshots, want the newest two", len(idxs))
	}
	newest := Layout(dir).Snapshot(idxs[0])
	data, _ := os.ReadFile(newest)
	data[len(data)-1] ^= 0xff
	os.WriteFile(newest, data, 0o644)
	e2 := openCompacting(t, dir, -1, 0)
	if got, _ := e2.StateHash(); got != live {
		t.Fatal("fallback to the older snapshot and the log lost state")
	}
	stopLoop(e2)
	release(e2)

	// Without any snapshot the truncated log has a gap: boot refuses.
	for _, idx := range idxs {
		os.Remove(Layout(dir).Snapshot(idx))
	}
	if _, err := Open(Config{DataDir: dir, Logger: quiet}); !errors.Is(err, wal.ErrCorrupt) {
		t.Fatalf("boot with a gap between snapshot and log: %v, want refusal", err)
	}
}

// retainedRuns opens an engine on dir that keeps 2 runs per workflow and
// never compacts on its own, and runs n one-task runs of "w" to success
// (each writes a line: its log file and folder exist), calling each(id)
// after each; it returns their ids, oldest first.
func retainedRuns(t *testing.T, dir string, n int, each func(id string)) (*Engine, []string) {
	t.Helper()
	e, err := Open(Config{DataDir: dir, Logger: quiet, CompactBytes: -1, KeepRuns: 2, Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	put(t, e, &workflow.Spec{Name: "w", Tasks: []*workflow.Task{{Name: "a", Executor: "process", Command: []string{"echo", "a line"}}}})
	var ids []string
	for i := 0; i < n; i++ {
		id := trigger(t, e, "w")
		waitFor(t, e, "run", func() bool { return runStatus(e, id) == "success" })
		ids = append(ids, id)
		if each != nil {
			each(id)
		}
	}
	return e, ids
}

// leaveScratch leaves in work/ a scratch file of an attempt of a run (a
// python attempt's runner spec), as a crash between the attempt's end and
// the removal of its scratch does (attempt 9: not one the run's own
// removals reach meanwhile; not its output, which boot removes whatever
// its run: see TestBootRemovesAttemptOutputs).
func leaveScratch(dir string) func(id string) {
	return func(id string) { os.WriteFile(leftScratch(dir, id), []byte("{}"), 0o600) }
}

func leftScratch(dir, id string) string {
	return Layout(dir).Scratch(id, "a", 9) + ".python.json"
}

func TestRetentionPrunesRunsAndTheirLogs(t *testing.T) {
	dir := t.TempDir()
	e, ids := retainedRuns(t, dir, 5, leaveScratch(dir))
	stopLoop(e)
	if err := e.Compact(); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids { // the compaction removed the pruned runs' scratch
		if _, err := os.Stat(leftScratch(dir, id)); (i >= 3) != (err == nil) {
			t.Errorf("run %d: kept=%v but its scratch file: %v", i, i >= 3, err)
		}
	}
	release(e)
	e2 := openCompacting(t, dir, -1, 2)
	defer e2.Close()
	for i, id := range ids {
		_, err := e2.Run(id)
		_, logErr := os.Stat(filepath.Join(dir, "logs", id))
		if kept := i >= 3; kept != (err == nil) || kept != (logErr == nil) {
			t.Errorf("run %d: kept=%v but run err %v, log folder err %v", i, kept, err, logErr)
		}
	}
}

// TestMetricsLeaveACompactionInProgressAlone: reading the stats lists the
// snapshots; it must not remove the .tmp file a compaction is writing
// (only boot removes stale ones).
func TestMetricsLeaveACompactionInProgressAlone(t *testing.T) {
	dir := t.TempDir()
	e := openCompacting(t, dir, -1, 0)
	defer e.Close()
	os.MkdirAll(Layout(dir).Snapshots(), 0o755)
	tmp := Layout(dir).Snapshot(99) + ".tmp"
	os.WriteFile(tmp, []byte("being written"), 0o644)
	e.Stats()
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("a stats read removed the snapshot being written: %v", err)
	}
}

// TestCloseCompletesACopy: a snapshot the loop began but did not finish
// copying is completed and written by Close, and boot loads it.
func TestCloseCompletesACopy(t *testing.T) {
	dir := t.TempDir()
	e := openCompacting(t, dir, -1, 0)
	put(t, e, diamond("noop"))
	work(t, e, 3)
	settle(t, e)
	stopLoop(e) // the loop is gone: the test owns its state
	e.stepBudget = 1
	e.cfg.CompactBytes, e.logBytes = 1, 1
	e.mu.Lock()
	e.maybeCompact(e.cfg.Clock.Now().UnixNano())
	e.mu.Unlock()
	if e.copying == nil {
		t.Fatal("no copy begun")
	}
	index, units, steps := e.copying.snap.Index, copyUnits(e), e.copySteps.Load()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if got := e.copySteps.Load() - steps; got != units {
		t.Fatalf("Close took %d copy steps, want %d", got, units)
	}
	live, _ := e.StateHash()
	if idxs, _ := snapshotIndexes(dir); len(idxs) == 0 || idxs[0] != index {
		t.Fatalf("snapshots %v, want the newest at %d", idxs, index)
	}
	e2 := openCompacting(t, dir, -1, 0)
	defer e2.Close()
	if got, _ := e2.StateHash(); got != live {
		t.Fatal("state from the snapshot Close completed differs")
	}
}

// recreate puts workflow diamond, runs it to the end (a retained run of
// version 1), deletes it, and puts it again (version 1 again) with noop
// tasks of the given names.
func recreate(t *testing.T, e *Engine, tasks ...string) {
	t.Helper()
	put(t, e, diamond("noop"))
	id := trigger(t, e, "diamond")
	waitFor(t, e, "run", finished(e, id))
	if err := e.DeleteWorkflow("diamond"); err != nil {
		t.Fatal(err)
	}
	again := &workflow.Spec{Name: "diamond"}
	for _, n := range tasks {
		again.Tasks = append(again.Tasks, &workflow.Task{Name: n, Executor: "noop"})
	}
	put(t, e, again)
}

// TestRecreatedWorkflowSurvivesSnapshot: delete a workflow that has a
// retained run, put it again (version 1 again, another definition), and
// restart: the clean shutdown's snapshot must bring back the new
// definition, not the deleted one, and the state the log folds to.
func TestRecreatedWorkflowSurvivesSnapshot(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, executors.Noop{}, 4)
	recreate(t, e, "only")
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
	recreate(t, e, "a", "b", "c", "d", "e", "f")
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

// TestFailedSnapshotRenameLeavesNoTmp: a snapshot whose rename fails
// (here something already holds its name) leaves no .tmp behind: each
// later try, at another index, would leave one more, each the size of a
// snapshot, on what may be a full disk. The next try succeeds.
func TestFailedSnapshotRenameLeavesNoTmp(t *testing.T) {
	dir := t.TempDir()
	e, _ := retainedRuns(t, dir, 3, nil)
	stopLoop(e)
	// A folder in its way, at the last index or the next (Compact may
	// record runs_pruned first).
	var in []string
	for _, i := range []uint64{e.wal.LastIndex(), e.wal.LastIndex() + 1} {
		in = append(in, Layout(dir).Snapshot(i))
		if err := os.MkdirAll(filepath.Join(in[len(in)-1], "x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Compact(); err == nil || !strings.Contains(err.Error(), "rename snapshot") {
		t.Fatalf("compact onto a folder: %v, want the rename's error", err)
	}
	if tmps, _ := filepath.Glob(filepath.Join(Layout(dir).Snapshots(), "*.tmp")); len(tmps) > 0 {
		t.Fatalf("a failed rename left %v", tmps)
	}
	for _, p := range in {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Compact(); err != nil {
		t.Fatalf("the next try: %v", err)
	}
	release(e)
}

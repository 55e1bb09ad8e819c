package engine

import (
	"errors"
	"github.com/orkwal/orkwal/replay/workflow"
	"os"
	"path/filepath"
	"testing"
	"time"

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

func TestCrashAtEveryCompactionStep(t *testing.T) {
	for _, step := range []string{"before-rename", "after-rename", "after-truncate"} {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			e := openCompacting(t, dir, -1, 0)
			put(t, e, diamond("noop"))
			work(t, e, 10)
			stopLoop(e)
			if err := e.Compact(); err != nil { // a first snapshot, so the second truncates
				t.Fatal(err)
			}
			e.Start2()
			work(t, e, 10)
			settle(t, e)
			live, _ := e.StateHash()
			stopLoop(e)
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
			e2 := openCompacting(t, dir, -1, 0)
			defer e2.Close()
			if got, _ := e2.StateHash(); got != live {
				t.Fatalf("crash %s: recovered state differs", step)
			}
			if tmp, _ := filepath.Glob(filepath.Join(dir, snapshotDir, "*.tmp")); len(tmp) != 0 {
				t.Fatalf("leftover %v", tmp)
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
	newest := snapshotPath(dir, idxs[0])
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
		os.Remove(snapshotPath(dir, idx))
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

func TestRetentionPrunesRunsAndTheirLogs(t *testing.T) {
	dir := t.TempDir()
	e, ids := retainedRuns(t, dir, 5, nil)
	stopLoop(e)
	if err := e.Compact(); err != nil {
		t.Fatal(err)
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
	os.MkdirAll(filepath.Join(dir, snapshotDir), 0o755)
	tmp := snapshotPath(dir, 99) + ".tmp"
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

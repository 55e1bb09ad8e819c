package engine

import (
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
	"github.com/orkwal/orkwal/wal"
)

// logSinceSnapshot reads a stopped data folder from outside: the bytes of
// the WAL entries after its newest snapshot's index, what a boot replays.
func logSinceSnapshot(t *testing.T, dir string) int64 {
	t.Helper()
	var snap uint64
	if idxs, _ := snapshotIndexes(dir); len(idxs) > 0 {
		snap = idxs[0]
	}
	var size int64
	err := wal.ReplayDir(filepath.Join(dir, "wal"), snap+1, func(index uint64, recs [][]byte) error {
		if index > snap {
			size += wal.EntrySize(index, recs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return size
}

// crashLooping returns a function that opens and starts an engine on cfg
// (noop executors, a fake clock) whose background compactions are cut at
// their start while alive is set, as a kill during them would cut them;
// the opened engine sets alive.
func crashLooping(t *testing.T, cfg Config, alive *atomic.Bool) func() *Engine {
	return func() *Engine {
		cfg.Clock, cfg.Logger = &fakeClock{}, quiet
		cfg.Executors = map[string]executors.Executor{"process": executors.Noop{}, "noop": executors.Noop{}}
		cfg.CompactFault = func(step string) error {
			if step == "start" && alive.Load() {
				return errors.New("killed during the compaction")
			}
			return nil
		}
		e, err := Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		alive.Store(true)
		e.Start()
		return e
	}
}

// TestCrashLoopKeepsTheLogSinceTheSnapshotBounded: a daemon whose lives
// are shorter than a compaction (every background snapshot is cut at its
// start, as a kill during it would) still compacts, at boot, so the log a
// boot replays does not grow with the number of crashes. Before, each
// boot replayed every earlier life's log (241 MB and 15 s after 32 kills).
func TestCrashLoopKeepsTheLogSinceTheSnapshotBounded(t *testing.T) {
	const compact, lives = 4 << 10, 20
	dir := t.TempDir()
	var alive atomic.Bool // the loop runs: a compaction now is cut by the crash
	open := crashLooping(t, Config{DataDir: dir, CompactBytes: compact, SegmentSize: 2048}, &alive)
	e := open()
	put(t, e, diamond("noop"))
	var most, lifeMost int64
	for life := 0; life < lives; life++ {
		before, _ := e.wal.Size()
		work(t, e, 12) // about 1.5 × compact bytes of log
		settle(t, e)
		after, _ := e.wal.Size()
		lifeMost = max(lifeMost, after-before)
		crash(e)
		alive.Store(false)
		most = max(most, logSinceSnapshot(t, dir))
		e = open()
	}
	defer e.Close()
	if lifeMost < compact {
		t.Fatalf("a life logged %d bytes, less than --compact-bytes %d: no compaction began", lifeMost, compact)
	}
	// A boot replays at most what the lives since the newest snapshot
	// logged: with a snapshot at every boot past compact bytes, one life's
	// (past compact bytes: it was snapshotted) plus an earlier one's below
	// compact bytes.
	if bound := int64(compact) + lifeMost; most > bound {
		t.Fatalf("after %d crashes a boot found %d bytes of log since the newest snapshot, over %d (compact bytes %d + the most one life logged, %d)",
			lives, most, bound, compact, lifeMost)
	}
}

// openDelayed opens an engine on dir whose task_started records wait an
// hour for a frame to ride (unless the engine commits them at once), so
// that a crash finds a started attempt recorded as only dispatched.
func openDelayed(t *testing.T, dir string, ex executors.Executor) *Engine {
	return openStartedDelay(t, dir, ex, time.Hour)
}

// openStartedDelay opens an engine on dir whose task_started records wait
// delay for a frame to ride (startedDelay).
func openStartedDelay(t *testing.T, dir string, ex executors.Executor, delay time.Duration) *Engine {
	t.Helper()
	e, err := Open(Config{DataDir: dir, Clock: &fakeClock{}, Logger: quiet,
		Executors: map[string]executors.Executor{"process": ex, "noop": executors.Noop{}}})
	if err != nil {
		t.Fatal(err)
	}
	e.startedDelay = delay
	e.Start()
	return e
}

// TestCrashLoopCountsOnlyStartedAttempts: an attempt that a crash finds
// dispatched but never started does not count toward the crash-loop limit,
// however many crashes in a row (before, the third failed the task, which
// had never run); a task that starts and takes the box down is still
// stopped: the attempt after a crash is held until its start is recorded
// (at once, not deferred), so each crash it causes counts.
func TestCrashLoopCountsOnlyStartedAttempts(t *testing.T) {
	t.Run("never started", func(t *testing.T) {
		dir := t.TempDir()
		s := &silentExec{newManual(t, dir)}
		e := openDelayed(t, dir, s)
		put(t, e, one("w", func(*workflow.Task) {}))
		id := trigger(t, e, "w")
		for crashes := 1; crashes <= 2*replay.MaxInterruptions; crashes++ {
			s.next() // dispatched, never reports started
			crash(e)
			e = openDelayed(t, dir, s)
			if tv := taskView(e, id, "t"); tv.Status == "failed" || tv.Interruptions != 0 {
				t.Fatalf("after %d crashes of an attempt that never started: %s, %d interruptions (%s)", crashes, tv.Status, tv.Interruptions, tv.Error)
			}
		}
		e.Close()
	})
	t.Run("takes the box down", func(t *testing.T) {
		dir := t.TempDir()
		m := newManual(t, dir)
		e := openDelayed(t, dir, m)
		put(t, e, one("w", func(*workflow.Task) {}))
		id := trigger(t, e, "w")
		m.next() // started, its start not yet recorded: the crash takes it for unstarted
		crash(e)
		for crashes := 2; ; crashes++ {
			e = openDelayed(t, dir, m)
			if tv := taskView(e, id, "t"); tv.Status == "failed" {
				if crashes != replay.MaxInterruptions+2 || !strings.Contains(tv.Error, "crash loop") {
					t.Fatalf("failed after %d crashes (%s), want %d, a crash loop", crashes-1, tv.Error, replay.MaxInterruptions+1)
				}
				break
			}
			if crashes > 2*replay.MaxInterruptions {
				t.Fatalf("a task that took the box down %d times still runs", crashes-1)
			}
			j := m.next()
			if j.Hold == nil {
				t.Fatalf("attempt %d after a crash is not held", j.Attempt)
			}
			if !<-j.Hold { // the task would run now: its start must be durable
				t.Fatalf("attempt %d: held back, want let run", j.Attempt)
			}
			if frameOf(t, dir, "task_started", id, j.Attempt) == 0 {
				t.Fatalf("attempt %d let run before its task_started was durable", j.Attempt)
			}
			crash(e)
		}
		e.Close()
	})
}

// TestBootSnapshotPrunes: a daemon stopped right after a boot that wrote a
// snapshot (a crash loop) drops finished runs by --keep-runs at its clean
// stop, though it logged nothing since: before, it had nothing new to
// snapshot and kept every run its short lives had finished (seen as a
// retention failure of the kill -9 harness).
func TestBootSnapshotPrunes(t *testing.T) {
	const compact, keep = 4 << 10, 2
	var alive atomic.Bool
	open := crashLooping(t, Config{DataDir: t.TempDir(), CompactBytes: compact, KeepRuns: keep}, &alive)
	e := open()
	put(t, e, diamond("noop"))
	var ids []string
	for i := 0; i < 12; i++ { // past --compact-bytes, every compaction cut
		ids = append(ids, trigger(t, e, "diamond"))
	}
	waitFor(t, e, "runs ended or pruned", func() bool {
		for _, id := range ids {
			if s := runStatus(e, id); s != "success" && s != "" {
				return false
			}
		}
		return true
	})
	settle(t, e)
	crash(e)
	alive.Store(false)
	e = open() // snapshots at boot
	e.Close()  // at once: nothing new to snapshot
	e = open()
	defer e.Close()
	if n := len(e.Runs(RunFilter{Workflow: "diamond"})); n > keep {
		t.Fatalf("%d finished runs of diamond kept after the boot's snapshot, want at most --keep-runs %d", n, keep)
	}
}

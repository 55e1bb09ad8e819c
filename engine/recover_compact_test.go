package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
	"github.com/orkwal/orkwal/wal"
)

// TestDiskFullAfterTruncation: once compaction has truncated the log's
// front, a write failing with ENOSPC must still rebuild the durable state
// (a snapshot plus the log after it, not the log from index 1, which is
// gone) and recover in-process once space is back. Before the fix, the
// rebuild read the log from index 1, found it missing, kept the failed
// turn's unacknowledged run visible, and recovery refused the log as
// corrupt for as long as the daemon ran.
func TestDiskFullAfterTruncation(t *testing.T) {
	dir := t.TempDir()
	disk := newDiskFull()
	clock := &fakeClock{}
	e, err := Open(Config{DataDir: dir, Clock: clock, Logger: quiet, CompactBytes: 4 << 10, SegmentSize: 2048,
		RecoveryBackoff: time.Millisecond,
		Executors:       map[string]executors.Executor{"process": executors.Noop{}, "noop": executors.Noop{}},
		WALFault:        disk.fault})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	defer e.Close()
	put(t, e, diamond("noop"))
	work(t, e, 60)
	waitFor(t, e, "two compactions", func() bool { return e.compactions.Load() >= 2 })
	settle(t, e)
	if first, _ := e.wal.FirstIndex(); first <= 1 {
		t.Fatalf("log not truncated after %d compactions", e.compactions.Load())
	}
	acked := len(e.Runs(RunFilter{}))

	disk.full.Store(true)
	if _, err := e.Trigger("diamond", nil, "test"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("trigger on a full disk: %v, want ErrUnavailable", err)
	}
	if n := len(e.Runs(RunFilter{})); n != acked {
		t.Fatalf("after the failed write the engine shows %d runs, %d acknowledged: the rebuild of the durable state failed", n, acked)
	}
	disk.full.Store(false)
	clock.Advance(time.Second) // the recovery backoff (RecoveryBackoff, on the engine's clock)
	waitFor(t, e, "recovery after space is freed", func() bool { return e.Err() == nil })
	work(t, e, 3)
}

// TestCrashDuringCompactionLeaksNoRunFolders: a crash after runs_pruned was
// recorded but before compaction removed the pruned runs' logs/ and work/
// folders must not leave them behind for ever (the disk bound): boot
// removes the folders of runs the state does not hold, and keeps the others.
func TestCrashDuringCompactionLeaksNoRunFolders(t *testing.T) {
	// The folders go at the writer's start (removePruned), after "start":
	// a crash there leaves them all.
	for _, step := range []string{"start"} {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			e, ids := retainedRuns(t, dir, 5, func(id string) {
				// scratch an interrupted attempt would leave behind, in
				// a run folder (data folders written before scratch was
				// flat) and beside the others
				os.MkdirAll(filepath.Join(dir, "work", id), 0o755)
				os.WriteFile(filepath.Join(dir, "work", id, "a.1.input.json"), []byte("{}"), 0o644)
				leaveScratch(dir)(id)
			})
			stopLoop(e)
			crashCompactionAt(t, e, step)
			if _, err := os.Stat(filepath.Join(dir, "logs", ids[0])); err != nil {
				t.Fatalf("the crash should have left the pruned run's log folder: %v", err)
			}
			e2 := openCompacting(t, dir, -1, 2)
			defer e2.Close()
			for i, id := range ids {
				_, err := e2.Run(id)
				_, logErr := os.Stat(filepath.Join(dir, "logs", id))
				_, workErr := os.Stat(filepath.Join(dir, "work", id))
				_, scratchErr := os.Stat(leftScratch(dir, id))
				if kept := i >= 3; kept != (err == nil) || kept != (logErr == nil) || kept != (workErr == nil) || kept != (scratchErr == nil) {
					t.Errorf("run %d: kept=%v but run err %v, logs/ err %v, work/ err %v, scratch err %v", i, kept, err, logErr, workErr, scratchErr)
				}
			}
		})
	}
}

// TestBootChecksTheFramesItsSnapshotCovers: boot restores the state from
// the snapshot and applies only the frames after its index, but a record
// before it that does not decode is corruption all the same: the boot
// refuses, naming the WAL index (it checks those frames before it
// restores the snapshot, issue 27).
func TestBootChecksTheFramesItsSnapshotCovers(t *testing.T) {
	dir := t.TempDir()
	l, spec := emptyLog(t, dir)
	var err error
	st := replay.New()
	for _, r := range []replay.Record{&replay.WorkflowPut{Spec: spec, At: 1}, nil, &replay.RunCreated{ID: "r1", Workflow: "w", Version: 1, At: 2}} {
		payload := []byte{0xee} // no record of that kind: it does not decode
		if r != nil {
			if payload, err = replay.Encode(r); err != nil {
				t.Fatal(err)
			}
			if err := st.Apply(r); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.Append([][]byte{payload}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	if err := os.MkdirAll(Layout(dir).Snapshots(), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(Layout(dir).Snapshot(3))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Snapshot(3).Encode(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	e, err := Open(Config{DataDir: dir, Logger: quiet, Executors: map[string]executors.Executor{"noop": executors.Noop{}}})
	if err == nil {
		e.Close()
		t.Fatal("boot accepted a log whose frame 2 does not decode")
	}
	if !strings.Contains(err.Error(), "wal index 2 record 0") {
		t.Fatalf("boot refused with %v, want the WAL index of the bad record", err)
	}
}

// TestBootPastABadNewestSnapshot: the frames boot checks before it
// restores (up to the newest snapshot's index) are not all it applies
// when that snapshot does not load: it falls back to the older one and
// applies every frame after that one's index, those the bad snapshot
// covered included. A good log boots to the whole log's state; a frame
// between the two snapshots that does not decode refuses the boot, named
// by its WAL index, as it did when boot restored the snapshot first.
func TestBootPastABadNewestSnapshot(t *testing.T) {
	for _, c := range []struct {
		name    string
		badAt   uint64 // the frame that does not decode, or 0
		wantErr string
	}{
		{"good log", 0, ""},
		{"bad frame the bad snapshot covers", 3, "wal index 3 record 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			l, spec := emptyLog(t, dir)
			st := replay.New()
			snaps := map[uint64][]byte{}
			for i, r := range []replay.Record{&replay.WorkflowPut{Spec: spec, At: 1},
				&replay.RunCreated{ID: "r1", Workflow: "w", Version: 1, At: 2},
				&replay.RunCreated{ID: "r2", Workflow: "w", Version: 1, At: 3},
				&replay.RunCreated{ID: "r3", Workflow: "w", Version: 1, At: 4}} {
				index := uint64(i + 1)
				payload, err := replay.Encode(r)
				if err != nil {
					t.Fatal(err)
				}
				if err := st.Apply(r); err != nil {
					t.Fatal(err)
				}
				if index == c.badAt {
					payload = []byte{0xee} // no record of that kind: it does not decode
				}
				if _, err := l.Append([][]byte{payload}); err != nil {
					t.Fatal(err)
				}
				if index == 2 || index == 4 {
					var buf strings.Builder
					if err := st.Snapshot(index).Encode(&buf); err != nil {
						t.Fatal(err)
					}
					snaps[index] = []byte(buf.String())
				}
			}
			l.Close()
			snaps[4][len(snaps[4])-1] ^= 1 // the newest does not load: its checksum fails
			if err := os.MkdirAll(Layout(dir).Snapshots(), 0o700); err != nil {
				t.Fatal(err)
			}
			for index, data := range snaps {
				if err := os.WriteFile(Layout(dir).Snapshot(index), data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			e, err := Open(Config{DataDir: dir, Logger: quiet, Executors: map[string]executors.Executor{"noop": executors.Noop{}}})
			if c.wantErr != "" {
				if err == nil {
					e.Close()
					t.Fatalf("boot accepted a log whose frame %d does not decode", c.badAt)
				}
				if !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("boot refused with %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			for _, id := range []string{"r1", "r2", "r3"} {
				if _, err := e.Run(id); err != nil {
					t.Errorf("run %s after booting past the bad snapshot: %v", id, err)
				}
			}
		})
	}
}

// emptyLog is the open log of a new data folder dir (made by a boot), and
// a workflow of one noop task to write into it.
func emptyLog(t *testing.T, dir string) (*wal.Log, *workflow.Spec) {
	t.Helper()
	e, err := Open(Config{DataDir: dir, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	l, err := wal.Open(Layout(dir).WAL(), wal.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return l, &workflow.Spec{Name: "w", Tasks: []*workflow.Task{{Name: "t", Executor: "noop"}}}
}

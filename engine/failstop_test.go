package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/wal"
)

func openWithFault(t *testing.T, dir string, ex executors.Executor, fault wal.Fault) *Engine {
	t.Helper()
	e, err := Open(Config{DataDir: dir, Clock: &fakeClock{}, Logger: quiet, WALFault: fault,
		RecoveryBackoff: time.Millisecond,
		Executors:       map[string]executors.Executor{"process": ex, "noop": executors.Noop{}}})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	return e
}

// diskFull injects ENOSPC into every WAL write while full is set, and
// signals each failed write on failed (buffered; a full buffer drops the
// signal).
type diskFull struct {
	full   atomic.Bool
	failed chan struct{}
}

func newDiskFull() *diskFull { return &diskFull{failed: make(chan struct{}, 10)} }

func (d *diskFull) fault(op wal.Op, _ uint64) error {
	if op != wal.OpWrite || !d.full.Load() {
		return nil
	}
	select {
	case d.failed <- struct{}{}:
	default:
	}
	return fmt.Errorf("injected: %w", syscall.ENOSPC)
}

// retryRecovery fires the engine's recovery timer: it advances the engine's
// fake clock past the longest backoff.
func retryRecovery(e *Engine) { e.cfg.Clock.(*fakeClock).Advance(maxRecoveryWait) }

// TestFsyncFailureIsFailStop: the turn whose fsync fails is answered with
// ErrUnavailable, every later write too, reads keep working, the fsync is
// never retried, and a restart keeps everything that was acknowledged.
func TestFsyncFailureIsFailStop(t *testing.T) {
	dir := t.TempDir()
	var failing atomic.Bool
	var syncsAfter atomic.Int32
	e := openWithFault(t, dir, executors.Noop{}, func(op wal.Op, _ uint64) error {
		if failing.Load() {
			syncsAfter.Add(1)
			return fmt.Errorf("injected: %w", syscall.EIO)
		}
		return nil
	})
	put(t, e, diamond("noop"))
	var acked []string
	for i := 0; i < 5; i++ {
		acked = append(acked, trigger(t, e, "diamond"))
	}
	failing.Store(true)
	if _, err := e.Trigger("diamond", nil, "test"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("trigger during a failed fsync: %v, want ErrUnavailable", err)
	}
	tries := syncsAfter.Load()
	if _, err := e.Trigger("diamond", nil, "test"); !errors.Is(err, ErrUnavailable) || e.Err() == nil {
		t.Fatalf("trigger after poison: %v (Err %v)", err, e.Err())
	}
	if syncsAfter.Load() != tries {
		t.Fatal("the engine retried an fsync after it failed")
	}
	if runs := e.Runs(RunFilter{}); len(runs) < len(acked) {
		t.Fatalf("reads after fail-stop: %d runs", len(runs))
	}
	crash(e)
	e2 := openEngine(t, dir, executors.Noop{}, 4)
	defer e2.Close()
	for _, id := range acked {
		if _, err := e2.Run(id); err != nil {
			t.Fatalf("acknowledged run %s lost: %v", id, err)
		}
	}
}

// TestDiskFullRecoversInProcess: a write failing with ENOSPC stops the
// engine accepting work; once space is back it reopens the WAL and accepts
// work again, without losing acknowledged runs, and a task that was running
// across the failure runs to the end.
func TestDiskFullRecoversInProcess(t *testing.T) {
	dir := t.TempDir()
	disk := newDiskFull()
	m := newManual(t, dir)
	e := openWithFault(t, dir, m, disk.fault)
	defer e.Close()
	put(t, e, diamond("process"))
	before := trigger(t, e, "diamond")
	a := m.next()

	disk.full.Store(true)
	m.finish(a, true) // its outcome cannot be recorded: it will run again
	_, err := e.Trigger("diamond", nil, "test")
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("trigger on a full disk: %v, want ErrUnavailable caused by ENOSPC", err)
	}
	disk.full.Store(false) // space freed
	retryRecovery(e)
	waitFor(t, e, "recovery", func() bool { return e.Err() == nil })

	after := trigger(t, e, "diamond")
	// a's success was never recorded (the WAL takes back the failed
	// write), so a runs again; every job that starts must finish, and both
	// runs must succeed: nothing stays stuck in flight.
	done := func() bool { return runStatus(e, before) == "success" && runStatus(e, after) == "success" }
	again := false
	for {
		changed := e.Changed()
		if done() {
			break
		}
		select {
		case j := <-m.jobs:
			again = again || (j.TaskID == a.TaskID && j.Attempt > a.Attempt)
			m.finish(j, true)
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatalf("runs stuck after recovery: %s %s", runStatus(e, before), runStatus(e, after))
		}
	}
	if !again {
		t.Errorf("task %s, whose success was never recorded, did not run again", a.TaskID)
	}
}

// TestFailedRecoveryShowsOnlyDurableState: a recovery attempt while the
// disk is still full reopens the log and cannot record the interruption of
// the attempt whose outcome was lost; reads then show the durable state
// (the attempt running, as its dispatch left it), not the interruption that
// was never written, and the next attempt, with space back, records it and
// runs the task again.
func TestFailedRecoveryShowsOnlyDurableState(t *testing.T) {
	dir := t.TempDir()
	disk := newDiskFull()
	m := newManual(t, dir)
	e := openWithFault(t, dir, m, disk.fault)
	defer e.Close()
	put(t, e, diamond("process"))
	id := trigger(t, e, "diamond")
	a := m.next()
	status := func() string {
		v, err := e.Run(id)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range v.Tasks {
			if task.ID == a.TaskID {
				return fmt.Sprintf("%s attempt %d", task.Status, task.Attempt)
			}
		}
		t.Fatalf("task %s not in run %s", a.TaskID, id)
		return ""
	}
	settle(t, e) // a's task_started (deferred up to 10 ms) is durable: nothing else commits before the disk fills
	durable := status()
	nextFailure := func(what string) {
		t.Helper()
		select {
		case <-disk.failed:
		case <-time.After(10 * time.Second):
			t.Fatalf("no failed write: %s", what)
		}
	}

	disk.full.Store(true)
	m.finish(a, true) // its outcome cannot be recorded
	nextFailure("the task's outcome")
	waitFor(t, e, "fail-stop", func() bool { return e.Err() != nil }) // the recovery is armed
	retryRecovery(e)                                                  // still full: the interruption is not recorded
	nextFailure("the recovery's record of the interruption")
	if got := status(); got != durable { // waits for the recovery attempt to end
		t.Fatalf("after a failed recovery the task reads %q, durably %q", got, durable)
	}
	disk.full.Store(false)
	retryRecovery(e)
	waitFor(t, e, "recovery", func() bool { return e.Err() == nil })
	j := m.next()
	if j.TaskID != a.TaskID || j.Attempt != a.Attempt+1 {
		t.Fatalf("after recovery %s attempt %d started, want %s attempt %d", j.TaskID, j.Attempt, a.TaskID, a.Attempt+1)
	}
}

// TestRealDiskFull fills a tiny tmpfs. It needs root (mount); elsewhere it
// is skipped, and says so.
func TestRealDiskFull(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=512k"); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v): the injected ENOSPC test covers the logic", err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	e := openWithFault(t, dir, executors.Noop{}, nil)
	defer e.Close()
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 400<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	var err error
	var acked WorkflowView
	for versions := 0; versions < 200 && err == nil; versions++ {
		spec := diamond("noop") // 8 KiB per version; specs are immutable once put
		spec.Description = fmt.Sprintf("%08d", versions) + string(make([]byte, 8<<10))
		var w WorkflowView
		if w, _, err = e.PutWorkflow(spec, ""); err == nil {
			acked = w
		}
	}
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("after version %d: %v, want ENOSPC", acked.Version, err)
	}
	// About 100 KiB were free: less than the WAL's padding step, enough
	// for several versions (the WAL does without padding).
	if acked.Version < 5 {
		t.Fatalf("only %d versions acknowledged before the disk was full", acked.Version)
	}
	if w, _ := e.Workflow("diamond"); w.Version != acked.Version {
		t.Fatalf("read while failed shows version %d, last acknowledged %d", w.Version, acked.Version)
	}
	os.Remove(filler)
	retryRecovery(e)
	waitFor(t, e, "recovery after space is freed", func() bool { return e.Err() == nil })
	w, err := e.Workflow("diamond")
	if err != nil || w.Version < acked.Version {
		t.Fatalf("after recovery: version %d (%v), acknowledged %d", w.Version, err, acked.Version)
	}
	if _, err := e.Trigger("diamond", nil, "test"); err != nil {
		t.Fatalf("trigger after recovery: %v", err)
	}
}

// TestFsyncFailureDuringRecoveryIsFailStop: an in-process recovery from a
// full disk whose reopen's fsync fails, or whose record of the
// interruptions is written but not fsynced, must stop for good, as any
// failed fsync does (invariant 6): it must not reopen the log later, fsync
// it again and replay what the page cache holds (a frame whose fsync
// failed, which a power cut then turns into a hole before the frames
// acknowledged after it).
func TestFsyncFailureDuringRecoveryIsFailStop(t *testing.T) {
	for _, failing := range []wal.Op{wal.OpSync, wal.OpOpenSync} {
		t.Run(string(failing), func(t *testing.T) {
			dir := t.TempDir()
			disk := newDiskFull()
			var syncFails atomic.Bool
			var opens atomic.Int32
			failedSync := make(chan struct{}, 10)
			m := newManual(t, dir)
			e := openWithFault(t, dir, m, func(op wal.Op, index uint64) error {
				if op == wal.OpOpenSync {
					opens.Add(1)
				}
				if err := disk.fault(op, index); err != nil {
					return err
				}
				switch {
				case op == failing && syncFails.Load():
					failedSync <- struct{}{}
					return fmt.Errorf("injected: %w", syscall.EIO)
				}
				return nil
			})
			defer e.Close()
			put(t, e, diamond("process"))
			trigger(t, e, "diamond")
			a := m.next()

			disk.full.Store(true)
			m.finish(a, true) // its outcome cannot be recorded: the recovery will interrupt it
			waitFor(t, e, "fail-stop", func() bool { return e.Err() != nil })
			disk.full.Store(false)
			syncFails.Store(true)
			retryRecovery(e) // reopens; an fsync fails
			select {
			case <-failedSync:
			case <-time.After(10 * time.Second):
				t.Fatal("the recovery never reached the failing fsync")
			}
			// A command goes through the loop after the recovery attempt: a barrier.
			if _, err := e.Trigger("diamond", nil, "test"); !errors.Is(err, ErrUnavailable) {
				t.Fatalf("trigger after the recovery's fsync failed: %v, want ErrUnavailable", err)
			}
			syncFails.Store(false)
			before := opens.Load()
			retryRecovery(e) // the timer, if one was armed, fires before the next command
			_, err := e.Trigger("diamond", nil, "test")
			if !errors.Is(err, ErrUnavailable) {
				t.Errorf("trigger after a failed fsync: %v, want ErrUnavailable until a restart", err)
			}
			if n := opens.Load() - before; n != 0 {
				t.Errorf("the log was reopened (and fsynced) %d times after an fsync failed", n)
			}
			if !errors.Is(e.Err(), wal.ErrSync) {
				t.Errorf("Err() = %v, want the fsync failure", e.Err())
			}
		})
	}
}

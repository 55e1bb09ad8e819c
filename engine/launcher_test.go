package engine

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/wal"
)

// preparing is a manual executor that is also a Preparer: it records when
// each job was prepared, started or aborted.
type preparing struct {
	*manual
	prepared chan executors.Job // each Prepare
	aborted  chan executors.Job // each Abort
	started  atomic.Int32       // Starts of prepared jobs
}

func newPreparing(t *testing.T, dir string) *preparing {
	return &preparing{manual: newManual(t, dir), prepared: make(chan executors.Job, 10), aborted: make(chan executors.Job, 10)}
}

func (p *preparing) Prepare(job executors.Job) (executors.Prepared, error) {
	p.prepared <- job
	return &preparedJob{p: p, job: job}, nil
}

type preparedJob struct {
	p   *preparing
	job executors.Job
}

func (j *preparedJob) Start(report func(executors.Event)) (executors.Handle, error) {
	j.p.started.Add(1)
	return j.p.manual.Start(j.job, report) // asserts the dispatch is durable
}

func (j *preparedJob) Abort() { j.p.aborted <- j.job }

// TestPrepareOverlapsTheDispatchFsync: an executor that is a Preparer is
// asked to prepare a job while the frame that dispatches it is being
// fsynced, and to start it only once that fsync returned.
func TestPrepareOverlapsTheDispatchFsync(t *testing.T) {
	dir := t.TempDir()
	p := newPreparing(t, dir)
	var hold, synced atomic.Bool
	overlapped := make(chan bool, 1)
	e := openWithFault(t, dir, p, func(op wal.Op, _ uint64) error {
		if op != wal.OpSync || !hold.Load() {
			return nil
		}
		hold.Store(false)
		select { // the trigger's frame, which dispatches a: hold its fsync
		case <-p.prepared:
			overlapped <- p.started.Load() == 0
		case <-time.After(10 * time.Second):
			overlapped <- false
		}
		synced.Store(true)
		return nil
	})
	defer e.Close()
	put(t, e, diamond("process"))
	hold.Store(true)
	trigger(t, e, "diamond")
	if !<-overlapped {
		t.Fatal("the job was not prepared (or was started) while its dispatch frame was being fsynced")
	}
	j := p.next()
	if !synced.Load() || p.started.Load() != 1 || j.TaskName != "a" {
		t.Fatalf("started %s (%d starts) before its dispatch frame's fsync returned", j.TaskName, p.started.Load())
	}
}

// TestPreparedJobAbortedWhenDispatchFails: when the frame that dispatches a
// prepared job cannot be made durable, the job is aborted and never
// started.
func TestPreparedJobAbortedWhenDispatchFails(t *testing.T) {
	dir := t.TempDir()
	p := newPreparing(t, dir)
	var failing atomic.Bool
	e := openWithFault(t, dir, p, func(op wal.Op, _ uint64) error {
		if op == wal.OpSync && failing.Load() {
			return fmt.Errorf("injected: %w", syscall.EIO)
		}
		return nil
	})
	defer e.Close()
	put(t, e, diamond("process"))
	failing.Store(true)
	if _, err := e.Trigger("diamond", nil, "test"); err == nil {
		t.Fatal("trigger acknowledged though its frame failed")
	}
	select {
	case j := <-p.aborted:
		if j.TaskName != "a" {
			t.Fatalf("aborted %s, want a", j.TaskName)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the prepared job was not aborted")
	}
	e.launcher.wait()
	if n := p.started.Load(); n != 0 {
		t.Fatalf("%d prepared jobs started though their dispatch is not durable", n)
	}
}

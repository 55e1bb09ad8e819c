package engine

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay/workflow"
)

// unprepared fails the first fails starts as the process executor does on
// a full disk (a *executors.PrepareError), then hands jobs to m.
type unprepared struct {
	*manual
	mu    sync.Mutex
	fails int
}

func (u *unprepared) Start(job executors.Job, report func(executors.Event)) (executors.Handle, error) {
	u.mu.Lock()
	fail := u.fails > 0
	u.fails--
	u.mu.Unlock()
	if fail {
		return nil, fmt.Errorf("start task %s: %w", job.TaskID,
			&executors.PrepareError{Err: fmt.Errorf("write input: %w", &os.PathError{Op: "write", Path: job.Scratch, Err: syscall.ENOSPC})})
	}
	return u.manual.Start(job, report)
}

// TestUnpreparedAttemptRunsAgainWithoutSpendingRetries: an attempt the
// daemon could not prepare (a full disk: "write input: no space left on
// device") is not the task's failure. Before, it failed the task (no
// retries: the run failed for good, 159 of 11,555 acknowledged runs in 8 s
// of full disk). Now it runs again as the next attempt, after a backoff
// that doubles, spending no retry and counting no interruption, and the
// task says why it waits, in the API and in the attempt's log.
func TestUnpreparedAttemptRunsAgainWithoutSpendingRetries(t *testing.T) {
	dir := t.TempDir()
	u := &unprepared{manual: newManual(t, dir), fails: 2}
	e, clock := clocked(t, dir, u, 4)
	defer e.Close()
	put(t, e, one("w", func(*workflow.Task) {})) // retries: 0
	id := trigger(t, e, "w")
	for attempt, wait := 1, time.Second; attempt <= 2; attempt, wait = attempt+1, 2*wait {
		waitFor(t, e, "the unprepared attempt recorded", func() bool {
			tv := taskView(e, id, "t")
			return tv.Status == "pending" && tv.Attempt == attempt
		})
		tv := taskView(e, id, "t")
		if tv.Failures != 0 || tv.Interruptions != 0 {
			t.Fatalf("attempt %d not prepared: %d failures, %d interruptions, want none", attempt, tv.Failures, tv.Interruptions)
		}
		if !strings.Contains(tv.Error, "no space left on device") || len(tv.WaitingOn) != 1 ||
			!strings.Contains(tv.WaitingOn[0], "not started: the daemon could not prepare it") {
			t.Fatalf("attempt %d not prepared: error %q, waiting on %q: want why it waits", attempt, tv.Error, tv.WaitingOn)
		}
		if got := tv.NotBefore.Sub(clock.Now()); got != wait {
			t.Fatalf("attempt %d not prepared: runs again in %s, want %s (backoff)", attempt, got, wait)
		}
		log, _ := os.ReadFile(Layout(dir).AttemptLog(id, "t", attempt))
		if !strings.Contains(string(log), "[orkwal: attempt not started: the daemon could not prepare it: ") {
			t.Fatalf("attempt %d's log: %q, want why it did not start", attempt, log)
		}
		u.none()
		settle(t, e)
		advance(t, e, clock, wait)
	}
	j := u.next()
	if j.Attempt != 3 {
		t.Fatalf("attempt %d started, want 3", j.Attempt)
	}
	u.finish(j, true)
	waitFor(t, e, "run finished", finished(e, id))
	if s := runStatus(e, id); s != "success" {
		t.Fatalf("run %s, want success", s)
	}
}

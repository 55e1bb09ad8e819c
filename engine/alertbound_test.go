package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/executors/notify"
	"github.com/orkwal/orkwal/replay/workflow"
)

// failingExec fails every attempt at once.
type failingExec struct{}

func (failingExec) Start(job executors.Job, report func(executors.Event)) (executors.Handle, error) {
	report(executors.Event{Kind: executors.Started, TaskID: job.TaskID, Attempt: job.Attempt})
	go report(executors.Event{Kind: executors.Finished, TaskID: job.TaskID, Attempt: job.Attempt, ExitCode: 1, Err: "exit status 1"})
	return nopHandle{}, nil
}

// downSender is a target that is down: every send fails.
type downSender struct{ sends atomic.Int64 }

func (s *downSender) Send(context.Context, *workflow.Alert, *notify.Message) (int, error) {
	s.sends.Add(1)
	return 503, errors.New("503 Service Unavailable")
}

// TestAlertPendingCapPerTarget: a target that is down while 130 runs fail
// (the per-window throttle set out of the way) keeps at most 100
// deliveries pending (README, "Storms"); the 30 beyond are recorded as
// throttled, so the state does not grow with the failures.
func TestAlertPendingCapPerTarget(t *testing.T) {
	dir, clock := t.TempDir(), &fakeClock{}
	sender := &downSender{}
	e := openAlerting(t, dir, clock, failingExec{}, func(c *Config) {
		c.AlertThrottle, c.AlertSender = 10_000, sender
	})
	defer e.Close()
	spec := hookSpec("w", "http://127.0.0.1:9/hook", workflow.EventFailure)
	put(t, e, spec)
	const runs = 130
	triggerMany(t, e, "w", runs)
	count := func() (pending, throttled, other int) {
		for _, a := range e.Alerts(0) {
			switch a.Deliveries[0].Status {
			case "pending":
				pending++
			case "throttled":
				throttled++
			default:
				other++
			}
		}
		return
	}
	waitFor(t, e, "every run's alert", func() bool { p, th, o := count(); return p+th+o == runs })
	pending, throttled, other := count()
	e.mu.RLock()
	inState := e.state.PendingTo(spec.Alerts[0].Key())
	e.mu.RUnlock()
	if pending != maxPendingPerTarget || throttled != runs-maxPendingPerTarget || other != 0 || inState != maxPendingPerTarget {
		t.Fatalf("%d pending (state: %d), %d throttled, %d other; want %d pending, %d throttled",
			pending, inState, throttled, other, maxPendingPerTarget, runs-maxPendingPerTarget)
	}
	if sender.sends.Load() == 0 {
		t.Fatal("no send was tried")
	}
}

// TestAlertSlowReceiverDoesNotSlowTheLoop: a webhook that holds every
// request until the test releases it (and a send timeout of an hour, so
// nothing gives up on it meanwhile) does not hold the engine: while its
// first requests hang, 30 more runs are triggered and all succeed. Once
// released, every run's alert is delivered.
func TestAlertSlowReceiverDoesNotSlowTheLoop(t *testing.T) {
	dir, clock := t.TempDir(), &fakeClock{}
	rcv := newReceiver(t, nil)
	rcv.hold = make(chan struct{})
	e := openAlerting(t, dir, clock, executors.Noop{}, func(c *Config) {
		c.AlertThrottle = 10_000
		c.AlertSender = notify.New(notify.Config{Now: clock.Now, Timeout: time.Hour,
			Getenv: func(name string) string { return map[string]string{"HOOK_SECRET": hookSecret}[name] }})
	})
	t.Cleanup(func() { e.Close() })
	var release sync.Once
	t.Cleanup(func() { release.Do(func() { close(rcv.hold) }) }) // before the Close, if the test fails
	put(t, e, hookSpec("w", rcv.srv.URL, workflow.EventSuccess))
	first := trigger(t, e, "w")
	<-rcv.seen // the first alert's send reached the receiver, which holds it
	// Triggered beside the test, which waits with a deadline: a loop
	// stuck in a send would never answer them.
	var mu sync.Mutex
	ids, triggered := []string{first}, make(chan struct{})
	go func() {
		defer close(triggered)
		for range 30 {
			id, err := e.Trigger("w", nil, "test")
			if err != nil {
				t.Errorf("trigger: %v", err)
				return
			}
			mu.Lock()
			ids = append(ids, id)
			mu.Unlock()
		}
	}()
	select { // the last trigger may answer after the last commit: wait for it too
	case <-triggered:
	case <-time.After(10 * time.Second):
		t.Fatal("the triggers were not answered while the receiver holds its requests")
	}
	waitFor(t, e, "31 runs to succeed while the receiver holds its requests", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			if runStatus(e, id) != "success" {
				return false
			}
		}
		return len(ids) == 31
	})
	if n := len(rcv.deliveries()); n > maxAlertSends {
		t.Fatalf("%d requests in flight, want at most %d", n, maxAlertSends)
	}
	release.Do(func() { close(rcv.hold) })
	waitFor(t, e, "every alert delivered once released", func() bool {
		for _, id := range ids {
			if a := runAlerts(e, id); len(a) != 1 || a[0].Deliveries[0].Status != "delivered" {
				return false
			}
		}
		return true
	})
}

package engine

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/executors/notify"
	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
	"github.com/orkwal/orkwal/wal"
)

const hookSecret = "s3cret-key"

// receiver is a webhook on loopback: it answers 503 while down(), and
// keeps every request it got.
type receiver struct {
	t    *testing.T
	srv  *httptest.Server
	down func() bool
	hold chan struct{} // if set, a request waits for it to close before its answer

	mu   sync.Mutex
	got  []delivery
	seen chan struct{} // a request arrived (capacity 100)
}

type delivery struct {
	id, sig string
	body    notify.Payload
	raw     []byte
	status  int
}

func newReceiver(t *testing.T, down func() bool) *receiver {
	r := &receiver{t: t, down: down, seen: make(chan struct{}, 100)}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	raw, _ := io.ReadAll(req.Body)
	d := delivery{id: req.Header.Get("X-Orkwal-Alert-Id"), sig: req.Header.Get("X-Orkwal-Signature"), raw: raw, status: 200}
	json.Unmarshal(raw, &d.body)
	if r.down != nil && r.down() {
		d.status = http.StatusServiceUnavailable
	}
	r.mu.Lock()
	r.got = append(r.got, d)
	r.mu.Unlock()
	r.seen <- struct{}{}
	if r.hold != nil {
		<-r.hold
	}
	w.WriteHeader(d.status)
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// accepted returns the ids the receiver answered 2xx, checking on the way
// that every request was signed with the secret and carried its id in the
// header and the body.
func (r *receiver) accepted() map[string]int {
	r.t.Helper()
	ids := map[string]int{}
	for _, d := range r.deliveries() {
		if !notify.Verify([]byte(hookSecret), d.raw, d.sig) {
			r.t.Errorf("delivery of %s: signature %q does not verify", d.id, d.sig)
		}
		if d.id == "" || d.body.ID != d.id || d.body.Timestamp.IsZero() {
			r.t.Errorf("delivery: header id %q, body id %q, timestamp %v", d.id, d.body.ID, d.body.Timestamp)
		}
		if d.status == 200 {
			ids[d.id]++
		}
	}
	return ids
}

func hookSpec(name, url string, on ...string) *workflow.Spec {
	return &workflow.Spec{Name: name, Alerts: []*workflow.Alert{{On: on, Webhook: url, Secret: "${env:HOOK_SECRET}"}},
		Tasks: []*workflow.Task{{Name: "a", Executor: "process", Command: []string{"false"}}}}
}

func openAlerting(t *testing.T, dir string, clock *fakeClock, ex executors.Executor, tweak func(*Config)) *Engine {
	t.Helper()
	cfg := Config{DataDir: dir, Clock: clock, Logger: quiet, Rand: func() float64 { return 0.5 },
		Executors:    map[string]executors.Executor{"process": ex},
		AlertBaseURL: "http://127.0.0.1:7777",
		AlertSender: notify.New(notify.Config{Now: clock.Now,
			Getenv: func(name string) string { return map[string]string{"HOOK_SECRET": hookSecret}[name] }})}
	if tweak != nil {
		tweak(&cfg)
	}
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	return e
}

func runAlerts(e *Engine, id string) []AlertView {
	v, _ := e.Run(id)
	return v.Alerts
}

// settled: every delivery of the run's alerts is done, or failed and
// waits for a next try in the future (no send in flight).
func settled(e *Engine, id string, clock *fakeClock) func() bool {
	return func() bool {
		for _, a := range runAlerts(e, id) {
			for _, d := range a.Deliveries {
				if d.Status == "pending" && (d.NextTry == nil || !d.NextTry.After(clock.Now())) {
					return false
				}
			}
		}
		return true
	}
}

// nextTry is the earliest next try of the run's pending deliveries.
func nextTry(e *Engine, id string) (time.Time, bool) {
	var at time.Time
	for _, a := range runAlerts(e, id) {
		for _, d := range a.Deliveries {
			if d.Status == "pending" && (at.IsZero() || d.NextTry.Before(at)) {
				at = *d.NextTry
			}
		}
	}
	return at, !at.IsZero()
}

// TestAlertReceiverDownForAMinute: a task fails, is retried, fails again
// and its run fails; the webhook answers 503 for the first minute of the
// injected clock. Both alerts (retry, failure) are retried with
// exponential backoff (1 s, 2 s, 4 s, ... no real sleep) and arrive once
// the receiver is back, signed, each with its own stable id, the failure's
// body naming the failed task, its error and the run's page.
func TestAlertReceiverDownForAMinute(t *testing.T) {
	dir, clock := t.TempDir(), &fakeClock{}
	start := clock.Now()
	rcv := newReceiver(t, func() bool { return clock.Now().Sub(start) < time.Minute })
	m := newManual(t, dir)
	e := openAlerting(t, dir, clock, m, nil) // closed by sameAfterReplay
	spec := hookSpec("w", rcv.srv.URL+"/hook", workflow.EventFailure, workflow.EventRetry)
	spec.Tasks[0].Retries = 1
	put(t, e, spec)
	id := trigger(t, e, "w")
	m.finish(m.next(), false)
	waitFor(t, e, "the retry alert", func() bool { return len(runAlerts(e, id)) == 1 })
	clock.Advance(time.Second) // the task's retry backoff
	m.finish(m.next(), false)
	waitFor(t, e, "the run to fail", finished(e, id))
	var gaps []time.Duration
	for {
		waitFor(t, e, "the sends to settle", settled(e, id, clock))
		at, ok := nextTry(e, id)
		if !ok {
			break
		}
		gaps = append(gaps, at.Sub(clock.Now()))
		clock.Advance(at.Sub(clock.Now()))
	}
	t.Logf("waits between attempts: %v; delivered %v after the start", gaps, clock.Now().Sub(start))
	if len(gaps) < 6 || gaps[0] > 2*time.Second || clock.Now().Sub(start) > 3*time.Minute {
		t.Errorf("retries waited %v, ending %v after the start: want the first within seconds, doubling", gaps, clock.Now().Sub(start))
	}
	alerts := runAlerts(e, id)
	if len(alerts) != 2 || alerts[0].Event != "retry" || alerts[1].Event != "failure" {
		t.Fatalf("alerts: %+v", alerts)
	}
	ids := rcv.accepted()
	for _, a := range alerts {
		if d := a.Deliveries[0]; d.Status != "delivered" || d.Attempts < 6 || ids[a.ID] != 1 {
			t.Errorf("alert %s: %+v, accepted %d times", a.ID, d, ids[a.ID])
		}
	}
	var body notify.Payload
	for _, d := range rcv.deliveries() {
		if d.id == alerts[1].ID {
			body = d.body
		}
	}
	if body.Event != "failure" || body.Run == nil || body.Run.URL != "http://127.0.0.1:7777/ui/runs/"+id ||
		len(body.FailedTasks) != 1 || body.FailedTasks[0].Name != "a" || body.FailedTasks[0].Error != "exit status 1" {
		t.Errorf("failure body: %+v", body)
	}
	if st := e.Stats(); st.AlertsSent != 2 || st.AlertsFailed < 12 || st.AlertsRaised != 2 {
		t.Errorf("metrics: sent %d failed %d raised %d", st.AlertsSent, st.AlertsFailed, st.AlertsRaised)
	}
	sameAfterReplay(t, e, dir, clock, false)
}

// sameAfterReplay checks invariant 1 with alerts in the state: the live
// state's hash equals the state rebuilt from the WAL (crashed) or from the
// snapshot a clean shutdown writes.
func sameAfterReplay(t *testing.T, e *Engine, dir string, clock *fakeClock, clean bool) {
	t.Helper()
	live, err := e.StateHash()
	if err != nil {
		t.Fatal(err)
	}
	if clean {
		e.Close()
	} else {
		crash(e)
	}
	back := openAlerting(t, dir, clock, newManual(t, dir), nil)
	defer back.Close()
	if h, _ := back.StateHash(); h != live {
		t.Errorf("state after replay (clean shutdown: %v) differs from the live state", clean)
	}
}

// TestAlertRaisedInTheFailuresFrame: the alert_raised of a failed run is
// in the same WAL frame as the task_finished that failed it.
func TestAlertRaisedInTheFailuresFrame(t *testing.T) {
	dir, clock := t.TempDir(), &fakeClock{}
	rcv := newReceiver(t, nil)
	m := newManual(t, dir)
	e := openAlerting(t, dir, clock, m, nil)
	put(t, e, hookSpec("w", rcv.srv.URL, workflow.EventFailure))
	id := trigger(t, e, "w")
	m.finish(m.next(), false)
	waitFor(t, e, "the run to fail", finished(e, id))
	e.Close()
	finishedAt, raisedAt := uint64(0), uint64(0)
	wal.ReplayDir(filepath.Join(dir, "wal"), 1, func(index uint64, ps [][]byte) error {
		for _, p := range ps {
			switch r, _ := replay.Decode(p); r.(type) {
			case *replay.TaskFinished:
				finishedAt = index
			case *replay.AlertRaised:
				raisedAt = index
			}
		}
		return nil
	})
	if finishedAt == 0 || raisedAt != finishedAt {
		t.Fatalf("task_finished in frame %d, alert_raised in frame %d", finishedAt, raisedAt)
	}
}

// TestAlertSentAgainAfterACrash: the receiver got the alert, but the
// daemon died before recording the outcome. After boot the alert is sent
// again with the same id (a duplicate the receiver can drop), and then
// recorded delivered.
func TestAlertSentAgainAfterACrash(t *testing.T) {
	dir, clock := t.TempDir(), &fakeClock{}
	rcv := newReceiver(t, nil)
	rcv.hold = make(chan struct{})
	m := newManual(t, dir)
	e := openAlerting(t, dir, clock, m, nil)
	put(t, e, hookSpec("w", rcv.srv.URL, workflow.EventFailure))
	id := trigger(t, e, "w")
	m.finish(m.next(), false)
	<-rcv.seen // the first send reached the receiver, which holds its answer
	crash(e)
	close(rcv.hold)
	e = openAlerting(t, dir, clock, newManual(t, dir), nil)
	defer e.Close()
	waitFor(t, e, "delivered after the boot", func() bool {
		a := runAlerts(e, id)
		return len(a) == 1 && a[0].Deliveries[0].Status == "delivered"
	})
	got := rcv.deliveries()
	if len(got) != 2 || got[0].id != got[1].id || got[0].id != runAlerts(e, id)[0].ID {
		t.Fatalf("deliveries: %d, ids %v", len(got), got)
	}
	if ids := rcv.accepted(); ids[got[0].id] != 2 {
		t.Fatalf("accepted %v", ids)
	}
}

// TestAlertStormThrottled: with 2 alerts per window, 5 failed runs send 2
// alerts and hold 3 back; once the window has passed one summary tells of
// the 3. The state never holds more pending deliveries than allowed.
func TestAlertStormThrottled(t *testing.T) {
	dir, clock := t.TempDir(), &fakeClock{}
	rcv := newReceiver(t, nil)
	m := newManual(t, dir)
	e := openAlerting(t, dir, clock, m, func(c *Config) { c.AlertThrottle = 2 }) // closed by sameAfterReplay
	put(t, e, hookSpec("w", rcv.srv.URL, workflow.EventFailure))
	var ids []string
	for range 5 {
		id := trigger(t, e, "w")
		m.finish(m.next(), false)
		waitFor(t, e, "the run to fail", finished(e, id))
		ids = append(ids, id)
	}
	status := func(i int) string {
		a := runAlerts(e, ids[i])
		if len(a) != 1 {
			return "none"
		}
		return a[0].Deliveries[0].Status
	}
	waitFor(t, e, "two delivered", func() bool { return status(0) == "delivered" && status(1) == "delivered" })
	for i := 2; i < 5; i++ {
		if s := status(i); s != "throttled" {
			t.Fatalf("run %d: %s, want throttled", i, s)
		}
	}
	clock.Advance(DefaultAlertWindow)
	waitFor(t, e, "the summary", func() bool {
		return status(2) == "summarized" && status(3) == "summarized" && status(4) == "summarized" && len(e.Alerts(0)) == 6 &&
			e.Alerts(1)[0].Deliveries[0].Status == "delivered"
	})
	if sum := e.Alerts(1)[0]; sum.Event != "summary" || sum.Covers != 3 {
		t.Fatalf("summary: %+v", sum)
	}
	if got := rcv.accepted(); len(got) != 3 {
		t.Fatalf("the receiver got %v, want 2 alerts and a summary", got)
	}
	sameAfterReplay(t, e, dir, clock, true)
}

// TestAlertGivenUp: a receiver that never accepts is given up once the
// give-up time has passed, and the outcome is recorded.
func TestAlertGivenUp(t *testing.T) {
	dir, clock := t.TempDir(), &fakeClock{}
	rcv := newReceiver(t, func() bool { return true })
	m := newManual(t, dir)
	e := openAlerting(t, dir, clock, m, func(c *Config) { c.AlertGiveUp = 10 * time.Minute })
	defer e.Close()
	put(t, e, hookSpec("w", rcv.srv.URL, workflow.EventFailure))
	id := trigger(t, e, "w")
	m.finish(m.next(), false)
	waitFor(t, e, "the run to fail", finished(e, id))
	for {
		waitFor(t, e, "the sends to settle", settled(e, id, clock))
		at, ok := nextTry(e, id)
		if !ok {
			break
		}
		clock.Advance(at.Sub(clock.Now()))
	}
	d := runAlerts(e, id)[0].Deliveries[0]
	if d.Status != "given_up" || d.Code != 503 || d.Attempts < 5 || e.Stats().AlertsGivenUp != 1 {
		t.Fatalf("delivery: %+v", d)
	}
}

// TestSLAAlertOncePerRun: a run still running after its sla raises one
// sla alert, which a crash and a boot do not raise again.
func TestSLAAlertOncePerRun(t *testing.T) {
	dir, clock := t.TempDir(), &fakeClock{}
	rcv := newReceiver(t, nil)
	m := newManual(t, dir)
	e := openAlerting(t, dir, clock, m, nil)
	spec := hookSpec("w", rcv.srv.URL, workflow.EventSLA)
	spec.SLA = 30 * time.Minute
	put(t, e, spec)
	id := trigger(t, e, "w")
	m.next() // runs, and never ends
	clock.Advance(29 * time.Minute)
	if a := runAlerts(e, id); len(a) != 0 {
		t.Fatalf("alert before the sla: %+v", a)
	}
	clock.Advance(time.Minute)
	waitFor(t, e, "the sla alert delivered", func() bool {
		a := runAlerts(e, id)
		return len(a) == 1 && a[0].Event == "sla" && a[0].Deliveries[0].Status == "delivered"
	})
	crash(e)
	e = openAlerting(t, dir, clock, newManual(t, dir), nil)
	defer e.Close()
	clock.Advance(time.Hour)
	e.Trigger("w", nil, "test") // a turn after the advance
	if a := runAlerts(e, id); len(a) != 1 {
		t.Fatalf("alerts after the boot: %+v", a)
	}
}

// syncBuffer is a bytes.Buffer safe for the engine's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *syncBuffer) lines() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(s.b)), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// TestRunEventsInTheDaemonLog: the daemon's log has one structured line
// per run start and end and per task failure, with the run id, the
// workflow, the task, the attempt, the error and the duration.
func TestRunEventsInTheDaemonLog(t *testing.T) {
	dir, clock := t.TempDir(), &fakeClock{}
	var buf syncBuffer
	m := newManual(t, dir)
	e := openAlerting(t, dir, clock, m, func(c *Config) { c.Logger = slog.New(slog.NewJSONHandler(&buf, nil)) })
	put(t, e, hookSpec("w", "http://127.0.0.1:1/", workflow.EventSuccess))
	id := trigger(t, e, "w")
	j := m.next()
	clock.Advance(3 * time.Second)
	m.finish(j, false)
	waitFor(t, e, "the run to fail", finished(e, id))
	e.Close()
	want := map[string]func(map[string]any) bool{
		"run started": func(l map[string]any) bool { return l["run"] == id && l["workflow"] == "w" },
		"task failed": func(l map[string]any) bool {
			return l["run"] == id && l["workflow"] == "w" && l["task"] == "a" && l["attempt"] == 1.0 &&
				l["error"] == "exit status 1" && l["duration"] == float64(3*time.Second)
		},
		"run finished": func(l map[string]any) bool {
			return l["run"] == id && l["status"] == "failed" && l["duration"] == float64(3*time.Second)
		},
	}
	count := map[string]int{}
	for _, l := range buf.lines() {
		msg, _ := l["msg"].(string)
		if check, ok := want[msg]; ok {
			count[msg]++
			if !check(l) {
				t.Errorf("%s: %v", msg, l)
			}
		}
	}
	for msg := range want {
		if count[msg] != 1 {
			t.Errorf("%q logged %d times, want once", msg, count[msg])
		}
	}
}

// TestAlertTimersSleepWhileTheWALIsFailed: with the WAL failed, alert
// timers are not handled, so a due one must not wake the loop (it would
// spin); once the WAL has recovered, the pending delivery is sent.
//
// The recovery waits longer than the clock moves before the check: with
// the default backoff (1 s) the minute that makes the alert's next try due
// made the recovery due too, and the loop could recover (nothing to write)
// before the check took the lock, which then saw a live WAL and the due
// alert (failed once under heavy load). The check now asserts that the WAL
// is still failed.
func TestAlertTimersSleepWhileTheWALIsFailed(t *testing.T) {
	dir, clock := t.TempDir(), &fakeClock{}
	start := clock.Now()
	rcv := newReceiver(t, func() bool { return clock.Now().Sub(start) < 10*time.Second })
	disk := newDiskFull()
	m := newManual(t, dir)
	const recoveryBackoff = time.Hour
	e := openAlerting(t, dir, clock, m, func(c *Config) { c.WALFault, c.RecoveryBackoff = disk.fault, recoveryBackoff })
	defer e.Close()
	put(t, e, hookSpec("w", rcv.srv.URL, workflow.EventFailure))
	id := trigger(t, e, "w")
	m.finish(m.next(), false)
	waitFor(t, e, "the first attempt to fail", func() bool {
		a := runAlerts(e, id)
		return len(a) == 1 && a[0].Deliveries[0].Attempts == 1
	})
	disk.full.Store(true)
	if _, err := e.Trigger("w", nil, "test"); err == nil {
		t.Fatal("a trigger on a full disk succeeded")
	}
	clock.Advance(time.Minute) // the next try is due, the WAL is failed (its recovery is not due)
	e.mu.Lock()
	wake := e.nextWake(0)
	failed, recoveries := e.poison.Load() != nil, e.metrics.diskRecoveries
	e.mu.Unlock()
	if !failed || recoveries != 0 {
		t.Fatalf("the WAL is not failed at the check (failed %v, %d recoveries): the check would prove nothing", failed, recoveries)
	}
	if wake != 0 && wake <= clock.Now().UnixNano() {
		t.Fatalf("a due alert timer wakes the loop (at %v) while the WAL is failed", time.Unix(0, wake))
	}
	disk.full.Store(false)
	clock.Advance(recoveryBackoff) // the recovery is due
	waitFor(t, e, "delivered after the recovery", func() bool {
		return runAlerts(e, id)[0].Deliveries[0].Status == "delivered"
	})
}

// jumpyClock moves itself 1 s forward at every read of Now, as a test
// moving the clock between the loop's reading of the time and its arming
// of a timer does.
type jumpyClock struct{ *fakeClock }

func (c jumpyClock) Now() time.Time {
	now := c.fakeClock.Now()
	c.fakeClock.Advance(time.Second)
	return now
}

// TestWakeArmedForItsInstant: the loop's wake-up is armed for the instant
// it is due, whatever the clock did meanwhile: a test that moves the clock
// to that instant wakes the loop (with After(due - Now()), the wake-up
// came a second late here, and a test waiting at that instant waited for
// good).
func TestWakeArmedForItsInstant(t *testing.T) {
	c := jumpyClock{&fakeClock{}}
	due := c.fakeClock.Now().Add(10 * time.Second)
	ch := atInstant(c, due.UnixNano())
	c.fakeClock.Advance(due.Sub(c.fakeClock.Now()))
	select {
	case <-ch:
	default:
		t.Fatal("the wake-up did not fire at its instant")
	}
}

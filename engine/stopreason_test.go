package engine

import (
	"testing"
	"time"

	"github.com/orkwal/orkwal/replay/workflow"
)

// TestStopReasons: every stop the engine asks of an executor says why, for
// the attempt's log to end with it (see executors.Handle).
func TestStopReasons(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	m.stops = make(chan string, 8)
	e, clock := clocked(t, dir, m, 4)
	closing := false
	defer func() {
		if !closing {
			e.Close()
		}
	}()
	stopped := func(want string) {
		t.Helper()
		select {
		case got := <-m.stops:
			if got != want {
				t.Fatalf("stop reason %q, want %q", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no stop (want %q)", want)
		}
	}
	put(t, e, one("timeout", func(tk *workflow.Task) { tk.Timeout = 30 * time.Second }))
	id := trigger(t, e, "timeout")
	m.next()
	waitFor(t, e, "running", func() bool { return taskView(e, id, "t").Status == "running" })
	advance(t, e, clock, 30*time.Second)
	stopped("timeout after 30s")

	put(t, e, one("beat", func(tk *workflow.Task) { tk.HeartbeatTimeout = 10 * time.Second }))
	id = trigger(t, e, "beat")
	m.next()
	waitFor(t, e, "running", func() bool { return taskView(e, id, "t").Status == "running" })
	advance(t, e, clock, 11*time.Second)
	stopped("heartbeat timeout (none for 10s)")

	put(t, e, one("cancel", func(*workflow.Task) {}))
	id = trigger(t, e, "cancel")
	m.next()
	waitFor(t, e, "running", func() bool { return taskView(e, id, "t").Status == "running" })
	if _, err := e.CancelRun(id); err != nil {
		t.Fatal(err)
	}
	stopped("cancelled")

	id = trigger(t, e, "cancel")
	m.next()
	waitFor(t, e, "running", func() bool { return taskView(e, id, "t").Status == "running" })
	closing = true
	closed := make(chan error, 1)
	go func() { closed <- e.Close() }()
	stopped("attempt interrupted: the daemon stopped")
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

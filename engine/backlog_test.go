package engine

import (
	"sync"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors"

	"github.com/orkwal/orkwal/replay/workflow"
)

// backlog is how many runs wait in TestDispatchLooksAtNoBacklog: a scan of
// them in every turn would look at this many tasks per turn.
const backlog = 2000

// TestDispatchLooksAtNoBacklog: a turn's dispatch looks at the tasks it
// can dispatch and a few others, never at every task waiting behind a
// gate (issue 21: bursts into a backlog got slower with its size). For
// each gate, backlog runs wait behind it; then 20 more triggers (or 20
// instances ending, for a fan-out's concurrency) may look at no more than
// 4 tasks each.
func TestDispatchLooksAtNoBacklog(t *testing.T) {
	hold := func(tk *workflow.Task) { tk.Executor = "process" } // the manual executor: runs until told
	shapes := []struct {
		name string
		spec *workflow.Spec
		runs int // runs triggered first
	}{
		{"delay", one("w", func(tk *workflow.Task) { tk.Executor, tk.Delay = "noop", time.Hour }), backlog},
		{"max_active_runs", func() *workflow.Spec { s := one("w", hold); s.MaxActiveRuns = 1; return s }(), backlog},
		{"mutex", one("w", func(tk *workflow.Task) { hold(tk); tk.Mutex = "m" }), backlog},
		{"concurrency", one("w", func(tk *workflow.Task) { hold(tk); tk.Parallel, tk.Concurrency = backlog, 1 }), 1},
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			dir := t.TempDir()
			m := newManual(t, dir)
			e, _ := clocked(t, dir, m, 16)
			defer e.Close()
			put(t, e, sh.spec)
			triggerMany(t, e, "w", sh.runs)
			var cur executors.Job
			if sh.name != "delay" {
				cur = m.next() // the one that holds the gate
			}
			e.mu.RLock()
			ready := e.state.ReadyCount()
			e.mu.RUnlock()
			if ready < backlog-1 {
				t.Fatalf("%d tasks ready, want the backlog of %d", ready, backlog-1)
			}
			before := e.looked.Load()
			for i := 0; i < 20; i++ {
				if sh.name == "concurrency" { // the next instance starts in the turn of the finish
					m.finish(cur, true)
					cur = m.next()
				} else if _, err := e.Trigger("w", nil, "test"); err != nil {
					t.Fatal(err)
				}
			}
			if n := e.looked.Load() - before; n > 20*4 {
				t.Fatalf("20 turns looked at %d ready tasks with %d waiting behind the gate: a scan", n, backlog)
			}
			m.none()
		})
	}
}

// triggerMany triggers n runs of wf from 32 goroutines.
func triggerMany(t testing.TB, e *Engine, wf string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	per := (n + 31) / 32
	for c := 0; c < n; c += per {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			for ; k > 0; k-- {
				if _, err := e.Trigger(wf, nil, "test"); err != nil {
					errs <- err
				}
			}
		}(min(per, n-c))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

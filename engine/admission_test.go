package engine

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay/workflow"
)

func openBounded(t *testing.T, dir string, clock *fakeClock, total, perWorkflow int) *Engine {
	t.Helper()
	e, err := Open(Config{DataDir: dir, Clock: clock, Logger: quiet, MaxPendingRuns: total, MaxPendingRunsPerWorkflow: perWorkflow,
		Executors: map[string]executors.Executor{"process": executors.Noop{}, "noop": executors.Noop{}}})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	return e
}

// waiting is a workflow whose runs stay pending for an hour.
func waiting(name string) *workflow.Spec {
	return one(name, func(tk *workflow.Task) { tk.Executor, tk.Delay = "noop", time.Hour })
}

// TestAdmissionBoundsPendingRuns: with 5 pending runs at most, 3 per
// workflow, the next trigger of a full workflow, then any trigger once 5
// are pending, is refused with an OverloadError naming the bound, writing
// nothing; a replayed idempotency key still answers its run; a run that
// ends makes room; a retry is a new pending run too.
func TestAdmissionBoundsPendingRuns(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{}
	e := openBounded(t, dir, clock, 5, 3)
	defer e.Close()
	put(t, e, waiting("a"))
	put(t, e, waiting("b"))
	first, _, err := e.TriggerIdempotent("a", nil, "test", "key-1")
	if err != nil {
		t.Fatal(err)
	}
	trigger(t, e, "a")
	trigger(t, e, "a")
	refused := func(wf, want string) {
		t.Helper()
		before := e.wal.LastIndex()
		_, err := e.Trigger(wf, nil, "test")
		var full *OverloadError
		if !errors.Is(err, ErrOverloaded) || !errors.As(err, &full) || full.RetryAfter <= 0 || !strings.Contains(err.Error(), want) {
			t.Fatalf("trigger of %s: %v, want an OverloadError saying %q", wf, err, want)
		}
		if e.wal.LastIndex() != before {
			t.Fatalf("a refused trigger wrote to the log")
		}
	}
	refused("a", "workflow a has 3 pending runs, its limit (--max-pending-runs-per-workflow) is 3")
	if id, created, err := e.TriggerIdempotent("a", nil, "test", "key-1"); err != nil || created || id != first {
		t.Fatalf("replayed key while full: %s %v %v, want run %s", id, created, err, first)
	}
	trigger(t, e, "b")
	trigger(t, e, "b")
	refused("b", "5 pending runs, the limit (--max-pending-runs) is 5")
	if _, err := e.CancelRun(first); err != nil {
		t.Fatal(err)
	}
	trigger(t, e, "b") // the cancel made room
	if _, err := e.RetryRun(first); !errors.Is(err, ErrOverloaded) {
		t.Fatalf("retry while full: %v, want ErrOverloaded", err)
	}
	if st := e.Stats(); st.RunsRefused != 3 || st.PendingRuns != 5 || st.PendingRunsByWorkflow["b"] != 3 || st.MaxPendingRuns != 5 {
		t.Fatalf("stats: refused %d, pending %d (b %d), limit %d; want 3, 5 (3), 5", st.RunsRefused, st.PendingRuns, st.PendingRunsByWorkflow["b"], st.MaxPendingRuns)
	}
}

// TestAdmissionSkipsCronFires: a fire due while its workflow is full is
// recorded as skipped, saying why, and makes no run; the next fire, once
// there is room, runs.
func TestAdmissionSkipsCronFires(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{}
	e := openBounded(t, dir, clock, 100, 1)
	defer e.Close()
	s := cronSpec("c", "*/5 * * * *", "", "allow")
	s.Tasks[0].Executor, s.Tasks[0].Delay = "noop", time.Hour
	put(t, e, s)
	run := trigger(t, e, "c")
	clock.Advance(nextFire(t, e, "c").Sub(clock.Now()))
	waitFor(t, e, "the fire", func() bool {
		w, _ := e.Workflow("c")
		return len(w.Schedule.Fires) == 1
	})
	w, _ := e.Workflow("c")
	if f := w.Schedule.Fires[0]; f.RunID != "" || !strings.Contains(f.Skipped, "admission: workflow c has 1 pending runs") {
		t.Fatalf("fire while full: %+v, want skipped by admission", f)
	}
	if _, err := e.CancelRun(run); err != nil {
		t.Fatal(err)
	}
	clock.Advance(nextFire(t, e, "c").Sub(clock.Now()))
	waitFor(t, e, "the next fire", func() bool { return len(cronRuns(e, "c")) == 2 })
}

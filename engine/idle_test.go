package engine

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/orkwal/orkwal/executors"
)

// TestIdleEngineDoesNotWake: in a synctest bubble, fake time only advances
// when every goroutine is durably blocked. A loop with a ticker or a poll
// interval would take turns during the hour below; an event-driven one
// takes none.
func TestIdleEngineDoesNotWake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, err := Open(Config{DataDir: t.TempDir(), Logger: quiet, Clock: &fakeClock{},
			Executors: map[string]executors.Executor{"noop": executors.Noop{}}})
		if err != nil {
			t.Fatal(err)
		}
		e.Start()
		put(t, e, diamond("noop"))
		id := trigger(t, e, "diamond")
		synctest.Wait()
		if s := runStatus(e, id); s != "success" {
			t.Fatalf("run %s, want success", s)
		}
		before := e.turns.Load()
		time.Sleep(time.Hour)
		synctest.Wait()
		if after := e.turns.Load(); after != before {
			t.Fatalf("an idle engine took %d turns in an hour", after-before)
		}
		// And it still reacts at once to new work.
		id = trigger(t, e, "diamond")
		synctest.Wait()
		if s := runStatus(e, id); s != "success" {
			t.Fatalf("run after idling %s, want success", s)
		}
		e.Close()
	})
}

// copyUnits is the number of runs and tasks a snapshot begun now copies:
// the steps it takes with a budget of 1.
func copyUnits(e *Engine) int64 {
	e.mu.RLock()
	defer e.mu.RUnlock()
	n := int64(len(e.state.RunList))
	for _, r := range e.state.RunList {
		n += int64(len(r.Tasks))
	}
	return n
}

// TestIdleEngineFinishesACopyThenSleeps: a snapshot whose copy is begun by
// the last turn before the engine idles is copied by the loop without any
// event (one step per pass, taking no turn), then written; after that the
// engine takes no turn and no step.
func TestIdleEngineFinishesACopyThenSleeps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		e, err := Open(Config{DataDir: dir, Logger: quiet, Clock: &fakeClock{}, CompactBytes: 1,
			Executors: map[string]executors.Executor{"noop": executors.Noop{}, "process": executors.Noop{}}})
		if err != nil {
			t.Fatal(err)
		}
		e.stepBudget = 1 // one run or task a step: many passes
		e.Start()
		put(t, e, diamond("noop"))
		for i := 0; i < 3; i++ {
			trigger(t, e, "diamond")
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		// Every compaction so far is complete: one starts with the next
		// append.
		turns, steps, compactions := e.turns.Load(), e.copySteps.Load(), e.compactions.Load()
		units := copyUnits(e)
		if units < 15 {
			t.Fatalf("%d runs and tasks, want the 3 runs of 4 tasks", units)
		}
		put(t, e, flat("other", 1)) // one turn: appends, begins a snapshot, copies one step
		synctest.Wait()
		if got := e.turns.Load() - turns; got != 1 {
			t.Fatalf("the copy took %d turns, want only the put's", got)
		}
		if got := e.copySteps.Load() - steps; got != units {
			t.Fatalf("%d copy steps, want %d (one per run and task)", got, units)
		}
		if got := e.compactions.Load() - compactions; got != 1 {
			t.Fatalf("%d compactions ended after the put, want 1: an idle loop left the copy", got)
		}
		if idxs, _ := snapshotIndexes(dir); len(idxs) == 0 || idxs[0] != e.wal.LastIndex() {
			t.Fatalf("snapshots %v, want one at the last index %d", idxs, e.wal.LastIndex())
		}
		turns, steps = e.turns.Load(), e.copySteps.Load()
		time.Sleep(time.Hour)
		synctest.Wait()
		if dt, ds := e.turns.Load()-turns, e.copySteps.Load()-steps; dt != 0 || ds != 0 {
			t.Fatalf("an idle engine took %d turns and %d copy steps in an hour after its copy", dt, ds)
		}
		e.Close()
	})
}

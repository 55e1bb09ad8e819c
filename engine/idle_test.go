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

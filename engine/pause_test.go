package engine

import (
	"errors"
	"strings"
	"testing"
)

// TestPauseRunAndTask: a paused run's running attempt finishes and nothing
// new is dispatched, and the pause survives a restart; a resume dispatches
// what waited except a paused task, which waits for its own resume.
func TestPauseRunAndTask(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e := openEngine(t, dir, m, 4)
	put(t, e, diamond("process"))
	id := trigger(t, e, "diamond")
	ja := m.next()
	if v, err := e.PauseRun(id, "", true); err != nil || !v.Paused {
		t.Fatalf("pause: %v, paused %v", err, v.Paused)
	}
	if _, err := e.PauseRun(id, "a", true); !errors.Is(err, ErrConflict) {
		t.Fatalf("pausing a running task: %v, want a conflict", err)
	}
	if _, err := e.PauseRun(id, "c", true); err != nil {
		t.Fatal(err)
	}
	m.finish(ja, true)
	waitFor(t, e, "a success", func() bool { return taskView(e, id, "a").Status == "success" })
	settle(t, e)
	m.none()
	if w := taskView(e, id, "b").WaitingOn; len(w) != 1 || !strings.HasPrefix(w[0], "paused") {
		t.Fatalf("b waits on %v, want paused", w)
	}
	e.Close()

	m = newManual(t, dir)
	e = openEngine(t, dir, m, 4)
	defer e.Close()
	if v, _ := e.Run(id); !v.Paused || !taskView(e, id, "c").Paused || taskView(e, id, "b").Paused {
		t.Fatalf("after a restart: run paused %v, c paused %v", v.Paused, taskView(e, id, "c").Paused)
	}
	settle(t, e)
	m.none()
	if _, err := e.PauseRun(id, "", false); err != nil {
		t.Fatal(err)
	}
	if jb := m.next(); jb.TaskName != "b" {
		t.Fatalf("after the resume %s started, want b (c is paused)", jb.TaskName)
	} else {
		m.finish(jb, true)
	}
	settle(t, e)
	m.none()
	if _, err := e.PauseRun(id, "c", false); err != nil {
		t.Fatal(err)
	}
	m.finish(m.next(), true) // c
	m.finish(m.next(), true) // d
	waitFor(t, e, "success", finished(e, id))
	if _, err := e.PauseRun(id, "", true); !errors.Is(err, ErrConflict) {
		t.Fatalf("pausing an ended run: %v, want a conflict", err)
	}
}

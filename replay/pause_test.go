package replay

import (
	"errors"
	"fmt"
	"testing"
)

// TestPauseRunAndTask: a paused run dispatches nothing new (its ready
// tasks leave the queue, a task released while it is paused waits) while
// its running attempt ends; a paused task waits while the run goes on;
// resumes put them back; pauses survive a snapshot; ended tasks and runs
// refuse them.
func TestPauseRunAndTask(t *testing.T) {
	s := New()
	run := run1(s, t) // diamond: a → (b, c) → d
	a := TaskRef{Run: "r1", Task: 0}
	mustApply(t, s, &TaskDispatched{TaskRef: a, Attempt: 1, At: 2})
	mustApply(t, s, &RunPaused{Run: "r1", Task: -1, Paused: true, At: 3})
	mustApply(t, s, &TaskFinished{TaskRef: a, Attempt: 1, OK: true, At: 4})
	if got := readyNames(s); len(got) != 0 || run.Tasks[0].Status != Success {
		t.Fatalf("paused run after a ended: ready %v, %s", got, statuses(run))
	}
	mustApply(t, s, &RunPaused{Run: "r1", Task: 2, Paused: true, At: 5}) // c
	for _, incremental := range []bool{false, true} {
		var snap *Snapshot
		if incremental {
			snap = s.BeginSnapshot(5)
			complete(t, snap, 1)
		} else {
			snap = s.Snapshot(5)
		}
		back := restoreSnap(t, snap)
		if r := back.Runs["r1"]; !r.Paused || !r.Tasks[2].Paused || r.Tasks[1].Paused || len(readyNames(back)) != 0 {
			t.Fatalf("incremental=%v: restored pauses: run %v, c %v, b %v, ready %v", incremental, r.Paused, r.Tasks[2].Paused, r.Tasks[1].Paused, readyNames(back))
		}
	}
	mustApply(t, s, &RunPaused{Run: "r1", Task: -1, At: 6})
	if got := fmt.Sprint(readyNames(s)); got != "[r1/b]" {
		t.Fatalf("after the run's resume, c still paused: ready %s, want [r1/b]", got)
	}
	mustApply(t, s, &RunPaused{Run: "r1", Task: 2, At: 7})
	if got := fmt.Sprint(readyNames(s)); got != "[r1/b r1/c]" {
		t.Fatalf("after c's resume: ready %s, want [r1/b r1/c]", got)
	}
	if err := s.Apply(&RunPaused{Run: "r1", Task: 0, Paused: true, At: 8}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("pausing a task that ended: %v", err)
	}
	mustApply(t, s, &RunPaused{Run: "r1", Task: 3, Paused: true, At: 8}, &RunCancelRequested{ID: "r1", At: 9})
	if run.Status != RunCancelled || run.Paused || run.Tasks[3].Paused || !run.Tasks[3].Status.Terminal() {
		t.Fatalf("a cancel of a run with a paused task: run %s paused %v, %s", run.Status, run.Paused, statuses(run))
	}
	if err := s.Apply(&RunPaused{Run: "r1", Task: -1, Paused: true, At: 10}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("pausing a run that ended: %v", err)
	}
}

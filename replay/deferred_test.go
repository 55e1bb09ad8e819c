package replay

import (
	"errors"
	"testing"
)

// TestTaskDeferred: task_deferred keeps a running attempt's output and
// marks it deferred, which a snapshot keeps (full and incremental) and
// its task_finished clears; it is refused on an attempt not running, and
// twice.
func TestTaskDeferred(t *testing.T) {
	s := New()
	run1(s, t)
	a := TaskRef{Run: "r1", Task: 0}
	out := []byte(`{"deferred":[{"service_type":"custom_http","url":"mock://success"}]}`)
	mustApply(t, s, &TaskDispatched{TaskRef: a, Attempt: 1, At: 10})
	if err := s.Apply(&TaskDeferred{TaskRef: a, Attempt: 1, Output: out, At: 11}); !errors.Is(err, ErrInvalid) {
		t.Errorf("deferred while dispatched: %v", err)
	}
	mustApply(t, s, &TaskStarted{TaskRef: a, Attempt: 1, PID: 42, At: 11}, &TaskDeferred{TaskRef: a, Attempt: 1, Output: out, At: 12})
	if err := s.Apply(&TaskDeferred{TaskRef: a, Attempt: 1, Output: out, At: 13}); !errors.Is(err, ErrInvalid) {
		t.Errorf("deferred twice: %v", err)
	}
	for _, incremental := range []bool{false, true} {
		var snap *Snapshot
		if incremental {
			snap = s.BeginSnapshot(4)
			complete(t, snap, 1)
		} else {
			snap = s.Snapshot(4)
		}
		back := restoreSnap(t, snap)
		bt := back.Runs["r1"].Tasks[0]
		if !bt.Deferred || bt.Status != Running || string(bt.Output) != string(out) || bt.PID != 0 {
			t.Errorf("incremental=%v: restored task: deferred %v, %s, output %s, pid %d", incremental, bt.Deferred, bt.Status, bt.Output, bt.PID)
		}
		h1, _ := s.Hash()
		if h2, _ := back.Hash(); h1 != h2 {
			t.Errorf("incremental=%v: restored state's hash differs from the live state's", incremental)
		}
	}
	mustApply(t, s, &TaskFinished{TaskRef: a, Attempt: 1, OK: true, Output: out, At: 20})
	if task := s.Runs["r1"].Tasks[0]; task.Deferred || task.Status != Success {
		t.Errorf("after task_finished: deferred %v, %s", task.Deferred, task.Status)
	}
}

package executors

import (
	"testing"
	"time"
)

var _ Executor = Noop{}

func TestNoopReportsStartedThenFinishedBeforeReturning(t *testing.T) {
	t.Parallel()
	var events []Event // report runs inside Start: no lock needed
	job := Job{TaskID: "t1", Attempt: 2}
	h, err := Noop{}.Start(job, func(ev Event) { events = append(events, ev) })
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if len(events) != 2 {
		t.Fatalf("got %d events before Start returned, want 2: %+v", len(events), events)
	}
	started, finished := events[0], events[1]
	if started.Kind != Started || started.PID != 0 || started.TaskID != "t1" || started.Attempt != 2 {
		t.Errorf("first event = %+v, want Started with PID 0 for t1/2", started)
	}
	if finished.Kind != Finished || !finished.OK || finished.ExitCode != 0 || finished.Err != "" ||
		finished.TaskID != "t1" || finished.Attempt != 2 {
		t.Errorf("second event = %+v, want Finished OK for t1/2", finished)
	}
	h.Stop(time.Second, "stopped by the test")
	h.Stop(0, "stopped by the test")
	if len(events) != 2 {
		t.Errorf("Stop reported events: %+v", events[2:])
	}
}

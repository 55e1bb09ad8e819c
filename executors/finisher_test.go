package executors

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestFinisherReusesItsWorker: work handed over one at a time (each once
// the one before is done and its worker parked) runs on one worker,
// started once, not on a goroutine each.
func TestFinisherReusesItsWorker(t *testing.T) {
	f := newFinisher(2)
	parked := make(chan struct{}, 1)
	f.parking = func() { parked <- struct{}{} }
	done := make(chan int, 1)
	for i := range 50 {
		f.run(func() { done <- i })
		if got := <-done; got != i {
			t.Fatalf("work %d ran as %d", i, got)
		}
		<-parked
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started != 1 {
		t.Errorf("%d workers started for 50 works one after another, want 1", f.started)
	}
}

// TestFinisherNeverWaitsBehindABlockedWork: work handed over while every
// worker is busy (a report that blocks) runs at once on another.
func TestFinisherNeverWaitsBehindABlockedWork(t *testing.T) {
	f := newFinisher(1)
	release := make(chan struct{})
	var blocked sync.WaitGroup
	for range 3 {
		blocked.Add(1)
		f.run(func() { blocked.Done(); <-release })
	}
	blocked.Wait() // three workers, each blocked
	ran := make(chan struct{})
	f.run(func() { close(ran) })
	<-ran // with only the blocked workers, this would never come
	close(release)
}

// TestFinisherKeepsFewParked: after a burst, at most keepIdle workers stay
// parked; the others end.
func TestFinisherKeepsFewParked(t *testing.T) {
	f := newFinisher(2)
	parked := make(chan struct{}, 6)
	f.parking = func() { parked <- struct{}{} }
	release := make(chan struct{})
	var blocked, ended sync.WaitGroup
	for range 6 {
		blocked.Add(1)
		ended.Add(1)
		f.run(func() { blocked.Done(); <-release; ended.Done() })
	}
	blocked.Wait()
	close(release)
	ended.Wait()
	// The workers then park or end: wait for the two that park (the
	// others end without parking).
	<-parked
	<-parked
	f.mu.Lock()
	n, started := f.parked, f.started
	f.mu.Unlock()
	if n != 2 {
		t.Errorf("%d workers parked, want keepIdle, 2", n)
	}
	if started < 6 {
		t.Errorf("%d workers started for 6 blocked works, want 6", started)
	}
}

// endedProc is a proc that exited with status 0, for finishBatch: its
// report sends its Finished to events.
func endedProc(name string, events chan<- Event) *proc {
	return &proc{pid: -1, pidfd: -1, pipe: -1, exit: &procExit{}, fin: finishInfo{taskID: name},
		report: func(ev Event) { events <- ev }}
}

// TestFinishBatchFinishesTheLastItself: of the exits a batch ended, the
// last is finished (its Finished reported) on the loop's goroutine before
// finishBatch returns, the others on finishing goroutines; a lone exit
// starts no finishing goroutine.
func TestFinishBatchFinishesTheLastItself(t *testing.T) {
	r := handDrivenReactor(t)
	events := make(chan Event, 3)
	// reported checks that name's Finished was reported by the time
	// finishBatch returned.
	reported := func(name string) {
		t.Helper()
		select {
		case ev := <-events:
			if ev.TaskID != name {
				t.Fatalf("finished %s, want %s", ev.TaskID, name)
			}
		default:
			t.Fatalf("%s not finished when finishBatch returned", name)
		}
	}
	r.finish(endedProc("lone", events))
	r.finishBatch()
	reported("lone")
	if r.finisher.started != 0 {
		t.Fatalf("%d finishing goroutines for a lone exit, want none", r.finisher.started)
	}
	// a and b report only once the gate opens: the last must not wait
	// behind them.
	gate := make(chan struct{})
	for _, name := range []string{"a", "b"} {
		p := endedProc(name, events)
		p.report = func(ev Event) { <-gate; events <- ev }
		r.finish(p)
	}
	r.finish(endedProc("last", events))
	r.finishBatch()
	reported("last")
	close(gate)
	got := map[string]bool{}
	for range 2 {
		select {
		case ev := <-events:
			got[ev.TaskID] = true
		case <-time.After(guard):
			t.Fatal("the batch's other exits not finished")
		}
	}
	if !got["a"] || !got["b"] || len(r.ended) != 0 {
		t.Errorf("finished %v, %d still queued; want a and b, none", got, len(r.ended))
	}
}

// TestReactorTakesOverFromABlockedReport: while the loop's goroutine
// finishes an exit itself and its report blocks, the standby goroutine
// takes the loop over once another exit is ready: that one is reaped and
// reported meanwhile. The test's reactor, and its goroutines, are left
// running.
func TestReactorTakesOverFromABlockedReport(t *testing.T) {
	t.Parallel()
	r, err := newReactor()
	if err != nil {
		t.Skip("no reactor on this system:", err)
	}
	blocked, release := make(chan struct{}), make(chan struct{})
	finished := make(chan string, 2)
	watch := func(name string, report func(Event)) { watchExit(t, r, name, report) }
	watch("blocks", func(ev Event) {
		close(blocked)
		<-release
		finished <- ev.TaskID
	})
	select {
	case <-blocked:
	case <-time.After(guard):
		t.Fatal("the first exit not reported")
	}
	watch("next", func(ev Event) { finished <- ev.TaskID })
	select {
	case name := <-finished:
		if name != "next" {
			t.Fatalf("finished %s, want next", name)
		}
	case <-time.After(guard):
		t.Fatal("an exit not reported while another's report blocks")
	}
	close(release)
	if name := <-finished; name != "blocks" {
		t.Errorf("finished %s, want blocks", name)
	}
}

// TestReactorLoopRunsOnOneGoroutine: a goroutine whose finish was taken
// over leaves the loop once its report returns, even while the new
// owner is finishing an exit of its own (it cannot take the loop back
// from that finish): one goroutine runs the loop, and it still reaps.
// Two did when the finishing flag was a bool, and both handled one
// pidfd's exit (a panic in unwatch). The test's reactor is left running.
func TestReactorLoopRunsOnOneGoroutine(t *testing.T) {
	t.Parallel()
	r, err := newReactor()
	if err != nil {
		t.Skip("no reactor on this system:", err)
	}
	finished := make(chan string, 3)
	watch := func(name string, report func(Event)) { watchExit(t, r, name, report) }
	blocking := func(name string) (blocked, release chan struct{}) {
		blocked, release = make(chan struct{}), make(chan struct{})
		watch(name, func(ev Event) {
			close(blocked)
			<-release
			finished <- ev.TaskID
		})
		select {
		case <-blocked:
		case <-time.After(guard):
			t.Fatalf("%s not reported", name)
		}
		return blocked, release
	}
	_, releaseA := blocking("a") // the first loop goroutine finishes a
	_, releaseB := blocking("b") // the standby took over, and finishes b
	close(releaseA)
	if name := <-finished; name != "a" {
		t.Fatalf("finished %s, want a", name)
	}
	deadline := time.Now().Add(guard)
	for r.loops.Load() > 1 && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if n := r.loops.Load(); n != 1 {
		t.Fatalf("%d goroutines run the loop once a's finish returned, want 1", n)
	}
	close(releaseB)
	watch("c", func(ev Event) { finished <- ev.TaskID })
	for _, want := range []string{"b", "c"} {
		select {
		case name := <-finished:
			if name != want {
				t.Fatalf("finished %s, want %s", name, want)
			}
		case <-time.After(guard):
			t.Fatalf("%s not finished", want)
		}
	}
}

// watchExit has r watch a child that exits at once, reporting to report.
func watchExit(t *testing.T, r *reactor, name string, report func(Event)) {
	t.Helper()
	c := spawnSh(t, "", "exit 0", nil)
	p := &proc{pid: c.pid, pidfd: c.pidfd, pipe: -1, h: &processHandle{pid: int32(c.pid)}, fin: finishInfo{taskID: name}, report: report}
	if err := r.add(p); err != nil {
		t.Fatal(err)
	}
}

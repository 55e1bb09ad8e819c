package executors

import (
	"sync"
	"testing"
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

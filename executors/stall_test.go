package executors

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestFinishBatchKeepsOneLoopOwner: another goroutine may take the
// reactor's loop (a CompareAndSwap of finishing) at any point of
// finishBatch, here between its two steps that begin a finish (the seam
// beginStep): a previous owner whose own finish ends then, which disarms
// the watch at once, or a standby, which disarms it a little later. The
// loop must keep one owner, and the stall watch must be armed only while
// a finish runs: left armed, it wakes the standby at every event (which
// spins until the loop drains them), every later arm fails, and a
// standby that takes the loop then runs it beside the goroutine whose arm
// failed. The watch's epoll instance is left open, as the reactor's.
func TestFinishBatchKeepsOneLoopOwner(t *testing.T) {
	r := handDrivenReactor(t)
	stall, err := newStallWatch(r.epfd)
	if err != nil {
		t.Skip("no stall watch on this system:", err)
	}
	r.stall = stall
	events := make(chan Event, 2)
	// takeLoop takes the loop as the standby does, if it is marked
	// finishing.
	takeLoop := func() bool {
		n := r.finishing.Load()
		return n != 0 && r.finishing.CompareAndSwap(n, 0)
	}
	armed := func() bool { // without changing it
		return unix.EpollCtl(stall.fd, unix.EPOLL_CTL_MOD, stall.target, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(stall.target)}) == nil
	}

	// A goroutine takes the loop in the seam if it is marked finishing,
	// and disarms the watch at once.
	r.beginStep = func() {
		if takeLoop() {
			r.stall.disarm()
		}
	}
	r.finish(endedProc("first", events))
	r.finishBatch()
	<-events
	if armed() {
		t.Error("the stall watch is left armed while no finish runs")
	}

	// A standby woken in the seam takes the loop; it disarms the watch
	// only after finishBatch's arm.
	tookOver := false
	r.beginStep = func() { tookOver = takeLoop() }
	r.finish(endedProc("second", events))
	kept := r.finishBatch()
	<-events
	if tookOver {
		r.stall.disarm()
	}
	if kept && tookOver {
		t.Error("two goroutines own the loop: finishBatch kept it, and the standby took it over")
	}
	if armed() {
		t.Error("the stall watch is left armed while no finish runs")
	}
}

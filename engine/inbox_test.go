package engine

import (
	"testing"
	"time"
)

// An event pushed quietly does not signal the loop and does not call for a
// turn; it is drained with the next one, and its due function runs only
// if it waits its delay out.
func TestInboxPushQuiet(t *testing.T) {
	q := newInbox()
	due := make(chan struct{}, 4)
	fire := func() { due <- struct{}{} }
	q.pushQuiet(event{}, time.Hour, fire)
	select {
	case <-q.signal:
		t.Fatal("a quiet push signalled the loop")
	default:
	}
	if q.calling() || q.empty() {
		t.Fatalf("calling %v, empty %v after a quiet push; want false, false", q.calling(), q.empty())
	}
	q.push(event{})
	if !q.calling() {
		t.Fatal("a push does not call for a turn")
	}
	if evs := q.drain(10, nil); len(evs) != 2 || !evs[0].quiet || evs[1].quiet {
		t.Fatalf("drained %+v", evs)
	}
	if q.calling() || q.lateArmed {
		t.Fatalf("after the drain: calling %v, late timer armed %v", q.calling(), q.lateArmed)
	}
	q.pushQuiet(event{}, time.Millisecond, fire)
	select {
	case <-due:
	case <-time.After(10 * time.Second):
		t.Fatal("the due function never ran")
	}
	if q.drain(10, nil); q.calling() {
		t.Fatal("calling after the drain")
	}
}

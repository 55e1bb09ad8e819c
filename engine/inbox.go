package engine

import (
	"sync"
	"time"
)

// inbox is an unbounded queue of events for the loop. push never blocks, so
// executors may report from inside Start, which the loop calls.
type inbox struct {
	mu     sync.Mutex
	items  []event
	loud   int           // items pushed by push (not pushQuiet) among them
	signal chan struct{} // capacity 1: "something arrived"

	// late is armed by pushQuiet while an event it queued waits: when it
	// fires, it calls the due function it was given. Guarded by mu.
	late      *time.Timer
	lateArmed bool
}

func newInbox() *inbox { return &inbox{signal: make(chan struct{}, 1)} }

func (q *inbox) push(ev event) {
	q.mu.Lock()
	q.items = append(q.items, ev)
	q.loud++
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// pushQuiet queues ev without waking the loop: it is taken with whatever
// wakes the loop next, or once delay has passed, when due is called (once
// for the events pushed quietly until then). A task's Started report asks
// for no effect (see deferStarted): a short task's comes to the loop with
// its Finished, in one turn instead of two.
func (q *inbox) pushQuiet(ev event, delay time.Duration, due func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	ev.quiet = true
	q.items = append(q.items, ev)
	if q.lateArmed {
		return
	}
	q.lateArmed = true
	if q.late == nil {
		q.late = time.AfterFunc(delay, func() {
			q.mu.Lock()
			q.lateArmed = false
			q.mu.Unlock()
			due()
		})
		return
	}
	q.late.Reset(delay)
}

// drain takes up to max events, oldest first.
func (q *inbox) drain(max int, into []event) []event {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(max, len(q.items))
	into = append(into, q.items[:n]...)
	for _, ev := range q.items[:n] {
		if !ev.quiet {
			q.loud--
		}
	}
	clear(q.items[:n])
	q.items = q.items[n:]
	if len(q.items) == 0 {
		q.items = nil
		if q.lateArmed && q.late.Stop() {
			q.lateArmed = false // taken before the delay: nothing is due
		}
	}
	return into
}

// calling tells whether an event that asks for a turn waits: one pushed
// by push (those of pushQuiet wait for one, or for their delay).
func (q *inbox) calling() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.loud > 0
}

func (q *inbox) empty() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) == 0
}

package engine

import "sync"

// inbox is an unbounded queue of events for the loop. push never blocks, so
// executors may report from inside Start, which the loop calls.
type inbox struct {
	mu     sync.Mutex
	items  []event
	signal chan struct{} // capacity 1: "something arrived"
}

func newInbox() *inbox { return &inbox{signal: make(chan struct{}, 1)} }

func (q *inbox) push(ev event) {
	q.mu.Lock()
	q.items = append(q.items, ev)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// drain takes up to max events, oldest first.
func (q *inbox) drain(max int, into []event) []event {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(max, len(q.items))
	into = append(into, q.items[:n]...)
	clear(q.items[:n])
	q.items = q.items[n:]
	if len(q.items) == 0 {
		q.items = nil
	}
	return into
}

func (q *inbox) empty() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) == 0
}

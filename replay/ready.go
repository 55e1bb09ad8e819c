package replay

import "sort"

// readyQueue holds pending tasks whose dependencies are done, ordered by
// priority (highest first), then creation sequence. Tasks that leave the
// ready state stay in the slice until compaction (lazy deletion); an entry
// counts only while its task is queued and the entry is the task's latest
// (a task re-queued after a retry must not appear twice).
type readyQueue struct {
	items []readyEntry
	dead  int // entries that no longer count
}

type readyEntry struct {
	t   *Task
	gen uint32 // the task's queueGen when pushed
}

func (e readyEntry) live() bool { return e.t.queued && e.t.queueGen == e.gen }

func (q *readyQueue) push(t *Task) {
	if t.queued {
		return
	}
	t.queued = true
	t.queueGen++
	e := readyEntry{t: t, gen: t.queueGen}
	n := len(q.items)
	if n == 0 || before(q.items[n-1].t, t) {
		q.items = append(q.items, e)
		return
	}
	i := sort.Search(n, func(i int) bool { return before(t, q.items[i].t) })
	q.items = append(q.items, readyEntry{})
	copy(q.items[i+1:], q.items[i:])
	q.items[i] = e
}

// before orders ready work: higher priority first, then creation order.
func before(a, b *Task) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	return a.Seq < b.Seq
}

// drop marks t as no longer ready.
func (q *readyQueue) drop(t *Task) {
	if !t.queued {
		return
	}
	t.queued = false
	q.dead++
	if q.dead > 64 && q.dead > len(q.items)/2 {
		q.compact()
	}
}

func (q *readyQueue) compact() {
	live := q.items[:0]
	for _, e := range q.items {
		if e.live() {
			live = append(live, e)
		}
	}
	clear(q.items[len(live):])
	q.items, q.dead = live, 0
}

// EachReady calls fn for every ready task in order (priority, then
// creation) until fn returns false. fn must not apply records.
func (s *State) EachReady(fn func(*Task) bool) {
	for _, e := range s.ready.items {
		if e.live() && !fn(e.t) {
			return
		}
	}
}

// ReadyCount is the number of ready tasks.
func (s *State) ReadyCount() int { return len(s.ready.items) - s.ready.dead }

package replay

import "sort"

// readyQueue holds pending tasks whose dependencies all succeeded, ordered by
// creation sequence. Tasks that leave the ready state stay in the slice until
// compaction (lazy deletion); iteration skips them.
type readyQueue struct {
	items []*Task
	dead  int // entries no longer ready
}

func (q *readyQueue) push(t *Task) {
	t.queued = true
	n := len(q.items)
	if n == 0 || q.items[n-1].Seq < t.Seq {
		q.items = append(q.items, t)
		return
	}
	i := sort.Search(n, func(i int) bool { return q.items[i].Seq > t.Seq })
	q.items = append(q.items, nil)
	copy(q.items[i+1:], q.items[i:])
	q.items[i] = t
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
	for _, t := range q.items {
		if t.queued {
			live = append(live, t)
		}
	}
	clear(q.items[len(live):])
	q.items, q.dead = live, 0
}

// EachReady calls fn for every ready task in creation order until fn returns
// false. fn must not apply records.
func (s *State) EachReady(fn func(*Task) bool) {
	for _, t := range s.ready.items {
		if t.queued && !fn(t) {
			return
		}
	}
}

// ReadyCount is the number of ready tasks.
func (s *State) ReadyCount() int { return len(s.ready.items) - s.ready.dead }

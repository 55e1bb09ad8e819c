package replay

import (
	"container/heap"
	"fmt"
	"sort"
)

// The ready queue holds the ready tasks (pending, dependencies done), so
// that a dispatch pass costs O(log n) per task it looks at, however many
// wait: each ready task is in one of
//
//   - the heap, in dispatch order (priority, highest first, then creation):
//     what the engine takes from (TakeReady);
//   - parked behind a gate the engine found closed (Park), until that gate
//     may open: by not_before (a heap by time, ReleaseDue), behind its
//     workflow's max_active_runs or overlap (per run, and the runs per
//     class: same workflow, same max_active_runs, same overlap, so that
//     one gate holds them all alike; the engine releases a class's first
//     run when its workflow has room, ReleaseRun), behind its fan-out's concurrency (released one at a time
//     as instances leave flight), behind its mutex (released when it
//     becomes the holder).
//
// Parking is an index, not state: it never changes what Apply does, and
// a parked task is one the gate would skip anyway. The heaps order tasks by
// Priority, Seq and NotBefore, which must not change while a task is
// queued: set them before push (as attemptFailed and release do), or drop
// the task and push it again. Entries are deleted
// lazily: one counts only while its task is queued and the entry is the
// task's latest (a task queued again after a retry must not appear twice).
type readyQueue struct {
	heap    entryHeap
	timed   timedHeap
	byRun   map[*Run][]readyEntry       // parked behind their workflow, per run: the first in the run (Run.parkedAt), the others here
	runs    map[string]*runHeap         // those runs per class (RunClass), by their first parked task
	byNode  map[*Task]*entryHeap        // parked behind their fan-out's concurrency
	byMutex map[string]map[*Task]uint32 // parked behind their mutex (entry generation)
	n       int                         // ready tasks
	entries int                         // entries held, dead ones included
}

// Gate is what holds a ready task back: the engine's gate tells, Park
// files the task by it.
type Gate uint8

const (
	GateNone  Gate = iota
	GateTime       // its not_before is in the future
	GateRun        // its pending run waits for its workflow (max_active_runs, overlap: queue)
	GateNode       // its fan-out runs as many instances as its concurrency
	GateMutex      // another task holds its mutex
	GateOther      // anything else: not parked (Requeue)
)

type readyEntry struct {
	t   *Task
	gen uint32 // the task's queueGen when pushed
}

func (e readyEntry) live() bool { return e.t.queued && e.t.queueGen == e.gen }

func (q *readyQueue) init() {
	q.byRun, q.runs = map[*Run][]readyEntry{}, map[string]*runHeap{}
	q.byNode, q.byMutex = map[*Task]*entryHeap{}, map[string]map[*Task]uint32{}
}

// push makes t ready.
func (q *readyQueue) push(t *Task) {
	if t.queued || t.Held() { // a pause holds it (pause.go)
		return
	}
	t.queued = true
	t.queueGen++
	t.released = GateNone
	q.n++
	q.add(readyEntry{t: t, gen: t.queueGen})
}

// add puts an entry in the heap.
func (q *readyQueue) add(e readyEntry) {
	heap.Push(&q.heap, e)
	q.entries++
}

// before orders ready work: higher priority first, then creation order.
func before(a, b *Task) bool {
	if pa, pb := a.Priority(), b.Priority(); pa != pb {
		return pa > pb
	}
	return a.Seq < b.Seq
}

// drop marks t as no longer ready; its entries die where they are.
func (q *readyQueue) drop(t *Task) {
	if !t.queued {
		return
	}
	t.queued = false
	q.n--
	if q.entries > 1024 && q.entries > 4*q.n {
		q.compact()
	}
}

// compact removes the dead entries everywhere.
func (q *readyQueue) compact() {
	q.entries = 0
	q.heap = q.heap.live(&q.entries)
	heap.Init(&q.heap)
	q.timed = timedHeap{q.timed.entryHeap.live(&q.entries)}
	heap.Init(&q.timed)
	for r, es := range q.byRun {
		if es = entryHeap(es).live(&q.entries); len(es) == 0 {
			delete(q.byRun, r)
		} else {
			q.byRun[r] = es
		}
	}
	for w, h := range q.runs {
		live := (*h)[:0]
		for _, r := range *h {
			// The first entry stays in the run, dead or not, while any
			// other is live: it is counted.
			if first := (readyEntry{r.parkedAt, r.parkedGen}); first.live() || q.byRun[r] != nil {
				q.entries++
				live = append(live, r)
			} else {
				r.parkedAt = nil
			}
		}
		if *h = live; len(live) == 0 {
			delete(q.runs, w)
		}
		heap.Init(h)
	}
	for n, h := range q.byNode {
		if *h = h.live(&q.entries); len(*h) == 0 {
			delete(q.byNode, n)
		}
		heap.Init(h)
	}
	for k, m := range q.byMutex {
		for t, gen := range m {
			if !(readyEntry{t, gen}).live() {
				delete(m, t)
			}
		}
		if q.entries += len(m); len(m) == 0 {
			delete(q.byMutex, k)
		}
	}
}

// ReadyCount is the number of ready tasks, parked ones included.
func (s *State) ReadyCount() int { return s.ready.n }

// TakeReady removes and returns the first ready task of the heap, or nil.
// The caller dispatches it, or gives it back (Park, Requeue).
func (s *State) TakeReady() *Task {
	q := &s.ready
	for len(q.heap) > 0 {
		e := heap.Pop(&q.heap).(readyEntry)
		q.entries--
		if e.live() {
			return e.t
		}
	}
	return nil
}

// PeekReady returns the task TakeReady would return, leaving it there.
func (s *State) PeekReady() *Task {
	q := &s.ready
	for len(q.heap) > 0 {
		if e := q.heap[0]; e.live() {
			return e.t
		}
		heap.Pop(&q.heap)
		q.entries--
	}
	return nil
}

// Before reports whether t comes before u in dispatch order: higher
// priority first, then creation order.
func (t *Task) Before(u *Task) bool { return before(t, u) }

// Requeue puts back a task TakeReady returned.
func (s *State) Requeue(t *Task) {
	if t.queued {
		s.ready.add(readyEntry{t: t, gen: t.queueGen})
	}
}

// Released is the gate t was last released from (GateNone if it never
// was parked since it became ready): the engine releases the next task
// behind that gate when t turns out to be held by another.
func (t *Task) Released() Gate { return t.released }

// Park files a task TakeReady returned behind the gate that holds it.
func (s *State) Park(t *Task, g Gate) {
	q := &s.ready
	if !t.queued {
		return
	}
	e := readyEntry{t: t, gen: t.queueGen}
	q.entries++
	switch g {
	case GateTime:
		heap.Push(&q.timed, e)
	case GateRun:
		q.parkRun(e)
	case GateNode:
		node := t.Run.Tasks[t.Parent]
		h := q.byNode[node]
		if h == nil {
			h = &entryHeap{}
			q.byNode[node] = h
		}
		heap.Push(h, e)
	case GateMutex:
		m := q.byMutex[t.MutexKey]
		if m == nil {
			m = map[*Task]uint32{}
			q.byMutex[t.MutexKey] = m
		}
		m[t] = e.gen
	default:
		q.entries--
		s.Requeue(t)
	}
}

// RunClass names the runs one workflow gate holds alike: the same
// workflow, max_active_runs and overlap (versions may differ in these).
func RunClass(r *Run) string {
	return fmt.Sprintf("%s/%d/%t", r.Workflow, r.Spec.MaxActiveRuns, r.Queued)
}

// parkRun parks e behind its run's workflow. A run's first parked entry
// is kept in the run (parkedAt, parkedGen), which orders its class's heap;
// only the others take an entry of q.byRun (issue 27: a one-task run
// waits with no map entry).
func (q *readyQueue) parkRun(e readyEntry) {
	r := e.t.Run
	if r.parkedAt != nil {
		q.byRun[r] = append(q.byRun[r], e)
		return
	}
	class := RunClass(r)
	h := q.runs[class]
	if h == nil {
		h = &runHeap{}
		q.runs[class] = h
	}
	r.parkedAt, r.parkedGen = e.t, e.gen
	heap.Push(h, r)
}

// eachParked calls fn with r's entries parked behind its workflow, in
// the order they were parked, until it returns false.
func (q *readyQueue) eachParked(r *Run, fn func(readyEntry) bool) {
	if r.parkedAt == nil || !fn(readyEntry{r.parkedAt, r.parkedGen}) {
		return
	}
	for _, e := range q.byRun[r] {
		if !fn(e) {
			return
		}
	}
}

// unpark forgets r's parked entries and returns how many it had.
func (q *readyQueue) unpark(r *Run) int {
	n := len(q.byRun[r])
	if r.parkedAt != nil {
		n++
	}
	r.parkedAt = nil
	delete(q.byRun, r)
	return n
}

// release moves an entry back to the heap, if it is live.
func (q *readyQueue) release(e readyEntry, from Gate) {
	if !e.live() {
		q.entries--
		return
	}
	e.t.released = from
	heap.Push(&q.heap, e)
}

// ReleaseDue releases the tasks parked until a time at or before now, and
// returns the earliest time still parked (0: none).
func (s *State) ReleaseDue(now int64) (next int64) {
	q := &s.ready
	for len(q.timed.entryHeap) > 0 {
		e := q.timed.entryHeap[0]
		if e.live() && e.t.NotBefore > now {
			return e.t.NotBefore
		}
		heap.Pop(&q.timed)
		q.release(e, GateTime)
	}
	return 0
}

// ParkedClasses calls fn with every class (RunClass) that has runs
// parked behind their workflow.
func (s *State) ParkedClasses(fn func(class string)) {
	for c := range s.ready.runs {
		fn(c)
	}
}

// ParkedRun returns the first run of a class parked behind its workflow
// (in the order of its first parked task), or nil; its first live parked
// task stands for it.
func (s *State) ParkedRun(class string) (*Run, *Task) {
	q := &s.ready
	h := q.runs[class]
	for h != nil && len(*h) > 0 {
		r := (*h)[0]
		var first *Task
		q.eachParked(r, func(e readyEntry) bool {
			if e.live() {
				first = e.t
			}
			return first == nil
		})
		if first != nil {
			return r, first
		}
		heap.Pop(h)
		q.entries -= q.unpark(r)
	}
	delete(q.runs, class)
	return nil, nil
}

// ReleaseRun releases every task of r parked behind its workflow; r must
// be the one ParkedRun(class) returned.
func (s *State) ReleaseRun(class string, r *Run) {
	q := &s.ready
	h := q.runs[class]
	heap.Pop(h)
	if len(*h) == 0 {
		delete(q.runs, class)
	}
	q.eachParked(r, func(e readyEntry) bool {
		q.release(e, GateRun)
		return true
	})
	q.unpark(r)
}

// ReleaseNode releases the first task parked behind a fan-out's
// concurrency: one of its instances left flight, or the one released
// before turned out to be held by another gate.
func (s *State) ReleaseNode(node *Task) {
	q := &s.ready
	h := q.byNode[node]
	for h != nil && len(*h) > 0 {
		e := heap.Pop(h).(readyEntry)
		if e.live() {
			q.release(e, GateNode)
			break
		}
		q.entries--
	}
	if h != nil && len(*h) == 0 {
		delete(q.byNode, node)
	}
}

// mutexChanged releases the holder of a mutex key if it is parked behind
// it: only the holder may run.
func (s *State) mutexChanged(key string) {
	q := &s.ready
	m := q.byMutex[key]
	if m == nil {
		return
	}
	h := s.MutexHolder(key)
	if gen, ok := m[h]; ok {
		delete(m, h)
		q.release(readyEntry{t: h, gen: gen}, GateMutex)
	}
	if len(m) == 0 {
		delete(q.byMutex, key)
	}
}

// entryHeap orders entries for dispatch.
type entryHeap []readyEntry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return before(h[i].t, h[j].t) }
func (h entryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entryHeap) Push(x any)        { *h = append(*h, x.(readyEntry)) }
func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = readyEntry{}
	*h = old[:len(old)-1]
	return e
}

// live keeps the live entries (in place) and adds their number to n.
func (h entryHeap) live(n *int) entryHeap {
	out := h[:0]
	for _, e := range h {
		if e.live() {
			out = append(out, e)
		}
	}
	clear(h[len(out):])
	*n += len(out)
	return out
}

// timedHeap orders entries by not_before, then for dispatch.
type timedHeap struct{ entryHeap }

func (h timedHeap) Less(i, j int) bool {
	a, b := h.entryHeap[i].t, h.entryHeap[j].t
	if a.NotBefore != b.NotBefore {
		return a.NotBefore < b.NotBefore
	}
	return before(a, b)
}

// runHeap orders runs parked behind their workflow by their first parked
// task.
type runHeap []*Run

func (h runHeap) Len() int           { return len(h) }
func (h runHeap) Less(i, j int) bool { return before(h[i].parkedAt, h[j].parkedAt) }
func (h runHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)        { *h = append(*h, x.(*Run)) }
func (h *runHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return r
}

// EachReady calls fn for every ready task, parked ones included, in
// dispatch order (priority, then creation) until fn returns false. It
// sorts them all: for tests and tools, never for a hot path. fn must not
// apply records.
func (s *State) EachReady(fn func(*Task) bool) {
	q := &s.ready
	var all []*Task
	add := func(es []readyEntry) {
		for _, e := range es {
			if e.live() {
				all = append(all, e.t)
			}
		}
	}
	add(q.heap)
	add(q.timed.entryHeap)
	for _, h := range q.runs {
		for _, r := range *h {
			q.eachParked(r, func(e readyEntry) bool {
				add([]readyEntry{e})
				return true
			})
		}
	}
	for _, h := range q.byNode {
		add(*h)
	}
	for _, m := range q.byMutex {
		for t, gen := range m {
			add([]readyEntry{{t, gen}})
		}
	}
	sort.Slice(all, func(i, j int) bool { return before(all[i], all[j]) })
	for _, t := range all {
		if !fn(t) {
			return
		}
	}
}

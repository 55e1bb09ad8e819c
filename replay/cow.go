package replay

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"

	"github.com/orkwal/orkwal/replay/workflow"
)

// Incremental snapshots: copy-on-write into the snapshot.
//
// A full copy of the state (State.Snapshot) costs time in proportion to the
// number of tasks, all of it under the engine's lock. An incremental
// snapshot splits that work into pieces of bounded size:
//
//   - BeginSnapshot(N) takes what is small: the sequences, the workflows
//     and schedules, and the run list's slice header. It copies no run.
//   - CopyStep copies up to a budget of runs and tasks, in run list order,
//     each into the snapshot. The caller holds the lock only for one step;
//     Apply may run between steps.
//   - Until the copy is complete, Apply saves the value of every run and
//     task that existed at N before it first writes one of its persisted
//     fields (touchRun, touch). Each run and task is saved exactly once, by
//     whichever comes first: a step or a write.
//
// Why the result is exactly the state at N: a run or task is saved either
// before any write after N (by touch, which every write goes after) or by a
// step while it has not been written since N (its generation shows it was
// not saved, so no write happened). Runs and tasks created after N carry
// the snapshot's generation from birth, so they are never saved, and a
// run's saved task count is taken before any task is appended to it. The
// run list at N is kept by its slice header: appends after N do not touch
// its elements, and applyRunsPruned builds a new list instead of
// compacting in place while a snapshot is pending. Strings, byte slices,
// params and specs are shared: the state replaces them, never mutates
// them in place (as for State.Snapshot).
//
// The cost of a write while a snapshot is pending is one task's copy, at
// most once per task: in proportion to the work Apply does anyway.

// pending is a snapshot being copied.
type pending struct {
	src    *State
	gen    uint32
	list   []*Run           // the run list at N
	runs   chunks[savedRun] // in the order saved
	tasks  chunks[savedTask]
	order  []int // per run of list, its index in runs (filled by the steps)
	ri, ti int   // the steps' cursor: run list[ri], its task ti
	opened bool  // list[ri] is in order
	done   bool
}

type savedRun struct {
	run  SnapRun // Spec and Tasks are set by flatten
	spec *workflow.Spec
	n    int // the run's tasks at N
}

type savedTask struct {
	run  int // index in pending.runs
	task int // index in the run
	t    SnapTask
}

// ErrSnapshotSuperseded: a newer BeginSnapshot replaced this one before its
// copy completed.
var ErrSnapshotSuperseded = errors.New("replay: snapshot superseded by a newer one")

// BeginSnapshot starts an incremental snapshot of the state at index: the
// state as it is now, whatever is applied afterwards. Its cost does not
// depend on the number of runs or tasks. Complete it with CopyStep before
// encoding it. A snapshot begun earlier and not complete is abandoned.
func (s *State) BeginSnapshot(index uint64) *Snapshot {
	snap := &Snapshot{Index: index, NextSeq: s.NextSeq, NextRunSeq: s.NextRunSeq, specs: map[*workflow.Spec]int{}}
	snap.copyWorkflows(s)
	s.snapGen++
	s.pend = &pending{src: s, gen: s.snapGen, list: s.RunList, tasks: chunks[savedTask]{pool: &taskChunks}}
	snap.pend = s.pend
	return snap
}

// CopyStep copies up to budget runs and tasks into a begun snapshot and
// reports whether its copy is complete. It must be called by the state's
// owner (under the same lock as Apply).
func (snap *Snapshot) CopyStep(budget int) (bool, error) {
	p := snap.pend
	switch {
	case p == nil || p.done:
		return true, nil
	case p.src.pend != p:
		return false, ErrSnapshotSuperseded
	}
	budget = max(budget, 1)
	for p.ri < len(p.list) {
		r := p.list[p.ri]
		if !p.opened {
			if budget <= 0 {
				return false, nil
			}
			budget--
			if r.snapGen != p.gen {
				p.saveRun(r)
			}
			p.order, p.opened = append(p.order, int(r.snapIdx)), true
		}
		for n := p.runs.at(int(r.snapIdx)).n; p.ti < n; p.ti++ {
			if budget <= 0 {
				return false, nil
			}
			budget--
			if t := r.Tasks[p.ti]; t.snapGen != p.gen {
				p.saveTask(t)
			}
		}
		p.ri, p.ti, p.opened = p.ri+1, 0, false
	}
	// Done: the state no longer saves into it, and it no longer refers to
	// the state.
	p.done, p.src.pend, p.src, p.list = true, nil, nil, nil
	return true, nil
}

// touchRun saves run's value into the pending snapshot, if there is one
// and it does not hold it yet. Every write to a persisted field of a Run
// goes after it, and so does an append to its Tasks.
func (s *State) touchRun(run *Run) {
	if p := s.pend; p != nil && run.snapGen != p.gen {
		p.saveRun(run)
	}
	if run.runMore.shared {
		own := *run.runMore
		own.shared = false
		run.runMore = &own
	}
}

// touch saves t's value (and its run's) into the pending snapshot, if there
// is one and it does not hold it yet. Every write to a persisted field of
// a Task goes after it.
func (s *State) touch(t *Task) {
	s.touchHot(t)
	s.own(t)
}

// touchHot is touch before a write to none of the fields of t's taskEnd
// (its NotBefore, Paused): a waiting task keeps sharing noEnd.
func (s *State) touchHot(t *Task) {
	if p := s.pend; p != nil && t.snapGen != p.gen {
		p.saveTask(t)
	}
}

// born marks a run or task created now: a pending snapshot (taken before)
// must not hold it.
func (s *State) bornRun(run *Run) { run.snapGen = s.snapGen }
func (s *State) born(t *Task)     { t.snapGen = s.snapGen }

func (p *pending) saveRun(r *Run) {
	r.snapGen, r.snapIdx = p.gen, int32(p.runs.len())
	*p.runs.add() = savedRun{run: snapRunFields(r), spec: r.Spec, n: len(r.Tasks)}
}

func (p *pending) saveTask(t *Task) {
	if t.Run.snapGen != p.gen {
		p.saveRun(t.Run)
	}
	t.snapGen = p.gen
	*p.tasks.add() = savedTask{run: int(t.Run.snapIdx), task: t.Index, t: snapTask(t)}
}

// flattenPending builds Runs from a completed copy, in run list order with
// spec indexes assigned as State.Snapshot assigns them: the encoding is the
// same byte for byte. It reads only the snapshot's own memory (the run list
// for its order), so it may run outside the lock.
func (snap *Snapshot) flattenPending() error {
	p := snap.pend
	if !p.done {
		return errors.New("replay: snapshot copy not complete")
	}
	tasks := make([][]SnapTask, p.runs.len())
	filled := make([][]bool, p.runs.len())
	for i := range tasks {
		n := p.runs.at(i).n
		tasks[i], filled[i] = make([]SnapTask, n), make([]bool, n)
	}
	for i := 0; i < p.tasks.len(); i++ {
		st := p.tasks.at(i)
		if st.task >= len(tasks[st.run]) || filled[st.run][st.task] {
			return fmt.Errorf("replay: snapshot: task %d of run %s saved twice or out of range", st.task, p.runs.at(st.run).run.ID)
		}
		tasks[st.run][st.task], filled[st.run][st.task] = st.t, true
	}
	snap.Runs = make([]SnapRun, len(p.order))
	for i, k := range p.order {
		for j, ok := range filled[k] {
			if !ok {
				return fmt.Errorf("replay: snapshot: task %d of run %s not saved", j, p.runs.at(k).run.ID)
			}
		}
		sr := p.runs.at(k)
		snap.Runs[i] = sr.run
		snap.Runs[i].Spec = snap.specOf(sr.run.Workflow, sr.run.Version, sr.spec)
		snap.Runs[i].Tasks = tasks[k]
	}
	p.tasks.release()
	snap.pend, snap.specs = nil, nil
	return nil
}

// chunks is an append-only list in chunks: adding never copies what is
// there, and allocations stay small. The first chunks grow from 16 to 128
// items (small states stay cheap), the rest hold chunkLen.
type chunks[T any] struct {
	c    [][]T
	n    int
	pool *chunkPool[T] // where full-size chunks come from and go back, if any
}

const (
	chunkLen   = 256
	firstChunk = 16
	growing    = firstChunk * (1 + 2 + 4 + 8) // items in the growing chunks
)

func (a *chunks[T]) add() *T {
	if k := len(a.c); k == 0 || len(a.c[k-1]) == cap(a.c[k-1]) {
		var c []T
		if a.pool != nil && k >= 4 {
			c = a.pool.get()
		}
		if c == nil {
			c = make([]T, 0, chunkSize(k))
		}
		a.c = append(a.c, c)
	}
	last := &a.c[len(a.c)-1]
	*last = (*last)[:len(*last)+1]
	a.n++
	return &(*last)[len(*last)-1]
}

// chunkSize is the length of chunk k.
func chunkSize(k int) int {
	if k < 4 {
		return firstChunk << k
	}
	return chunkLen
}

func (a *chunks[T]) at(i int) *T {
	if i < growing {
		k := bits.Len(uint(i/firstChunk+1)) - 1
		return &a.c[k][i-firstChunk*(1<<k-1)]
	}
	i -= growing
	return &a.c[4+i/chunkLen][i%chunkLen]
}

func (a *chunks[T]) len() int { return a.n }

// release gives the full-size chunks back to the pool; a is then empty.
func (a *chunks[T]) release() {
	if a.pool != nil {
		for _, c := range a.c {
			if cap(c) == chunkLen {
				a.pool.put(c)
			}
		}
	}
	a.c, a.n = nil, 0
}

// taskChunks keeps the chunks of saved tasks of the last snapshot for the
// next one: its steps then copy into memory that is already mapped and
// allocate nothing (no page faults, no GC assist under the lock). It holds
// at most maxPooled chunks (about 45 MB, 130,000 tasks).
var taskChunks chunkPool[savedTask]

const maxPooled = 512

type chunkPool[T any] struct {
	mu   sync.Mutex
	free [][]T
}

func (p *chunkPool[T]) get() []T {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		c := p.free[n-1]
		p.free = p.free[:n-1]
		return c
	}
	return nil
}

// put clears c (it must not keep strings and outputs alive) and keeps it.
func (p *chunkPool[T]) put(c []T) {
	clear(c)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < maxPooled {
		p.free = append(p.free, c[:0])
	}
}

// own gives t a taskEnd of its own, if it still shares noEnd: every write
// to a field of its taskEnd goes after it (after s.touch(t), for a
// persisted one).
func (s *State) own(t *Task) {
	if t.taskEnd == &noEnd {
		t.taskEnd = &taskEnd{}
	}
}

// zero reports a taskEnd with nothing in it, as noEnd.
func (e *taskEnd) zero() bool {
	return e.MutexKey == "" && !e.Expanded && e.Failures == 0 && e.Interruptions == 0 && e.Instance == 0 && e.PID == 0 && e.StartTime == 0 && e.ExitCode == 0 &&
		e.Error == "" && e.Output == nil && e.DispatchedAt == 0 && e.StartedAt == 0 && e.FinishedAt == 0 &&
		e.Attempts == nil && e.Item == nil && e.Instances == nil && e.instActive == 0 && e.instFailed == 0 &&
		e.instFlight == 0 && e.inst == nil
}

// errNoEnd: a write reached the shared taskEnd of tasks that have not run
// (a write without s.own before it): a bug, which Apply reports rather
// than let every such task show it.
var errNoEnd = errors.New("replay: internal error: the shared empty task end or run part was written")

// checkNoEnd returns errNoEnd, and sets them back, if noEnd or a shared
// runMore was written.
func checkNoEnd() error {
	bad := !noEnd.zero()
	for i := range sharedMores {
		if want := (runMore{Trigger: sharedTriggers[i], shared: true}); sharedMores[i] != want {
			sharedMores[i], bad = want, true
		}
	}
	if !bad {
		return nil
	}
	noEnd = taskEnd{}
	return errNoEnd
}

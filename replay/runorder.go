package replay

import "sort"

// runOrder lists the runs by creation order two ways, so that a page of
// runs newest first, filtered by workflow, by status or both, after any
// run, costs O(log n + page) however many runs there are: the runs of
// each status, and of each workflow and status. All runs are
// State.RunList, in creation order too; a workflow's runs are the merge
// of its lists of the five statuses. (A list costs 8 bytes a run: issue
// 27.) It is derived: kept by setRun and countRun, never persisted.
type runOrder map[runKey]*runList

type runKey struct {
	workflow string // "" = any
	status   RunStatus
}

// keys are the lists r belongs to with status st.
func (x runOrder) keys(r *Run, st RunStatus) [2]runKey {
	return [2]runKey{{status: st}, {workflow: r.Workflow, status: st}}
}

// runStatuses are the statuses a run can have.
var allRunStatuses = [...]RunStatus{RunPending, RunRunning, RunSuccess, RunFailed, RunCancelled}

// count puts r in every list of its status (delta +1) or takes it out (-1).
func (x runOrder) count(r *Run, delta int) {
	for _, k := range x.keys(r, r.Status) {
		x.list(k).change(r, delta)
	}
}

// move moves r from the lists of status old to those of its status.
func (x runOrder) move(r *Run, old RunStatus) {
	if old == "" {
		x.count(r, +1)
		return
	}
	for _, k := range x.keys(r, old) {
		x.list(k).change(r, -1)
	}
	for _, k := range x.keys(r, r.Status) {
		x.list(k).change(r, +1)
	}
}

func (x runOrder) list(k runKey) *runList {
	l := x[k]
	if l == nil {
		l = &runList{}
		x[k] = l
	}
	return l
}

// EachRunBefore calls fn with the runs of workflow ("" = any) with status
// ("" = any) created before the run of creation sequence bound (all runs:
// ^uint64(0)), newest first, until fn returns false.
func (s *State) EachRunBefore(workflow string, status RunStatus, bound uint64, fn func(*Run) bool) {
	if workflow == "" && status == "" {
		i := sort.Search(len(s.RunList), func(i int) bool { return s.RunList[i].Seq >= bound })
		for i--; i >= 0 && fn(s.RunList[i]); i-- {
		}
		return
	}
	if status == "" {
		s.eachOfWorkflowBefore(workflow, bound, fn)
		return
	}
	if l := s.runOrder[runKey{workflow, status}]; l != nil {
		l.eachBefore(bound, fn)
	}
}

// eachOfWorkflowBefore is EachRunBefore for a workflow's runs of any
// status: the merge, newest first, of its lists of each status.
func (s *State) eachOfWorkflowBefore(workflow string, bound uint64, fn func(*Run) bool) {
	var curs [len(allRunStatuses)]runCursor
	n := 0
	for _, st := range allRunStatuses {
		if l := s.runOrder[runKey{workflow, st}]; l != nil {
			if c, ok := l.before(bound); ok {
				curs[n], n = c, n+1
			}
		}
	}
	for n > 0 {
		best := 0
		for i := 1; i < n; i++ {
			if curs[i].run().Seq > curs[best].run().Seq {
				best = i
			}
		}
		if !fn(curs[best].run()) {
			return
		}
		if !curs[best].prev() {
			n--
			curs[best] = curs[n]
		}
	}
}

// RunCount is the number of runs of workflow with status ("" = any):
// O(1).
func (s *State) RunCount(workflow string, status RunStatus) int {
	if workflow == "" && status == "" {
		return len(s.RunList)
	}
	if status == "" {
		n := 0
		for _, st := range allRunStatuses {
			n += s.RunCount(workflow, st)
		}
		return n
	}
	if l := s.runOrder[runKey{workflow, status}]; l != nil {
		return l.n
	}
	return 0
}

// NewestRun returns the newest run of workflow ("" = any), or nil.
func (s *State) NewestRun(workflow string) *Run {
	var newest *Run
	s.EachRunBefore(workflow, "", ^uint64(0), func(r *Run) bool { newest = r; return false })
	return newest
}

// RunWorkflows calls fn with every workflow that has runs (a deleted
// workflow's too): O(workflows × statuses).
func (s *State) RunWorkflows(fn func(workflow string)) {
	seen := map[string]bool{}
	for k, l := range s.runOrder {
		if k.workflow != "" && l.n > 0 && !seen[k.workflow] {
			seen[k.workflow] = true
			fn(k.workflow)
		}
	}
}

// RunBound returns the bound for EachRunBefore that starts after the runs
// created at or after at: the sequence of the oldest of them (run
// creation times follow creation order).
func (s *State) RunBound(at int64) uint64 {
	i := sort.Search(len(s.RunList), func(i int) bool { return s.RunList[i].CreatedAt >= at })
	if i == len(s.RunList) {
		return ^uint64(0)
	}
	return s.RunList[i].Seq
}

// runList is a sorted list of runs by creation sequence in chunks of at
// most maxChunk, so that an insert or a delete anywhere moves at most a
// chunk: O(log n) to find, O(maxChunk) to move.
type runList struct {
	chunks [][]*Run
	n      int
}

const maxChunk = 512

func (l *runList) change(r *Run, delta int) {
	if delta > 0 {
		l.insert(r)
	} else {
		l.remove(r)
	}
}

// chunk returns the index of the first chunk whose last run is at or
// after seq (len(chunks) if none).
func (l *runList) chunk(seq uint64) int {
	return sort.Search(len(l.chunks), func(i int) bool { c := l.chunks[i]; return c[len(c)-1].Seq >= seq })
}

func (l *runList) insert(r *Run) {
	l.n++
	if len(l.chunks) == 0 {
		l.chunks = [][]*Run{{r}}
		return
	}
	ci := min(l.chunk(r.Seq), len(l.chunks)-1)
	c := l.chunks[ci]
	i := sort.Search(len(c), func(i int) bool { return c[i].Seq >= r.Seq })
	if i == len(c) && len(c) == maxChunk && ci == len(l.chunks)-1 {
		// The newest run (the common case) starts a chunk of its own
		// instead of splitting the full one: chunks filled in creation
		// order stay full, the slots they hold all used.
		l.chunks = append(l.chunks, []*Run{r})
		return
	}
	c = append(c, nil)
	copy(c[i+1:], c[i:])
	c[i] = r
	if len(c) <= maxChunk {
		l.chunks[ci] = c
		return
	}
	half := append([]*Run(nil), c[len(c)/2:]...)
	clear(c[len(c)/2:])
	l.chunks[ci] = c[:len(c)/2]
	l.chunks = append(l.chunks, nil)
	copy(l.chunks[ci+2:], l.chunks[ci+1:])
	l.chunks[ci+1] = half
}

func (l *runList) remove(r *Run) {
	ci := l.chunk(r.Seq)
	if ci == len(l.chunks) {
		return
	}
	c := l.chunks[ci]
	i := sort.Search(len(c), func(i int) bool { return c[i].Seq >= r.Seq })
	if i == len(c) || c[i] != r {
		return
	}
	l.n--
	copy(c[i:], c[i+1:])
	c[len(c)-1] = nil
	if c = c[:len(c)-1]; len(c) > 0 {
		l.chunks[ci] = c
		return
	}
	l.chunks = append(l.chunks[:ci], l.chunks[ci+1:]...)
}

// runCursor is a position in a runList.
type runCursor struct {
	l     *runList
	ci, i int
}

func (c *runCursor) run() *Run { return c.l.chunks[c.ci][c.i] }

// prev moves to the run before, and reports whether there is one.
func (c *runCursor) prev() bool {
	if c.i > 0 {
		c.i--
		return true
	}
	for c.ci > 0 {
		if c.ci--; len(c.l.chunks[c.ci]) > 0 {
			c.i = len(c.l.chunks[c.ci]) - 1
			return true
		}
	}
	return false
}

// before returns the position of the newest run created before bound,
// if any.
func (l *runList) before(bound uint64) (runCursor, bool) {
	if len(l.chunks) == 0 {
		return runCursor{}, false
	}
	ci := min(l.chunk(bound), len(l.chunks)-1)
	c := l.chunks[ci]
	i := sort.Search(len(c), func(i int) bool { return c[i].Seq >= bound })
	cur := runCursor{l, ci, i}
	if i > 0 {
		cur.i--
		return cur, true
	}
	return cur, cur.prev()
}

func (l *runList) eachBefore(bound uint64, fn func(*Run) bool) {
	ci := min(l.chunk(bound), len(l.chunks)-1)
	for ; ci >= 0; ci-- {
		c := l.chunks[ci]
		i := sort.Search(len(c), func(i int) bool { return c[i].Seq >= bound })
		for i--; i >= 0; i-- {
			if !fn(c[i]) {
				return
			}
		}
	}
}

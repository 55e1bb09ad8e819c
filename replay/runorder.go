package replay

import "sort"

// runOrder lists the runs by creation order three ways, so that a page of
// runs newest first, filtered by workflow, by status or both, after any
// run, costs O(log n + page) however many runs there are: the runs of
// each workflow, of each status, and of each workflow and status. All
// runs are State.RunList, in creation order too. It is derived: kept by
// setRun and countRun, never persisted.
type runOrder map[runKey]*runList

type runKey struct {
	workflow string // "" = any
	status   RunStatus
}

// keys are the lists r belongs to with status st.
func (x runOrder) keys(r *Run, st RunStatus) [3]runKey {
	return [3]runKey{{workflow: r.Workflow}, {status: st}, {workflow: r.Workflow, status: st}}
}

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
	ko, kn := x.keys(r, old), x.keys(r, r.Status)
	for _, k := range ko[1:] {
		x.list(k).change(r, -1)
	}
	for _, k := range kn[1:] {
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
	if l := s.runOrder[runKey{workflow, status}]; l != nil {
		l.eachBefore(bound, fn)
	}
}

// RunCount is the number of runs of workflow with status ("" = any):
// O(1).
func (s *State) RunCount(workflow string, status RunStatus) int {
	if workflow == "" && status == "" {
		return len(s.RunList)
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
	for k, l := range s.runOrder {
		if k.workflow != "" && k.status == "" && l.n > 0 {
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

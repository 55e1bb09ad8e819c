package replay

// counts are gauges of the state kept by every status change, so that a
// monitor reads them in O(1) however many runs there are: runs and tasks
// by status, and the unfinished (pending or running) runs of each workflow.
type counts struct {
	runs     map[RunStatus]int
	tasks    map[TaskStatus]int
	open     map[string]int // unfinished runs per workflow
	openRuns int
}

func (c *counts) init() {
	c.runs, c.tasks, c.open = map[RunStatus]int{}, map[TaskStatus]int{}, map[string]int{}
}

// run counts r under its status (delta +1) or takes it out (-1).
func (c *counts) run(r *Run, delta int) {
	if r.Status == "" {
		return
	}
	c.runs[r.Status] += delta
	if !r.Status.Finished() {
		c.openRuns += delta
		if c.open[r.Workflow] += delta; c.open[r.Workflow] == 0 {
			delete(c.open, r.Workflow)
		}
	}
}

func (c *counts) task(t *Task, delta int) {
	if t.Status != "" {
		c.tasks[t.Status] += delta
	}
}

// setRun changes a run's status, keeping the counts and the run order.
func (s *State) setRun(r *Run, st RunStatus) {
	s.counts.run(r, -1)
	old := r.Status
	r.Status = st
	s.counts.run(r, +1)
	s.runOrder.move(r, old)
}

// setTask changes a task's status, keeping the counts.
func (s *State) setTask(t *Task, st TaskStatus) {
	s.counts.task(t, -1)
	instanceMoved(t, st)
	t.Status = st
	s.counts.task(t, +1)
}

// countRun adds (+1) or removes (-1) a whole run and its tasks from the
// counts and the run order: a run restored, or pruned.
func (s *State) countRun(r *Run, delta int) {
	s.counts.run(r, delta)
	s.runOrder.count(r, delta)
	for _, t := range r.Tasks {
		s.counts.task(t, delta)
	}
}

// RunCounts returns the number of runs of each status.
func (s *State) RunCounts() map[RunStatus]int { return clone(s.counts.runs) }

// TaskCounts returns the number of tasks of each status (a fan-out counts
// as itself and as each of its instances).
func (s *State) TaskCounts() map[TaskStatus]int { return clone(s.counts.tasks) }

// OpenRuns is the number of unfinished (pending or running) runs.
func (s *State) OpenRuns() int { return s.counts.openRuns }

// OpenRunsByWorkflow returns the number of unfinished runs of each
// workflow that has any.
func (s *State) OpenRunsByWorkflow() map[string]int { return clone(s.counts.open) }

// OpenRunsOf is the number of unfinished runs of a workflow.
func (s *State) OpenRunsOf(workflow string) int { return s.counts.open[workflow] }

func clone[K comparable](m map[K]int) map[K]int {
	out := make(map[K]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

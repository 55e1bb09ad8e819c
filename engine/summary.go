package engine

// WorkflowRuns summarises the retained runs of one workflow: how many are
// in each status, and the newest.
type WorkflowRuns struct {
	Counts map[string]int `json:"counts"` // status → runs
	Last   *RunView       `json:"last,omitempty"`
}

// RunSummary summarises the retained runs by workflow (a deleted
// workflow's runs too). It reads the counts the state keeps per workflow
// and status: O(workflows × statuses), whatever the number of runs.
func (e *Engine) RunSummary() map[string]*WorkflowRuns {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := map[string]*WorkflowRuns{}
	e.state.RunWorkflows(func(wf string) {
		s := &WorkflowRuns{Counts: map[string]int{}}
		for _, st := range runStatuses {
			if n := e.state.RunCount(wf, st); n > 0 {
				s.Counts[string(st)] = n
			}
		}
		v := e.viewRun(e.state.NewestRun(wf), false)
		s.Last = &v
		out[wf] = s
	})
	return out
}

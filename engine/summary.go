package engine

// WorkflowRuns summarises the retained runs of one workflow: how many are
// in each status, and the newest.
type WorkflowRuns struct {
	Counts map[string]int `json:"counts"` // status → runs
	Last   *RunView       `json:"last,omitempty"`
}

// RunSummary summarises the retained runs by workflow (a deleted
// workflow's runs too). It reads every run once: a page's worth of work
// for the few thousand runs retention keeps, not a hot path.
func (e *Engine) RunSummary() map[string]*WorkflowRuns {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := map[string]*WorkflowRuns{}
	for i := len(e.state.RunList) - 1; i >= 0; i-- {
		r := e.state.RunList[i]
		s := out[r.Workflow]
		if s == nil {
			v := e.viewRun(r, false)
			s = &WorkflowRuns{Counts: map[string]int{}, Last: &v}
			out[r.Workflow] = s
		}
		s.Counts[string(r.Status)]++
	}
	return out
}

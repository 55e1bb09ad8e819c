package engine

import (
	"fmt"
	"time"

	"github.com/orkwal/orkwal/replay"
)

// Admission control (issue 21): the runs accepted and not finished
// (pending or running) are held in memory, so their number is bounded,
// in all and per workflow. A trigger beyond a bound is refused with an
// *OverloadError (the API answers 429 with Retry-After); a cron fire
// beyond it is recorded as skipped, saying why. What was accepted is never
// touched: a bound only refuses new runs. The check reads two counts kept
// by Apply: O(1).

// Default bounds on unfinished runs.
const (
	DefaultMaxPendingRuns            = 100_000
	DefaultMaxPendingRunsPerWorkflow = 50_000
)

// OverloadRetryAfter is the wait an OverloadError suggests.
const OverloadRetryAfter = time.Second

// OverloadError refuses a new run: a bound on unfinished runs is reached.
// It wraps ErrOverloaded.
type OverloadError struct {
	Workflow   string // the workflow whose bound is reached; "" for the global one
	Pending    int    // unfinished runs counted against the bound
	Limit      int
	RetryAfter time.Duration
}

func (e *OverloadError) Error() string {
	return fmt.Sprintf("%v: %s; retry after %s", ErrOverloaded, e.Reason(), e.RetryAfter)
}

// Reason says which bound is reached.
func (e *OverloadError) Reason() string {
	if e.Workflow != "" {
		return fmt.Sprintf("workflow %s has %d pending runs, its limit (--max-pending-runs-per-workflow) is %d", e.Workflow, e.Pending, e.Limit)
	}
	return fmt.Sprintf("%d pending runs, the limit (--max-pending-runs) is %d", e.Pending, e.Limit)
}

func (e *OverloadError) Unwrap() error { return ErrOverloaded }

// admit refuses a new run of workflow when a bound is reached, and counts
// the refusal. Loop only.
func (e *Engine) admit(st *replay.State, workflow string) error {
	var err *OverloadError
	switch {
	case st.OpenRuns() >= e.cfg.MaxPendingRuns:
		err = &OverloadError{Pending: st.OpenRuns(), Limit: e.cfg.MaxPendingRuns}
	case st.OpenRunsOf(workflow) >= e.cfg.MaxPendingRunsPerWorkflow:
		err = &OverloadError{Workflow: workflow, Pending: st.OpenRunsOf(workflow), Limit: e.cfg.MaxPendingRunsPerWorkflow}
	default:
		return nil
	}
	err.RetryAfter = OverloadRetryAfter
	e.refused.Add(1)
	return err
}

package engine

import (
	"fmt"

	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
)

// WorkflowSource is one workflow of a set put at once: its checked spec
// (CheckWorkflow) and the YAML it came from.
type WorkflowSource struct {
	Spec   *workflow.Spec
	Source string
}

// PutResult is what putting one workflow of a set did.
type PutResult struct {
	Name    string `json:"name"`
	Version int    `json:"version"` // the new version, or the current one when unchanged
	Changed bool   `json:"changed"` // false: the same as the current version, nothing recorded
}

// PutWorkflows stores a set of workflows, which came through the API, all
// or none: the new version of each changed one in one frame of the log.
// A name given twice, or a workflow managed by a file of the --workflows
// folder (ErrConflict naming it), refuses the whole set.
func (e *Engine) PutWorkflows(set []WorkflowSource) ([]PutResult, error) {
	seen := make(map[string]bool, len(set))
	for _, w := range set {
		if seen[w.Spec.Name] {
			return nil, fmt.Errorf("%w: workflow %q is given twice", ErrInvalid, w.Spec.Name)
		}
		seen[w.Spec.Name] = true
		if err := validateExecutors(w.Spec, "workflow "+w.Spec.Name); err != nil {
			return nil, err
		}
	}
	v, err := e.doAll(func(st *replay.State, now int64) ([]replay.Record, any, error) {
		var recs []replay.Record
		results := make([]PutResult, 0, len(set))
		for _, w := range set {
			if err := e.refuseManaged(st, w.Spec.Name, "replace"); err != nil {
				return nil, nil, err
			}
			r := PutResult{Name: w.Spec.Name}
			if rec := putRecord(st, w.Spec, w.Source, "", now); rec != nil {
				recs = append(recs, rec)
				r.Version, r.Changed = rec.Version, true
			} else {
				r.Version = st.Workflows[w.Spec.Name].Version
			}
			results = append(results, r)
		}
		return recs, results, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]PutResult), nil
}

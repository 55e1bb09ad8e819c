package engine

import (
	"fmt"

	"github.com/orkwal/orkwal/replay"
)

// A run with a big fan-out is a big answer: each instance is a task of
// its view (GET /runs/{id} is megabytes for 20,000 instances). A page that
// follows such a run reads it summarised instead (AppendRunSummary: each
// fan-out as one task counting its instances by status) and its instances
// a page at a time (AppendInstances): each costs what it shows, not the
// fan-out's size.

// specTasks is r's tasks as its workflow defines them: a run's spec tasks
// come first in its tasks, its instances after them.
func specTasks(r *replay.Run) []*replay.Task {
	return r.Tasks[:min(len(r.Tasks), len(r.Spec.Tasks))]
}

// specTask is r's task name as its workflow defines it (nil: none).
func specTask(r *replay.Run, name string) *replay.Task {
	for _, t := range specTasks(r) {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// AppendRunSummary appends the compact JSON of run id's view as AppendRun
// does, but with its fan-outs summarised: its tasks are those its workflow
// defines (no instance), each fan-out with its instance_counts and
// instances_started_at and without its output (the list of its instances'
// outputs). O(the workflow's tasks), however many instances.
func (e *Engine) AppendRunSummary(dst []byte, id string) ([]byte, error) {
	return e.appendRun(dst, id, true)
}

// AppendInstances appends, as a JSON array of tasks, the instances of run
// id's fan-out name whose index is above after (-1: from the first), at
// most limit of them, and says whether more follow: O(limit) (a node lists
// its instances by index), however many it has. A fan-out that has not
// expanded yet has none.
func (e *Engine) AppendInstances(dst []byte, id, name string, after, limit int) ([]byte, bool, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	r, ok := e.state.Runs[id]
	if !ok {
		return dst, false, fmt.Errorf("%w: run %q", ErrNotFound, id)
	}
	node := specTask(r, name)
	switch {
	case node == nil:
		return dst, false, fmt.Errorf("%w: run %s has no task %q", ErrNotFound, id, name)
	case !node.IsNode():
		return dst, false, fmt.Errorf("%w: task %s of run %s is not a fan-out: it has no instances", ErrNotFound, name, id)
	}
	from := min(max(after+1, 0), len(node.Instances))
	to := min(from+limit, len(node.Instances))
	page := make([]*replay.Task, 0, to-from)
	for _, i := range node.Instances[from:to] {
		page = append(page, r.Tasks[i])
	}
	dst, err := e.appendTasks(dst, r, page, false)
	return dst, to < len(node.Instances), err
}

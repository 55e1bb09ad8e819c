package engine

import "github.com/orkwal/orkwal/replay"

// Fan-outs read for GET /events?instances=counts, which sends a fan-out's
// instances counted by status rather than each instance's events: its
// feed keeps each instance's status, and after a write's events reads the
// statuses of the instances they were about (ReadFanOuts), so that the
// counts cost what the events did, not the fan-out's size.

// FanOuts reads the state's fan-outs; valid only inside ReadFanOuts' fn.
type FanOuts struct{ st *replay.State }

// FanOut is one expanded fan-out of a run; valid only inside ReadFanOuts'
// fn.
type FanOut struct {
	node *replay.Task
}

// ReadFanOuts calls fn with the state read-locked: every entry whose
// events were published is applied, and no later one.
func (e *Engine) ReadFanOuts(fn func(FanOuts)) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	fn(FanOuts{e.state})
}

// Names is the names of run's expanded fan-outs, in its workflow's order.
func (f FanOuts) Names(run string) []string {
	var names []string
	for _, t := range f.nodes(run) { // spec tasks: never an instance
		if t.Expanded {
			names = append(names, t.Name)
		}
	}
	return names
}

// FanOut is run's fan-out name, once expanded (false: no such run, or no
// such expanded fan-out in it).
func (f FanOuts) FanOut(run, name string) (FanOut, bool) {
	r := f.st.Runs[run]
	if r == nil {
		return FanOut{}, false
	}
	t := specTask(r, name) // a spec task: never an instance
	if t == nil {
		return FanOut{}, false
	}
	return FanOut{t}, t.Expanded
}

// nodes is run's tasks as its workflow defines them, nil if there is no
// such run.
func (f FanOuts) nodes(run string) []*replay.Task {
	r := f.st.Runs[run]
	if r == nil {
		return nil
	}
	return specTasks(r)
}

// Workflow is the workflow of the fan-out's run.
func (n FanOut) Workflow() string { return n.node.Run.Workflow }

// Len is the number of its instances.
func (n FanOut) Len() int { return len(n.node.Instances) }

// Status is instance i's status (0 <= i < Len()), as GET /runs/{id} shows
// it.
func (n FanOut) Status(i int) string {
	return string(n.node.Run.Tasks[n.node.Instances[i]].Status)
}

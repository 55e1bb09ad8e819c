package replay

// A fan-out node's instances counted by status, and when the first of them
// was dispatched: what a run's page shows of a fan-out (GET /runs/{id}'s
// instance_counts and instances_started_at) without reading each of its
// instances, however many there are. Derived: kept by every status change
// of an instance (setTask) and every dispatch of one, recomputed from the
// instances by recountNodes (boot, rerun, mark); never encoded.

// instStatuses are the task statuses in the order instStats counts them.
var instStatuses = [...]TaskStatus{Pending, Dispatched, Running, Success, Failed, Skipped, Cancelled}

// instStats is what a node knows of its instances; nil until it expands.
type instStats struct {
	byStatus [len(instStatuses)]int32
	first    int64 // the earliest dispatch of any instance (0: none yet)
}

// statusIndex is st's place in instStatuses (-1: none): a switch, as it
// runs at every change of an instance's status.
func statusIndex(st TaskStatus) int {
	switch st {
	case Pending:
		return 0
	case Dispatched:
		return 1
	case Running:
		return 2
	case Success:
		return 3
	case Failed:
		return 4
	case Skipped:
		return 5
	case Cancelled:
		return 6
	}
	return -1
}

// count adds delta instances of status st.
func (c *instStats) count(st TaskStatus, delta int32) {
	if i := statusIndex(st); i >= 0 {
		c.byStatus[i] += delta
	}
}

// dispatched notes a dispatch of an instance at at.
func (c *instStats) dispatched(at int64) {
	if at != 0 && (c.first == 0 || at < c.first) {
		c.first = at
	}
}

// instanceMoved keeps the counts of t's node, if t is an instance, as t
// goes from its status to st.
func instanceMoved(t *Task, st TaskStatus) {
	if t.Parent < 0 {
		return
	}
	if c := t.Run.Tasks[t.Parent].inst; c != nil {
		c.count(t.Status, -1)
		c.count(st, +1)
	}
}

// instanceDispatched notes t's dispatch at at in its node's counts, if t
// is an instance.
func instanceDispatched(t *Task, at int64) {
	if t.Parent < 0 {
		return
	}
	if c := t.Run.Tasks[t.Parent].inst; c != nil {
		c.dispatched(at)
	}
}

// recountInstances sets n's counts from its instances (n is expanded and
// owns its taskEnd).
func recountInstances(n *Task) {
	c := &instStats{}
	for _, i := range n.Instances {
		t := n.Run.Tasks[i]
		c.count(t.Status, +1)
		c.dispatched(t.DispatchedAt)
		if len(t.Attempts) > 0 {
			c.dispatched(t.Attempts[0].StartedAt)
		}
	}
	n.inst = c
}

// InstanceCounts calls fn with each status a node's instances have and
// their number, in the order of the task lifecycle: O(statuses), however
// many instances. Nothing is called for a task that is not an expanded
// fan-out.
func (t *Task) InstanceCounts(fn func(status TaskStatus, n int)) {
	if !t.Expanded || t.inst == nil {
		return
	}
	for i, n := range t.inst.byStatus {
		if n > 0 {
			fn(instStatuses[i], int(n))
		}
	}
}

// InstancesStartedAt is the earliest dispatch of any of a node's instances
// (Unix nanoseconds; 0 before the first, or for a task that is not an
// expanded fan-out).
func (t *Task) InstancesStartedAt() int64 {
	if !t.Expanded || t.inst == nil {
		return 0
	}
	return t.inst.first
}

package api

import (
	"time"

	"github.com/orkwal/orkwal/engine"
)

// ?instances=counts: a fan-out's instances are sent as one instance_counts
// event a write (its instances counted by status), not as each instance's
// events: what a run page draws (a fan-out is one node with its counts),
// at a cost per write that follows the events, not the fan-out's size.
//
// A window keeps each fan-out's instances' statuses as it last read them
// (fanCount). After a write's events it reads, in one pass under the
// engine's read lock, the statuses of the instances those events were
// about (and every instance of a fan-out it has not seen yet), so the
// counts it sends are the state's when it is written: what GET /runs/{id}
// shows then, for every instance whose events were sent.
//
// An instance's status can change without an event of its own: a run's
// cancel ends its pending instances, a retry sets failed ones pending
// again. After run_cancel_requested and run_retried every fan-out of the
// run is counted again, each as an instance_counts event with no id line
// (a client's last id stays the run event's). A resumed stream (replay)
// counts every fan-out of a run again after the run's first event it
// replays (before it), so a client that lost such an id-less event after
// its last id has its counts again.

// fanKey names one fan-out: its run and its name.
type fanKey struct{ run, name string }

// fanCount is what a window knows of one fan-out.
type fanCount struct {
	key      fanKey
	workflow string
	status   []string       // each instance's, as last read; nil: not read yet
	counts   map[string]int // instances by status, zeros left out
	touched  []int          // instances whose events came since the last read
	slot     int            // its placeholder in pending, +1 (0: none this window)
}

// fanSlot is a placeholder in a window's pending spans for counts to send:
// one fan-out's (with the id of its latest instance event), or, node nil,
// those of every fan-out of run (no id).
type fanSlot struct {
	node  *fanCount
	run   string
	id    string
	at    time.Time
	nodes []*fanCount // run's fan-outs, found when the window is read
}

// fanCounts is a window's fan-outs (nil unless filter.counts).
type fanCounts struct {
	eng    *engine.Engine
	replay bool                            // a resumed stream's replay: count a run's fan-outs after its first event
	nodes  map[string]map[string]*fanCount // by run, then fan-out name
	last   *fanCount                       // the fan-out of the last instance event: the next is likely its
	seen   map[string]bool                 // replay: the runs whose fan-outs were counted
	ended  []string                        // runs finished in this window: forgotten once it is taken
	buf    []byte
	reads  int // instances' statuses read so far (tests)
}

func newFanCounts(eng *engine.Engine, replay bool) *fanCounts {
	return &fanCounts{eng: eng, replay: replay, nodes: map[string]map[string]*fanCount{}, seen: map[string]bool{}}
}

// node is k's fan-out, known from now on (until its run ends).
func (fc *fanCounts) node(k fanKey) *fanCount {
	byName := fc.nodes[k.run]
	if byName == nil {
		byName = map[string]*fanCount{}
		fc.nodes[k.run] = byName
	}
	n := byName[k.name]
	if n == nil {
		n = &fanCount{key: k}
		byName[k.name] = n
	}
	return n
}

// instance places the counts of ev's fan-out at ev (moving them there from
// earlier in the window): an instance's event is sent as its fan-out's
// counts. Events of one fan-out mostly come in a row: the placeholder
// already last in the window only takes ev's id.
func (st *eventWindow) instance(ev *engine.Event) {
	fc := st.fans
	n := fc.last
	if n == nil || n.key.run != ev.Run || n.key.name != ev.FanOut {
		n = fc.node(fanKey{ev.Run, ev.FanOut})
		fc.last = n
	}
	n.touched = append(n.touched, ev.Instance)
	if n.slot > 0 && n.slot == len(st.pending) {
		s := &st.slots[st.pending[n.slot-1].fan-1]
		s.id, s.at = ev.ID, ev.At
		return
	}
	if n.slot > 0 {
		st.pending[n.slot-1].gone = true
	}
	st.slots = append(st.slots, fanSlot{node: n, id: ev.ID, at: ev.At})
	st.pending = append(st.pending, span{alone: true, fan: len(st.slots)})
	n.slot = len(st.pending)
}

// runEvent follows a run event ev already placed: after one that changes
// instances without their own events, the counts of every fan-out of
// the run.
func (st *eventWindow) runEvent(ev *engine.Event) {
	if ev.Type == "run_finished" {
		st.fans.ended = append(st.fans.ended, ev.Run)
	}
	if ev.Type == "run_cancel_requested" || ev.Type == "run_retried" {
		st.countRun(ev)
	}
}

// replayed comes before each event of a replay: before a run's first, the
// counts of every fan-out of the run, as they are now.
func (st *eventWindow) replayed(ev *engine.Event) {
	if fc := st.fans; fc.replay && ev.Run != "" && !fc.seen[ev.Run] {
		fc.seen[ev.Run] = true
		st.countRun(ev)
	}
}

// countRun places the counts of every fan-out of ev's run, with no id.
func (st *eventWindow) countRun(ev *engine.Event) {
	st.slots = append(st.slots, fanSlot{run: ev.Run, at: ev.At})
	st.pending = append(st.pending, span{alone: true, fan: len(st.slots)})
}

// read brings the window's fan-outs up to the state, in one read lock:
// the instances touched, or all of a fan-out new to it or counted again.
func (fc *fanCounts) read(slots []fanSlot) {
	fc.eng.ReadFanOuts(func(f engine.FanOuts) {
		for i := range slots {
			s := &slots[i]
			if s.node != nil {
				fc.readOne(f, s.node, false)
				continue
			}
			for _, name := range f.Names(s.run) {
				n := fc.node(fanKey{s.run, name})
				fc.readOne(f, n, true)
				s.nodes = append(s.nodes, n)
			}
		}
	})
}

// readOne reads n's touched instances from f, or every one when all, when
// n was never read, or when its instances are not those it knew (a retry
// expanded it again).
func (fc *fanCounts) readOne(f engine.FanOuts, n *fanCount, all bool) {
	defer func() { n.touched = n.touched[:0] }()
	fo, ok := f.FanOut(n.key.run, n.key.name)
	if !ok {
		n.status, n.counts = nil, nil
		return
	}
	n.workflow = fo.Workflow()
	if all || n.status == nil || len(n.status) != fo.Len() {
		n.status, n.counts = make([]string, fo.Len()), map[string]int{}
		fc.reads += len(n.status)
		for i := range n.status {
			n.status[i] = fo.Status(i)
			n.counts[n.status[i]]++
		}
		return
	}
	for _, i := range n.touched {
		if i < 0 || i >= len(n.status) {
			continue
		}
		fc.reads++
		if s := fo.Status(i); s != n.status[i] {
			n.uncount(n.status[i])
			n.status[i] = s
			n.counts[s]++
		}
	}
}

func (n *fanCount) uncount(s string) {
	if n.counts[s]--; n.counts[s] <= 0 {
		delete(n.counts, s)
	}
}

// frame is the counts event of slot s: one per fan-out it names.
func (fc *fanCounts) frame(s *fanSlot) []byte {
	fc.buf = fc.buf[:0]
	if s.node != nil {
		return fc.appendCounts(s.node, s.id, s.at)
	}
	for _, n := range s.nodes {
		fc.appendCounts(n, "", s.at)
	}
	return fc.buf
}

// appendCounts frames n's counts as an instance_counts event; with no id,
// the frame has no id line (the client's last id stays as it was).
func (fc *fanCounts) appendCounts(n *fanCount, id string, at time.Time) []byte {
	if n.status == nil { // no such fan-out any more (the run was pruned)
		return fc.buf
	}
	ev := engine.Event{ID: id, Type: "instance_counts", Run: n.key.run, Workflow: n.workflow, Task: n.key.name,
		Instances: len(n.status), Counts: n.counts, At: at}
	fc.buf = frameEvent(fc.buf, &ev)
	return fc.buf
}

// taken forgets the window's placeholders, and the fan-outs of the runs
// that ended in it (a retry counts them again).
func (fc *fanCounts) taken(slots []fanSlot) {
	for i := range slots {
		if n := slots[i].node; n != nil {
			n.slot = 0
		}
	}
	fc.last = nil
	for _, run := range fc.ended {
		delete(fc.nodes, run) // not a pass over every run's fan-outs an ended run
	}
	fc.ended = fc.ended[:0]
}

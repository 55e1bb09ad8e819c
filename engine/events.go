package engine

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/wal"
)

// Events: one Event per durable run, task or workflow transition, for GET
// /events. An event's ID is its record's position in the log, "<WAL
// index>.<position of the record in that entry>", so a client that lost
// its connection asks for what follows an ID and gets it from the log
// (EventsAfter), exactly as it was sent live: both are made by eventsOf
// from the entry's records and the names the state holds for them.
//
// Live events are handed over by the loop after each commit (publish), to
// subscribers' buffered channels, without ever waiting: a subscriber whose
// buffer is full is dropped (its channel closed, Dropped set) and can
// reconnect from its last ID. With no subscriber, a commit costs one
// uncontended lock.

// Event is one transition, as GET /events sends it.
type Event struct {
	ID       string `json:"id"`
	Type     string `json:"type"` // the record's kind: run_created, task_finished, ...; run_finished
	Run      string `json:"run,omitempty"`
	Workflow string `json:"workflow,omitempty"`
	Task     string `json:"task,omitempty"` // the task's key in the run: "process" or "process[3]"
	// TaskSeq is a task event's task identity (its creation order across
	// runs): cheaper to compare than Run and Task, and beside Task so that
	// a stream's filter reads one cache line. 0 when Task is "".
	TaskSeq uint64 `json:"-"`
	// FanOut and Instance say which fan-out's instance a task event is
	// about (its node's name, its index); FanOut is "" for any other event.
	FanOut   string `json:"-"`
	Instance int    `json:"-"`
	Attempt  int    `json:"attempt,omitempty"`
	Status   string `json:"status,omitempty"` // the task's (task events) or run's (run events) status it implies
	ExitCode *int   `json:"exit_code,omitempty"`
	Error    string `json:"error,omitempty"`
	Paused   *bool  `json:"paused,omitempty"` // schedule_paused
	// Instances and Counts are an instance_counts event's (GET /events'
	// ?instances=counts makes them, not the engine): the fan-out's
	// instances, and how many are in each status.
	Instances int            `json:"instances,omitempty"`
	Counts    map[string]int `json:"counts,omitempty"`
	At        time.Time      `json:"at"`
	Pos       EventPos       `json:"-"`
}

// EventPos is a position in the log: an entry's index and a record's
// position in it; End marks the run_finished event that follows the
// record that ended a run. The zero EventPos is before every event.
type EventPos struct {
	Index uint64
	Pos   int
	End   bool
}

// EntryEnd as a Pos is after every record of the entry: the ID "12" is
// the end of entry 12 (a reset event's).
const EntryEnd = math.MaxInt32

// String is the position as an event ID: "12.3", "12.3.1" for End, "12"
// for the end of entry 12.
func (p EventPos) String() string {
	var b [48]byte // one allocation, the string's: every event has an id
	out := strconv.AppendUint(b[:0], p.Index, 10)
	if p.Pos != EntryEnd {
		out = strconv.AppendInt(append(out, '.'), int64(p.Pos), 10)
		if p.End {
			out = append(out, ".1"...)
		}
	}
	return string(out)
}

// Before reports whether p comes before q in the log.
func (p EventPos) Before(q EventPos) bool {
	if p.Index != q.Index {
		return p.Index < q.Index
	}
	if p.Pos != q.Pos {
		return p.Pos < q.Pos
	}
	return !p.End && q.End
}

// ParseEventPos reads an event ID ("12.3", "12.3.1" or "12").
func ParseEventPos(s string) (EventPos, error) {
	bad := fmt.Errorf("event id %q: not an id of this server (<index>.<position>, e.g. 12.0)", s)
	parts := strings.Split(s, ".")
	if len(parts) == 1 {
		index, err := strconv.ParseUint(s, 10, 64)
		if err != nil || strconv.FormatUint(index, 10) != s {
			return EventPos{}, bad
		}
		return EventPos{Index: index, Pos: EntryEnd}, nil
	}
	if len(parts) > 3 || (len(parts) == 3 && parts[2] != "1") {
		return EventPos{}, bad
	}
	index, err1 := strconv.ParseUint(parts[0], 10, 64)
	pos, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || pos < 0 || strconv.Itoa(pos) != parts[1] {
		return EventPos{}, bad
	}
	return EventPos{Index: index, Pos: pos, End: len(parts) == 3}, nil
}

// ErrEventsGone: the events after a position are no longer in the log
// (compaction removed them), or the position is not one of this log's.
var ErrEventsGone = errors.New("engine: events no longer in the log")

// eventsOf turns one log entry's records into events, naming runs and
// tasks from st (a run's workflow and its tasks' keys never change). A run
// that ended in the entry, and is still ended as it did, gets a
// run_finished event after the last of its records with the end's time.
// Without tasks, task records make no event (nobody takes them); the one
// that ended its run is still followed by the run_finished.
func eventsOf(st *replay.State, index uint64, recs []replay.Record, tasks bool, out []Event) []Event {
	runs := runLookup{st: st}
	for i, r := range recs {
		pos := EventPos{Index: index, Pos: i}
		var ev Event
		if run, at, ok := taskRecord(r); ok && !tasks {
			ev = Event{Run: run, At: ts(at)} // not sent: it may end its run
		} else if ev, ok = eventOf(&runs, r); ok {
			ev.ID, ev.Pos = pos.String(), pos
			out = append(out, ev)
		} else {
			continue
		}
		if run := runs.get(ev.Run); run != nil && endsRun(run, recs[i+1:], ev) {
			end := EventPos{Index: index, Pos: i, End: true}
			out = append(out, Event{ID: end.String(), Pos: end, Type: "run_finished", Run: run.ID,
				Workflow: run.Workflow, Status: string(run.Status), At: ts(run.FinishedAt)})
		}
	}
	return out
}

// endsRun reports whether ev, made from a record of run, is the one that
// ended it: the run is finished at ev's time and no later record of the
// entry is about it.
func endsRun(run *replay.Run, rest []replay.Record, ev Event) bool {
	if !run.Status.Finished() || run.FinishedAt != ev.At.UnixNano() || ev.Type == "run_created" {
		return false
	}
	for _, r := range rest {
		if replay.RunOf(r) == run.ID {
			return false
		}
	}
	return true
}

// taskRecord is the run and time of a record that makes a task event.
func taskRecord(r replay.Record) (run string, at int64, ok bool) {
	switch r := r.(type) {
	case *replay.TaskDispatched:
		return r.Run, r.At, true
	case *replay.TaskStarted:
		return r.Run, r.At, true
	case *replay.TaskFinished:
		return r.Run, r.At, true
	case *replay.TaskInterrupted:
		return r.Run, r.At, true
	case *replay.TaskMarked:
		return r.Run, r.At, true
	case *replay.TaskDeferred:
		return r.Run, r.At, true
	}
	return "", 0, false
}

// eventOf is the event of one record, if it has one.
func eventOf(runs *runLookup, r replay.Record) (Event, bool) {
	switch r := r.(type) {
	case *replay.TaskDispatched:
		return taskEvent(runs, r.TaskRef, r.Kind(), r.Attempt, "dispatched", r.At), true
	case *replay.TaskStarted:
		return taskEvent(runs, r.TaskRef, r.Kind(), r.Attempt, "running", r.At), true
	case *replay.TaskFinished:
		ev := taskEvent(runs, r.TaskRef, r.Kind(), r.Attempt, "failed", r.At)
		if r.OK {
			ev.Status = "success"
		}
		code := r.ExitCode
		ev.ExitCode, ev.Error = &code, r.Error
		return ev, true
	case *replay.TaskInterrupted:
		return taskEvent(runs, r.TaskRef, r.Kind(), r.Attempt, "interrupted", r.At), true
	case *replay.TaskMarked:
		ev := taskEvent(runs, r.TaskRef, r.Kind(), 0, "failed", r.At)
		if r.OK {
			ev.Status = "success"
		}
		ev.Error = replay.MarkedNote(r.OK)
		return ev, true
	case *replay.TaskDeferred:
		return taskEvent(runs, r.TaskRef, r.Kind(), r.Attempt, "running", r.At), true
	case *replay.RunCreated:
		return runEvent(runs, r.ID, r.Workflow, "run_created", "pending", r.At), true
	case *replay.CronFired:
		if r.RunID == "" {
			return Event{}, false
		}
		return runEvent(runs, r.RunID, r.Workflow, "run_created", "pending", r.At), true
	case *replay.RunCancelRequested:
		return runEvent(runs, r.ID, "", r.Kind().String(), "cancelling", r.At), true
	case *replay.RunRetried:
		return runEvent(runs, r.ID, "", r.Kind().String(), "pending", r.At), true
	case *replay.WorkflowPut:
		return Event{Type: r.Kind().String(), Workflow: r.Spec.Name, At: ts(r.At)}, true
	case *replay.WorkflowDeleted:
		return Event{Type: r.Kind().String(), Workflow: r.Name, At: ts(r.At)}, true
	case *replay.SchedulePaused:
		p := r.Paused
		return Event{Type: r.Kind().String(), Workflow: r.Workflow, Paused: &p, At: ts(r.At)}, true
	}
	return Event{}, false
}

// runLookup finds runs in st, keeping the last one found: the records of
// an entry are mostly about one run, and a big state's map is slow to
// search (two lookups an event, before).
type runLookup struct {
	st  *replay.State
	id  string
	run *replay.Run
}

func (l *runLookup) get(id string) *replay.Run {
	if l.run == nil || id != l.id {
		l.id, l.run = id, l.st.Runs[id]
	}
	return l.run
}

func taskEvent(runs *runLookup, ref replay.TaskRef, k replay.Kind, attempt int, status string, at int64) Event {
	ev := Event{Type: k.String(), Run: ref.Run, Attempt: attempt, Status: status, At: ts(at)}
	if run := runs.get(ref.Run); run != nil && ref.Task >= 0 && ref.Task < len(run.Tasks) {
		t := run.Tasks[ref.Task]
		ev.Workflow, ev.Task, ev.TaskSeq = t.Run.Workflow, t.Key(), t.Seq
		if t.Parent >= 0 {
			ev.FanOut, ev.Instance = t.Name, t.Instance
		}
	}
	return ev
}

func runEvent(runs *runLookup, id, wf, typ, status string, at int64) Event {
	if run := runs.get(id); run != nil {
		wf = run.Workflow
	}
	return Event{Type: typ, Run: id, Workflow: wf, Status: status, At: ts(at)}
}

// EventBatch is the events of one log entry. Framed encodes each once, for
// every subscriber that sends them.
type EventBatch struct {
	Events []Event
	once   sync.Once
	framed Frames
}

// Frames is a batch's events framed one after another in All: event i is
// All[Start(i):Ends[i]], so that a run of events is one slice of All.
type Frames struct {
	All  []byte
	Ends []int
}

// Start is where event i's frame begins in All.
func (f Frames) Start(i int) int {
	if i == 0 {
		return 0
	}
	return f.Ends[i-1]
}

// Framed returns each event as frame makes it (GET /events: an SSE
// event, with its JSON encoding, AppendEventJSON), made on the first
// call, in one array. Every caller passes the same frame.
func (b *EventBatch) Framed(frame func(dst []byte, ev *Event) []byte) Frames {
	b.once.Do(func() {
		ends := make([]int, len(b.Events))
		var all []byte
		for i := range b.Events {
			all = frame(all, &b.Events[i])
			ends[i] = len(all)
			if i == 0 { // the first as a measure of the others, with room to spare
				all = append(make([]byte, 0, len(all)*len(b.Events)*9/8+64), all...)
			}
		}
		b.framed = Frames{All: all[:len(all):len(all)], Ends: ends}
	})
	return b.framed
}

// Subscription receives the events committed after From, a batch per log
// entry, in order. C is closed when the subscription ends: Unsubscribe,
// the engine stopping, or the subscriber falling behind (Dropped).
//
// A subscription may be shared by several consumers (GET /events streams
// of one filter share one): Share and Release count them, so that
// EventSubscribers counts consumers, and a shared subscription dropped
// for falling behind counts each of its consumers dropped.
type Subscription struct {
	C    <-chan *EventBatch
	From uint64 // the last entry committed before the subscription began

	c         chan *EventBatch
	dropped   atomic.Bool
	consumers int  // guarded by the broker's mu; 1 from Subscribe
	runsOnly  bool // SubscribeRuns
}

// Dropped reports whether the subscription ended because its buffer was
// full. Read it after C is closed.
func (s *Subscription) Dropped() bool { return s.dropped.Load() }

// broker hands committed events to subscribers. mu guards everything; the
// loop takes it once per commit.
type broker struct {
	mu      sync.Mutex
	last    uint64 // the last entry published
	subs    map[*Subscription]bool
	tasks   int   // the subscriptions that take task events: with none, a commit makes none
	dropped int64 // subscribers dropped for being slow, for metrics
	closed  bool
}

// Subscribe starts receiving the events of every later commit; buf is how
// many entries may wait unread before the subscriber is dropped.
func (e *Engine) Subscribe(buf int) *Subscription { return e.subscribe(buf, false) }

// SubscribeRuns is Subscribe for run and workflow events: its batches
// carry task events only when another subscription takes them (so the
// subscriber leaves them out itself), and while every subscription is so
// a commit makes none.
func (e *Engine) SubscribeRuns(buf int) *Subscription { return e.subscribe(buf, true) }

func (e *Engine) subscribe(buf int, runsOnly bool) *Subscription {
	b := &e.events
	c := make(chan *EventBatch, max(buf, 1))
	s := &Subscription{C: c, c: c, consumers: 1, runsOnly: runsOnly}
	b.mu.Lock()
	defer b.mu.Unlock()
	s.From = b.last
	if b.closed {
		close(c)
		return s
	}
	if b.subs == nil {
		b.subs = map[*Subscription]bool{}
	}
	b.subs[s] = true
	if !runsOnly {
		b.tasks++
	}
	return s
}

// end removes s and closes its channel (b.mu held).
func (b *broker) end(s *Subscription) {
	delete(b.subs, s)
	close(s.c)
	if !s.runsOnly {
		b.tasks--
	}
}

// Unsubscribe ends s (its channel is closed); it may be called more than once.
func (e *Engine) Unsubscribe(s *Subscription) {
	b := &e.events
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs[s] {
		b.end(s)
	}
}

// Share counts one more consumer of s; false when s has ended (it is
// not counted).
func (e *Engine) Share(s *Subscription) bool {
	b := &e.events
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.subs[s] {
		return false
	}
	s.consumers++
	return true
}

// Release counts one consumer of s fewer (the last one is Unsubscribe's);
// slow says that the consumer was dropped for falling behind. Once s has
// ended it counts nothing: its end counted its consumers.
func (e *Engine) Release(s *Subscription, slow bool) {
	b := &e.events
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.subs[s] || s.consumers == 0 {
		return
	}
	s.consumers--
	if slow {
		b.dropped++
	}
}

// publish hands the events of the entry just committed at index to every
// subscriber, never waiting. Called on the loop (or at boot and recovery)
// with the state's write lock held, after recs were applied.
func (e *Engine) publish(index uint64, recs []replay.Record) {
	b := &e.events
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last = index
	if len(b.subs) == 0 {
		return
	}
	var evs []Event // without task events, a few run and workflow events
	if b.tasks > 0 {
		evs = make([]Event, 0, len(recs)+1)
	}
	evs = eventsOf(e.state, index, recs, b.tasks > 0, evs)
	if len(evs) == 0 {
		return
	}
	batch := &EventBatch{Events: evs}
	for s := range b.subs {
		select {
		case s.c <- batch:
		default: // slow: drop it, it reconnects from its last id
			s.dropped.Store(true)
			b.end(s)
			b.dropped += int64(s.consumers)
		}
	}
}

// closeEvents ends every subscription: the engine stopped.
func (e *Engine) closeEvents() {
	b := &e.events
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for s := range b.subs {
		b.end(s)
	}
}

// EventsEnd is the last log entry whose events were published.
func (e *Engine) EventsEnd() uint64 {
	b := &e.events
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

// EventSubscribers is how many subscribers are open (a shared
// subscription's consumers each), and how many were dropped for being
// slow since boot.
func (e *Engine) EventSubscribers() (open int, dropped int64) {
	b := &e.events
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		open += s.consumers
	}
	return open, b.dropped
}

// EventsAfter calls fn with the events after pos up to the entry upto
// (included), read from the log, a batch per entry. It returns
// ErrEventsGone when some of them are no longer in the log (compaction
// removed them) or pos is past the log's end. The zero pos means from the
// log's first entry, which must still be entry 1.
func (e *Engine) EventsAfter(pos EventPos, upto uint64, fn func(*EventBatch) error) error {
	dir := Layout(e.cfg.DataDir).WAL()
	first, err := wal.FirstIndexDir(dir)
	if err != nil {
		return fmt.Errorf("engine: events: %w", err)
	}
	from := pos.Index
	if from == 0 || pos.Pos == EntryEnd {
		from++
	}
	switch {
	case pos.Index > upto:
		return ErrEventsGone // not this log's
	case from > upto:
		return nil // nothing missed
	case first > from:
		return ErrEventsGone
	}
	err = wal.ReplayDir(dir, from, func(index uint64, payloads [][]byte) error {
		if index > upto {
			return errEventsDone
		}
		recs := make([]replay.Record, 0, len(payloads))
		for i, p := range payloads {
			r, err := replay.Decode(p)
			if err != nil {
				return fmt.Errorf("engine: events: entry %d record %d: %w", index, i, err)
			}
			recs = append(recs, r)
		}
		e.mu.RLock()
		evs := eventsOf(e.state, index, recs, true, make([]Event, 0, len(recs)+1))
		e.mu.RUnlock()
		evs = after(evs, pos)
		if len(evs) > 0 {
			if err := fn(&EventBatch{Events: evs}); err != nil {
				return err
			}
		}
		if index == upto {
			return errEventsDone
		}
		return nil
	})
	switch {
	case errors.Is(err, errEventsDone), err == nil:
		return nil
	case errors.Is(err, os.ErrNotExist):
		return ErrEventsGone // a segment was removed while being read
	}
	var ce *wal.CorruptError
	if errors.As(err, &ce) && ce.Index <= from {
		return ErrEventsGone
	}
	return err
}

var errEventsDone = errors.New("events read")

// after keeps the events of evs strictly after pos.
func after(evs []Event, pos EventPos) []Event {
	out := evs[:0]
	for _, ev := range evs {
		if pos.Before(ev.Pos) {
			out = append(out, ev)
		}
	}
	return out
}

package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/replay/workflow"
)

// GET /events: server-sent events, one per durable run, task or workflow
// transition (engine.Event), filterable by ?run= and ?workflow=. Each
// event's id is its position in the log; a client that reconnects with
// Last-Event-ID gets the events it missed, read from the log, then the
// live ones. When those are gone (compaction), it gets one "reset" event:
// reload, then follow from the reset's id.

const (
	// DefaultMaxSubscribers bounds the /events streams served at once
	// unless WithMaxSubscribers says otherwise; more answer 429.
	DefaultMaxSubscribers = 64
	// eventBuffer is how many log entries' events may wait unsent for one
	// stream before it is dropped (the engine never waits for a stream).
	eventBuffer = 4096
	// eventFlushEvery is the shortest time between two writes of a
	// stream (see followEvents).
	eventFlushEvery = 100 * time.Millisecond
	// defaultHeartbeat is how often an idle stream gets a comment line, so
	// that proxies do not close it.
	defaultHeartbeat = 15 * time.Second
)

// WithMaxSubscribers bounds the /events streams served at once (n >= 1).
func WithMaxSubscribers(n int) Option {
	return func(s *Server) {
		if n >= 1 {
			s.maxSubscribers = n
		}
	}
}

// WithHeartbeat sets how often an /events stream gets a heartbeat comment
// (d > 0).
func WithHeartbeat(d time.Duration) Option {
	return func(s *Server) {
		if d > 0 {
			s.heartbeat = d
		}
	}
}

// eventFilter selects the events a stream sends.
type eventFilter struct {
	run, workflow string
	noTasks       bool // ?tasks=0: run and workflow events only
	latest        bool // ?latest=1: a task's latest event of each write only
}

func (f eventFilter) match(ev *engine.Event) bool {
	return (f.run == "" || ev.Run == f.run) && (f.workflow == "" || ev.Workflow == f.workflow) &&
		!(f.noTasks && ev.Task != "")
}

func parseEventsRequest(r *http.Request) (eventFilter, *engine.EventPos, error) {
	var f eventFilter
	q := r.URL.Query()
	if v := q.Get("run"); v != "" {
		if err := checkRunID(v); err != nil {
			return f, nil, err
		}
		f.run = v
	}
	if v := q.Get("workflow"); v != "" {
		if !workflow.ValidName(v) {
			return f, nil, fmt.Errorf("workflow %q: %s", v, workflow.NameRule)
		}
		f.workflow = v
	}
	switch v := q.Get("tasks"); v {
	case "", "1", "true":
	case "0", "false":
		f.noTasks = true
	default:
		return f, nil, fmt.Errorf("tasks: must be 1, true, 0 or false, got %q", v)
	}
	switch v := q.Get("latest"); v {
	case "", "0", "false":
	case "1", "true":
		f.latest = true
	default:
		return f, nil, fmt.Errorf("latest: must be 1, true, 0 or false, got %q", v)
	}
	id := r.Header.Get("Last-Event-ID")
	if id == "" {
		return f, nil, nil
	}
	pos, err := engine.ParseEventPos(id)
	if err != nil {
		return f, nil, fmt.Errorf("Last-Event-ID: %w", err)
	}
	return f, &pos, nil
}

func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) {
	f, last, err := parseEventsRequest(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	select {
	case s.subscribers <- struct{}{}:
		defer func() { <-s.subscribers }()
	default:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, fmt.Sprintf(
			"too many event streams: %d are open, the daemon's limit; retry later", s.maxSubscribers))
		return
	}
	sub := s.eng.Subscribe(eventBuffer)
	defer s.eng.Unsubscribe(sub)
	st := &sseWriter{w: w, rc: http.NewResponseController(w), filter: f}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	// A browser reconnects after retry ms (its default is a few seconds).
	if st.send([]byte("retry: 1000\n: connected\n\n")) != nil {
		return
	}
	if last == nil {
		// An id without data: the client's position from the start, so a
		// reconnect before any event misses none.
		if st.send([]byte("id: "+engine.EventPos{Index: sub.From, Pos: engine.EntryEnd}.String()+"\n\n")) != nil {
			return
		}
	} else if !s.replayEvents(st, *last, sub.From) {
		return
	}
	s.followEvents(st, sub, r)
}

// replayEvents sends what followed last in the log up to the entry upto
// (live events follow it), or a reset when the log no longer has it. It
// says whether the stream goes on.
func (s *Server) replayEvents(st *sseWriter, last engine.EventPos, upto uint64) bool {
	err := s.eng.EventsAfter(last, upto, st.batch)
	if errors.Is(err, engine.ErrEventsGone) {
		pos := engine.EventPos{Index: upto, Pos: engine.EntryEnd}
		return st.event(pos.String(), "reset", []byte(`{"type":"reset","reason":"the events after `+
			last.String()+` are no longer in the log: reload, then follow from this id"}`)) == nil
	}
	if err != nil {
		s.log.Warn("events: replay from the log", "after", last.String(), "err", err)
		return false
	}
	return true
}

// followEvents sends live events until the client leaves, the daemon
// stops, or the stream falls behind (it is dropped: the client reconnects
// with its last id). A burst is sent at most once per eventFlushEvery: the
// first event after a quiet spell goes at once, the rest of a busy spell
// is gathered and written in one go, so that a stream costs a busy engine
// a few writes a second, not one per commit.
func (s *Server) followEvents(st *sseWriter, sub *engine.Subscription, r *http.Request) {
	beat := time.NewTicker(s.heartbeat)
	defer beat.Stop()
	gather := time.NewTimer(0)
	defer gather.Stop()
	<-gather.C
	var last time.Time
	for {
		select {
		case b, ok := <-sub.C:
			if !ok {
				st.ended(sub)
				return
			}
			st.add(b)
			if wait := eventFlushEvery - time.Since(last); wait > 0 {
				gather.Reset(wait)
				select {
				case <-gather.C:
				case <-r.Context().Done():
					return
				case <-s.quit:
					return
				}
			}
			if !st.drain(sub) {
				st.ended(sub)
				return
			}
			if st.flush() != nil {
				return
			}
			last = time.Now()
		case <-beat.C:
			if st.comment("heartbeat") != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.quit:
			return
		}
	}
}

// sseWriter writes server-sent events, each write under its own deadline.
type sseWriter struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	filter eventFilter
	buf    []byte
	// pending are the events added since the last flush, framed by it;
	// with filter.latest, slot is where each task's latest one is, and an
	// earlier one of the same task is left out (gone).
	pending []pendingEvent
	slot    map[taskKey]int
}

type pendingEvent struct {
	frame []byte // shared by every stream (EventBatch.Framed)
	gone  bool
}

// frameEvent is an event as every stream sends it.
func frameEvent(dst []byte, ev *engine.Event, data []byte) []byte {
	return appendEvent(dst, ev.ID, "", data)
}

type taskKey struct{ run, task string }

// batch sends the events of b that the filter selects, then flushes.
func (st *sseWriter) batch(b *engine.EventBatch) error {
	st.add(b)
	return st.flush()
}

// add frames the events of b that the filter selects, to be sent by flush.
func (st *sseWriter) add(b *engine.EventBatch) {
	var data [][]byte
	for i := range b.Events {
		ev := &b.Events[i]
		if !st.filter.match(ev) {
			continue
		}
		if data == nil {
			data = b.Framed(frameEvent)
		}
		if st.filter.latest && ev.Task != "" {
			k := taskKey{ev.Run, ev.Task}
			if j, ok := st.slot[k]; ok {
				st.pending[j].gone = true
			} else if st.slot == nil {
				st.slot = map[taskKey]int{}
			}
			st.slot[k] = len(st.pending)
		}
		st.pending = append(st.pending, pendingEvent{frame: data[i]})
	}
}

// drain adds every batch already waiting; false when the subscription
// ended (what was added is still sent).
func (st *sseWriter) drain(sub *engine.Subscription) bool {
	for {
		select {
		case b, ok := <-sub.C:
			if !ok {
				st.flush()
				return false
			}
			st.add(b)
		default:
			return true
		}
	}
}

// flush sends what add gathered.
func (st *sseWriter) flush() error {
	size := len(st.buf)
	for _, p := range st.pending {
		size += len(p.frame)
	}
	if size > cap(st.buf) {
		st.buf = append(make([]byte, 0, size), st.buf...)
	}
	for i, p := range st.pending {
		if !p.gone {
			st.buf = append(st.buf, p.frame...)
		}
		st.pending[i] = pendingEvent{}
	}
	st.pending = st.pending[:0]
	clear(st.slot)
	if len(st.buf) == 0 {
		return nil
	}
	err := st.send(st.buf)
	st.buf = st.buf[:0]
	return err
}

// ended says why a subscription ended, if the stream fell behind.
func (st *sseWriter) ended(sub *engine.Subscription) {
	st.flush()
	if sub.Dropped() {
		st.comment("dropped: this stream fell behind; reconnect with Last-Event-ID")
	}
}

func (st *sseWriter) event(id, name string, data []byte) error {
	return st.send(appendEvent(nil, id, name, data))
}

func (st *sseWriter) comment(text string) error { return st.send([]byte(": " + text + "\n\n")) }

func (st *sseWriter) send(b []byte) error {
	st.rc.SetWriteDeadline(time.Now().Add(streamWriteStall))
	if _, err := st.w.Write(b); err != nil {
		return err
	}
	return st.rc.Flush()
}

// appendEvent frames one event: data holds no newline (it is compact JSON).
func appendEvent(b []byte, id, name string, data []byte) []byte {
	b = append(b, "id: "...)
	b = append(b, id...)
	if name != "" {
		b = append(b, "\nevent: "...)
		b = append(b, name...)
	}
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

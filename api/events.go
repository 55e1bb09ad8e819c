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
// reload, then follow from the reset's id. Streams with one filter share
// a feed (events_feed.go).

const (
	// DefaultMaxSubscribers bounds the /events streams served at once
	// unless WithMaxSubscribers says otherwise; more answer 429.
	DefaultMaxSubscribers = 64
	// eventBuffer is how many log entries' events may wait unsent for one
	// stream before it is dropped (the engine never waits for a stream).
	eventBuffer = 4096
	// eventFlushEvery is the shortest time between two writes of a
	// feed (see feed.run).
	eventFlushEvery = 100 * time.Millisecond
	// defaultHeartbeat is how often an idle stream gets a comment line, so
	// that proxies do not close it.
	defaultHeartbeat = 15 * time.Second
	// writeChunk bounds a stream's write buffer: a burst larger than it
	// is written in several writes, flushed once.
	writeChunk = 64 << 10
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
	counts        bool // ?instances=counts: a fan-out's counts for its instances' events (events_counts.go)
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
	tasks, err := queryBool(q, "tasks", true)
	if err != nil {
		return f, nil, err
	}
	f.noTasks = !tasks
	if f.latest, err = queryBool(q, "latest", false); err != nil {
		return f, nil, err
	}
	switch v := q.Get("instances"); v {
	case "", "each":
	case "counts":
		f.counts = !f.noTasks // without task events there is nothing to count
	default:
		return f, nil, fmt.Errorf("instances: must be each or counts, got %q", v)
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
	fd, m := s.feeds.join(s.eng, f)
	defer s.feeds.leave(fd, m)
	st := &sseWriter{w: w, rc: http.NewResponseController(w), eventWindow: newEventWindow(f, s.eng, last != nil)}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	// A browser reconnects after retry ms (its default is a few seconds).
	if st.send([]byte("retry: 1000\n: connected\n\n")) != nil {
		return
	}
	from := engine.EventPos{Index: m.from, Pos: engine.EntryEnd}
	if last == nil {
		// An id without data: the client's position from the start, so a
		// reconnect before any event misses none.
		if st.send([]byte("id: "+from.String()+"\n\n")) != nil {
			return
		}
	} else if !s.replayEvents(st, *last, m.from) {
		return
	}
	s.followFeed(st, m, from, r)
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

// followFeed writes the feed's writes as they come (and a heartbeat when
// idle), leaving out the events up to from (the stream had them: from
// the log, or not at all before it began), until the client leaves, the
// daemon stops, or the stream falls behind (it is dropped: the client
// reconnects with its last id).
func (s *Server) followFeed(st *sseWriter, m *member, from engine.EventPos, r *http.Request) {
	beat := time.NewTicker(s.heartbeat)
	defer beat.Stop()
	skip := true
	for {
		select {
		case c, ok := <-m.q:
			if !ok {
				if m.dropped {
					st.comment("dropped: this stream fell behind; reconnect with Last-Event-ID")
				}
				return
			}
			m.backlog.Add(-c.entries)
			data := c.data
			if skip {
				var past bool
				data, past = framesAfter(data, from)
				skip = !past
			}
			if len(data) > 0 && st.send(data) != nil {
				return
			}
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

// sseWriter writes server-sent events, each write under its own deadline:
// a replay from the log, a batch at a time (the live events come from the
// stream's feed as bytes ready to write), and the stream's own lines.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	eventWindow
	buf []byte
}

// eventWindow gathers the events that a filter selects in a run of
// batches (a write's), allocating nothing per event: the frames are made
// once for every stream (EventBatch.Framed), a window keeps runs of them
// (spans), and take hands them out in log order.
type eventWindow struct {
	filter eventFilter
	// frames are the frames of the batches added since the last take
	// (EventBatch.Framed's All, shared by every stream); pending are runs
	// of them to send, free of pointers, so that adding an event writes a
	// few words the collector need not look at. With filter.latest, a
	// task's event is a span of its own, slot is where each task's latest
	// one is, and an earlier one is left out (gone).
	frames  [][]byte
	pending []span
	slot    map[uint64]int // by Event.TaskSeq
	// fans, with filter.counts, keeps the fan-outs' counts; slots are the
	// window's counts to send, where pending's spans with fan say.
	fans  *fanCounts
	slots []fanSlot
}

// newEventWindow is a window of filter f's events; replay: a resumed
// stream's replay from the log (see events_counts.go).
func newEventWindow(f eventFilter, eng *engine.Engine, replay bool) eventWindow {
	w := eventWindow{filter: f}
	if f.counts {
		w.fans = newFanCounts(eng, replay)
	}
	return w
}

// span is a run of consecutive frames of one batch: frames[batch][from:to].
type span struct {
	batch    int
	from, to int
	alone    bool // a task's event under filter.latest, or counts: never extended
	gone     bool
	fan      int // counts to send: slots[fan-1] (0: frames)
}

// frameEvent is an event as every stream sends it (appendEvent's frame,
// its JSON written in place).
func frameEvent(dst []byte, ev *engine.Event) []byte {
	return append(engine.AppendEventJSON(appendEventHead(dst, ev.ID, ""), ev), "\n\n"...)
}

// batch sends the events of b that the filter selects, then flushes.
func (st *sseWriter) batch(b *engine.EventBatch) error {
	st.add(b)
	return st.flush()
}

// add gathers the events of b that the filter selects, to be sent by
// take. A window with no filter takes the batch whole.
func (st *eventWindow) add(b *engine.EventBatch) {
	if len(b.Events) == 0 {
		return
	}
	if st.filter == (eventFilter{}) {
		all := b.Framed(frameEvent).All
		st.frames = append(st.frames, all)
		st.pending = append(st.pending, span{batch: len(st.frames) - 1, to: len(all)})
		return
	}
	var fr engine.Frames
	for i := range b.Events {
		ev := &b.Events[i]
		if !st.filter.match(ev) {
			continue
		}
		if st.fans != nil {
			st.replayed(ev)
			if ev.FanOut != "" {
				st.instance(ev)
				continue
			}
		}
		if fr.Ends == nil {
			fr = b.Framed(frameEvent)
			st.frames = append(st.frames, fr.All)
		}
		batch, from, to := len(st.frames)-1, fr.Start(i), fr.Ends[i]
		if st.filter.latest && ev.Task != "" {
			st.supersede(ev.TaskSeq)
			st.pending = append(st.pending, span{batch: batch, from: from, to: to, alone: true})
			continue
		}
		if n := len(st.pending); n > 0 && !st.pending[n-1].alone && st.pending[n-1].batch == batch && st.pending[n-1].to == from {
			st.pending[n-1].to = to
		} else {
			st.pending = append(st.pending, span{batch: batch, from: from, to: to})
		}
		if st.fans != nil && ev.Task == "" && ev.Run != "" {
			st.runEvent(ev)
		}
	}
}

// supersede marks the pending event of task seq gone, if any: the one
// about to be added is its latest.
func (st *eventWindow) supersede(seq uint64) {
	if j, ok := st.slot[seq]; ok {
		st.pending[j].gone = true
	} else if st.slot == nil {
		st.slot = map[uint64]int{}
	}
	st.slot[seq] = len(st.pending)
}

// size is how many bytes take hands out.
func (st *eventWindow) size() int {
	n := 0
	for _, p := range st.pending {
		switch {
		case p.gone:
		case p.fan > 0:
			n += 256 // about an instance_counts event
		default:
			n += p.to - p.from
		}
	}
	return n
}

// take calls put with each run of the frames gathered, in log order (not
// after put failed), and empties the window; the batches are not kept.
func (st *eventWindow) take(put func([]byte) error) error {
	if len(st.slots) > 0 {
		st.fans.read(st.slots)
	}
	var err error
	for _, p := range st.pending {
		switch {
		case p.gone || err != nil:
		case p.fan > 0:
			err = put(st.fans.frame(&st.slots[p.fan-1]))
		default:
			err = put(st.frames[p.batch][p.from:p.to])
		}
	}
	clear(st.frames)
	st.frames, st.pending = st.frames[:0], st.pending[:0]
	clear(st.slot)
	if st.fans != nil {
		st.fans.taken(st.slots)
		clear(st.slots)
		st.slots = st.slots[:0]
	}
	return err
}

// flush sends what add gathered: written out in chunks of writeChunk
// bytes, so that a stream's buffer stays small (and in the cache), then
// flushed once.
func (st *sseWriter) flush() error {
	err := st.take(st.put)
	if err == nil && len(st.buf) > 0 {
		err = st.send(st.buf)
	}
	st.buf = st.buf[:0]
	return err
}

// put adds b to what flush sends, writing out each chunk it fills.
func (st *sseWriter) put(b []byte) error {
	for len(b) > 0 {
		if len(st.buf) == writeChunk {
			if err := st.write(st.buf); err != nil {
				return err
			}
			st.buf = st.buf[:0]
		}
		n := min(len(b), writeChunk-len(st.buf))
		if len(st.buf)+n > cap(st.buf) { // grows to writeChunk at most
			st.buf = append(make([]byte, 0, min(writeChunk, max(2*cap(st.buf), len(st.buf)+n))), st.buf...)
		}
		st.buf, b = append(st.buf, b[:n]...), b[n:]
	}
	return nil
}

func (st *sseWriter) event(id, name string, data []byte) error {
	return st.send(appendEvent(nil, id, name, data))
}

func (st *sseWriter) comment(text string) error { return st.send([]byte(": " + text + "\n\n")) }

// send writes b and flushes it to the client.
func (st *sseWriter) send(b []byte) error {
	if err := st.write(b); err != nil {
		return err
	}
	return st.rc.Flush()
}

// write writes b (without flushing) under its deadline.
func (st *sseWriter) write(b []byte) error {
	st.rc.SetWriteDeadline(time.Now().Add(streamWriteStall))
	_, err := st.w.Write(b)
	return err
}

// appendEvent frames one event: data holds no newline (it is compact JSON).
func appendEvent(b []byte, id, name string, data []byte) []byte {
	return append(append(appendEventHead(b, id, name), data...), "\n\n"...)
}

// appendEventHead is an event's frame up to its data: the one place that
// lays out the lines before it (framesAfter reads the id line). With no
// id, the frame has no id line (a client's last id stays as it was).
func appendEventHead(b []byte, id, name string) []byte {
	if id != "" {
		b = append(b, "id: "...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	if name != "" {
		b = append(b, "event: "...)
		b = append(b, name...)
		b = append(b, '\n')
	}
	return append(b, "data: "...)
}

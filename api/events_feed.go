package api

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orkwal/orkwal/engine"
)

// A feed is the live events of one filter, shared by every /events stream
// with that filter: one engine subscription, and once per write (a window
// of at most eventFlushEvery) one filter pass over the window's events and
// one copy of the frames it selects, in one byte slice that each stream
// writes as it is. Twenty pages following the same thing cost the daemon
// one pass and twenty writes, not twenty passes.
//
// Nothing waits for a stream: the engine hands batches to the feed without
// waiting (a feed that falls eventBuffer entries behind is dropped, and
// every stream of it with it), and the feed hands each write to its
// streams without waiting: a stream with eventBuffer entries' events not
// yet written is dropped, its siblings go on.
//
// Positions: a stream joins its feed between two hand-outs, at the last
// entry the engine has published (from). What it missed up to from it
// reads from the log (replayEvents); of the feed's writes it leaves out
// the events up to from (some were still on their way through the feed).

// feedSet is a server's feeds, one per filter that a stream follows.
type feedSet struct {
	mu sync.Mutex // guards m; taken before a feed's mu
	m  map[eventFilter]*feed
	// gather, when set, replaces the wait for a write's window, which it
	// gets (<= 0: none): tests hold windows open with it.
	gather func(wait time.Duration)
	// backlog is how many entries' events a stream may have unwritten
	// before it is dropped (0: eventBuffer; tests lower it).
	backlog int64
}

// feed is the events of one filter (see the top of the file).
type feed struct {
	set    *feedSet
	eng    *engine.Engine
	filter eventFilter
	sub    *engine.Subscription
	win    eventWindow // the feed's goroutine's only

	mu      sync.Mutex // guards what follows
	members map[*member]bool
	closed  bool // no stream joins it any more
}

// member is one stream of a feed.
type member struct {
	q       chan *eventChunk
	from    uint64       // the engine's last published entry when it joined
	backlog atomic.Int64 // entries' events in q
	dropped bool         // set before q is closed: it fell behind
}

// eventChunk is one write of a feed, the same bytes for every stream.
type eventChunk struct {
	data    []byte // framed events, in log order
	entries int64  // how many log entries' events data holds
}

// join adds a stream of filter f to its feed, starting the feed when it is
// the first. The engine counts the stream as a subscriber.
func (fs *feedSet) join(eng *engine.Engine, f eventFilter) (*feed, *member) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fd := fs.m[f]
	if fd == nil || !eng.Share(fd.sub) { // none, or it was dropped and has not ended yet
		subscribe := eng.Subscribe
		if f.noTasks {
			subscribe = eng.SubscribeRuns // none of them needs task events
		}
		sub := subscribe(eventBuffer) // counts this stream
		fd = &feed{set: fs, eng: eng, filter: f, sub: sub, win: newEventWindow(f, eng, false),
			members: map[*member]bool{}}
		if fs.m == nil {
			fs.m = map[eventFilter]*feed{}
		}
		fs.m[f] = fd
		go fd.run()
	}
	m := &member{q: make(chan *eventChunk, eventBuffer)}
	fd.mu.Lock()
	defer fd.mu.Unlock()
	m.from = eng.EventsEnd() // a later entry is handed out after this
	fd.members[m] = true
	return fd, m
}

// leave removes m from fd (once: again does nothing); the last stream to
// leave ends the feed.
func (fs *feedSet) leave(fd *feed, m *member) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fd.mu.Lock()
	defer fd.mu.Unlock()
	was := fd.members[m]
	delete(fd.members, m)
	switch {
	case len(fd.members) == 0 && !fd.closed:
		fd.closed = true
		if fs.m[fd.filter] == fd {
			delete(fs.m, fd.filter)
		}
		fd.eng.Unsubscribe(fd.sub) // counts m out, if it was in; fd.run ends
	case was:
		fd.eng.Release(fd.sub, false)
	}
}

// run gathers the engine's batches into writes and hands them out, until
// the subscription ends. The first event after a quiet spell goes at once;
// the rest of a busy spell is gathered for up to eventFlushEvery, so that
// a stream costs a busy engine a few writes a second, not one per commit.
func (fd *feed) run() {
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	var last time.Time
	for {
		b, ok := <-fd.sub.C
		if !ok {
			fd.end()
			return
		}
		fd.win.add(b)
		switch wait := eventFlushEvery - time.Since(last); {
		case fd.set.gather != nil:
			fd.set.gather(wait)
		case wait > 0:
			timer.Reset(wait)
			<-timer.C
		}
		ok = fd.drain()
		fd.dispatch()
		last = time.Now()
		if !ok {
			fd.end()
			return
		}
	}
}

// drain adds every batch already waiting; false when the subscription
// ended.
func (fd *feed) drain() bool {
	for {
		select {
		case b, ok := <-fd.sub.C:
			if !ok {
				return false
			}
			fd.win.add(b)
		default:
			return true
		}
	}
}

// dispatch hands the window's events to every member, never waiting: a
// member that has a backlog of events not yet written is dropped.
func (fd *feed) dispatch() {
	c := fd.chunk()
	if c == nil {
		return
	}
	fd.mu.Lock()
	defer fd.mu.Unlock()
	for m := range fd.members {
		if m.backlog.Load() >= fd.backlog() {
			fd.drop(m)
			continue
		}
		select {
		case m.q <- c:
			m.backlog.Add(c.entries)
		default:
			fd.drop(m)
		}
	}
}

func (fd *feed) backlog() int64 {
	if fd.set.backlog > 0 {
		return fd.set.backlog
	}
	return eventBuffer
}

// chunk takes the window's frames as one write; nil if it selected none.
func (fd *feed) chunk() *eventChunk {
	entries := int64(len(fd.win.frames))
	data := make([]byte, 0, fd.win.size())
	fd.win.take(func(b []byte) error {
		data = append(data, b...)
		return nil
	})
	if len(data) == 0 {
		return nil
	}
	return &eventChunk{data: data, entries: entries}
}

// drop ends member m, which fell behind (fd.mu held).
func (fd *feed) drop(m *member) {
	m.dropped = true
	delete(fd.members, m)
	close(m.q)
	fd.eng.Release(fd.sub, true)
}

// end ends every member: the subscription ended (the engine stopped, or
// the feed fell behind: then its members are dropped, and were counted so).
func (fd *feed) end() {
	fs := fd.set
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.m[fd.filter] == fd {
		delete(fs.m, fd.filter)
	}
	fd.mu.Lock()
	defer fd.mu.Unlock()
	fd.closed = true
	for m := range fd.members {
		m.dropped = fd.sub.Dropped()
		close(m.q)
	}
	clear(fd.members)
}

// framesAfter is data from its first frame whose event comes after pos,
// nil if none does, and whether one did. Each frame is an event's, which
// begins with its id line and ends with a blank line (appendEvent).
func framesAfter(data []byte, pos engine.EventPos) ([]byte, bool) {
	for len(data) > 0 {
		line, _, _ := bytes.Cut(data, []byte("\n"))
		if id, ok := bytes.CutPrefix(line, []byte("id: ")); ok {
			if p, err := engine.ParseEventPos(string(id)); err == nil && pos.Before(p) {
				return data, true
			}
		}
		i := bytes.Index(data, []byte("\n\n"))
		if i < 0 {
			break
		}
		data = data[i+2:]
	}
	return nil, false
}

package api

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orkwal/orkwal/engine"
)

// windowGate holds each feed's write windows open until the test lets
// them go: a feed that has taken a batch waits in held until the test
// sends on what it received there (or until open is closed).
type windowGate struct {
	held chan chan struct{}
	open chan struct{}
	once sync.Once
}

// feedFixture is a fixture with the workflow dag whose feeds' windows
// are held.
func feedFixture(t *testing.T) (*fixture, *windowGate) {
	f := newFixture(t)
	f.do("POST", "/workflows", dag)
	return f, gateWindows(f)
}

func gateWindows(f *fixture) *windowGate {
	g := &windowGate{held: make(chan chan struct{}), open: make(chan struct{})}
	f.api.feeds.gather = func(time.Duration) {
		c := make(chan struct{})
		select {
		case g.held <- c:
			<-c
		case <-g.open:
		}
	}
	f.t.Cleanup(g.openAll)
	return g
}

// next waits for a feed holding a window (so: the window before it was
// handed out); the window goes on when the test closes what it returns.
func (g *windowGate) next(t *testing.T) chan struct{} {
	t.Helper()
	select {
	case c := <-g.held:
		return c
	case <-time.After(20 * time.Second):
		t.Fatal("no feed took a batch within 20s")
		return nil
	}
}

// openAll lets every window go, from now on.
func (g *windowGate) openAll() { g.once.Do(func() { close(g.open) }) }

// eventsOfLog is every event after pos in the log, up to its end.
func eventsOfLog(t *testing.T, eng *engine.Engine, pos engine.EventPos) []engine.Event {
	t.Helper()
	var out []engine.Event
	if err := eng.EventsAfter(pos, eng.EventsEnd(), func(b *engine.EventBatch) error {
		out = append(out, b.Events...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// feedOf is the feed of filter f, if any.
func feedOf(f *fixture, filter eventFilter) *feed {
	f.api.feeds.mu.Lock()
	defer f.api.feeds.mu.Unlock()
	return f.api.feeds.m[filter]
}

// eventsAfter is the events of evs after id.
func eventsAfter(t *testing.T, evs []sseEvent, id string) []sseEvent {
	t.Helper()
	pos := mustPos(t, id)
	for i, ev := range evs {
		if p, _ := engine.ParseEventPos(ev.ID); pos.Before(p) {
			return evs[i:]
		}
	}
	return nil
}

// TestFeedJoinMidWindow: streams of one filter share one feed and one
// engine subscription (each counted as a subscriber). A stream that
// joins while the feed holds a window of events not yet handed out gets
// exactly the events after its start: without Last-Event-ID, those after
// the id it opens with; resuming from before the window, the window's
// from the log and nothing twice; resuming from an event inside the
// window, the rest of it and nothing before.
func TestFeedJoinMidWindow(t *testing.T) {
	f, gate := feedFixture(t)
	first := f.events("/events", "")
	first.next(true) // connected
	start := first.next(true).ID
	id := f.triggerWith("dag", `{}`)
	window := gate.next(t) // the run's first entry is in the feed's window

	fresh := f.events("/events", "")
	fresh.next(true)
	freshStart := fresh.next(true).ID
	before := f.events("/events", start)
	inWindow := eventsOfLog(t, f.eng, mustPos(t, start))[0].ID // the run's run_created
	inside := f.events("/events", inWindow)
	f.api.feeds.mu.Lock()
	feeds := len(f.api.feeds.m)
	f.api.feeds.mu.Unlock()
	if feeds != 1 {
		t.Fatalf("%d feeds for one filter, want 1", feeds)
	}
	if open, _ := f.eng.EventSubscribers(); open != 4 {
		t.Fatalf("%d subscribers, want 4 (the streams, not their one feed)", open)
	}
	close(window)
	gate.openAll()

	all := first.until(id)
	if all[0].Data.Run != id || all[0].Data.Type != "run_created" {
		t.Fatalf("the first stream:\n%s", describe(all))
	}
	for _, c := range []struct {
		name string
		s    *sse
		from string
	}{{"joined mid-window", fresh, freshStart}, {"resumed from before the window", before, start},
		{"resumed from inside the window", inside, inWindow}} {
		want := eventsAfter(t, all, c.from)
		if got := c.s.until(id); describe(got) != describe(want) {
			t.Errorf("%s, after %s:\n%s\nwant:\n%s", c.name, c.from, describe(got), describe(want))
		}
	}
}

func mustPos(t *testing.T, id string) engine.EventPos {
	t.Helper()
	pos, err := engine.ParseEventPos(id)
	if err != nil {
		t.Fatal(err)
	}
	return pos
}

// TestFeedLeaveMidWindow: a stream that leaves its feed while the feed
// holds a window is counted out at once, and the others get every event;
// the last to leave ends the feed (and its engine subscription).
func TestFeedLeaveMidWindow(t *testing.T) {
	f, gate := feedFixture(t)
	s := f.events("/events?tasks=0", "")
	s.next(true)
	fd, m := f.api.feeds.join(f.eng, eventFilter{noTasks: true})
	if fd != feedOf(f, eventFilter{noTasks: true}) {
		t.Fatal("a second stream of one filter started a feed of its own")
	}
	id := f.triggerWith("dag", `{}`)
	window := gate.next(t)
	f.api.feeds.leave(fd, m)
	f.api.feeds.leave(fd, m) // again: nothing
	if open, _ := f.eng.EventSubscribers(); open != 1 {
		t.Fatalf("%d subscribers after one of two left, want 1", open)
	}
	close(window)
	gate.openAll()
	var types []string
	for _, ev := range s.until(id) {
		types = append(types, ev.Data.Type)
	}
	if strings.Join(types, " ") != "run_created run_finished" {
		t.Fatalf("the stream that stayed: %v", types)
	}

	// Bare members, the last leaving: the feed ends.
	f2, a := f.api.feeds.join(f.eng, eventFilter{run: id})
	_, b := f.api.feeds.join(f.eng, eventFilter{run: id})
	f.api.feeds.leave(f2, a)
	f.api.feeds.leave(f2, b)
	f2.mu.Lock()
	closed := f2.closed
	f2.mu.Unlock()
	if feedOf(f, eventFilter{run: id}) != nil || !closed {
		t.Fatal("the feed outlived its last stream")
	}
	if _, ok := <-f2.sub.C; ok {
		t.Fatal("the feed's subscription is still open")
	}
}

// TestFeedDropsOnlyTheSlowStream: of three streams of one feed, the one
// that does not write its events (a member that never reads its queue,
// as a stream stuck in a write) is dropped once it has events unwritten
// at a write (the bound lowered to one entry), counted dropped by the
// engine, while its siblings (an HTTP stream and a member that reads)
// get every event, then the next run's.
func TestFeedDropsOnlyTheSlowStream(t *testing.T) {
	f, gate := feedFixture(t)
	f.api.feeds.backlog = 1
	s := f.events("/events", "")
	s.next(true)
	start := s.next(true).ID
	fd, slow := f.api.feeds.join(f.eng, eventFilter{})
	_, quick := f.api.feeds.join(f.eng, eventFilter{})
	var got []sseEvent
	for range 2 { // two runs: the second's events come in a later write
		id := f.triggerWith("dag", `{}`)
		evs := follow(t, gate, s, quick, id)
		if last := evs[len(evs)-1].Data; last.Type != "run_finished" || last.Run != id {
			t.Fatalf("the stream:\n%s", describe(evs))
		}
		got = append(got, evs...)
	}
	var want strings.Builder
	for _, ev := range eventsOfLog(t, f.eng, mustPos(t, start)) {
		want.WriteString(ev.ID + " " + ev.Type + " " + ev.Task + " " + ev.Status + "\n")
	}
	if describe(got) != want.String() {
		t.Fatalf("the HTTP stream:\n%s\nwant the log's:\n%s", describe(got), want.String())
	}
	fd.mu.Lock()
	stillIn, dropped := fd.members[slow], slow.dropped
	fd.mu.Unlock()
	if stillIn || !dropped {
		t.Fatal("the stream that wrote nothing was not dropped")
	}
	for range slow.q { // what it had, then the close
	}
	if open, dropped := f.eng.EventSubscribers(); open != 2 || dropped != 1 {
		t.Fatalf("open %d dropped %d, want 2 and 1", open, dropped)
	}
}

// follow lets the feed's windows go one at a time until the run id's
// run_finished is handed out, and returns what the HTTP stream s got:
// before each window, s has read what quick (a member the test reads)
// got, so its handler holds no backlog when the next write comes.
func follow(t *testing.T, gate *windowGate, s *sse, quick *member, id string) []sseEvent {
	t.Helper()
	var got []sseEvent
	var lastID string
	catchUp := func() {
		for lastID != "" && (len(got) == 0 || got[len(got)-1].ID != lastID) {
			got = append(got, s.next(false))
		}
	}
	take := func(c *eventChunk) bool {
		frames := bytes.Split(bytes.TrimSuffix(c.data, []byte("\n\n")), []byte("\n\n"))
		last := frames[len(frames)-1]
		lastID = string(bytes.TrimPrefix(bytes.SplitN(last, []byte("\n"), 2)[0], []byte("id: ")))
		return bytes.Contains(last, []byte(`"type":"run_finished","run":"`+id+`"`))
	}
	for done := false; !done; {
		select {
		case c := <-gate.held:
			for more := true; more; {
				select {
				case ch := <-quick.q:
					quick.backlog.Add(-ch.entries)
					done = take(ch) || done
				default:
					more = false
				}
			}
			catchUp()
			close(c)
		case ch := <-quick.q:
			quick.backlog.Add(-ch.entries)
			done = take(ch)
		case <-time.After(20 * time.Second):
			t.Fatal("the run's events did not come within 20s")
		}
	}
	catchUp()
	return got
}

// TestRunsOnlySubscriptionMakesNoTaskEvents: while every subscription
// takes run events only (SubscribeRuns, what ?tasks=0 streams' feed
// uses), a commit makes no task event, and the run and workflow events
// are those of a full subscription (the log's, task events left out),
// run_finished included; a full subscription brings task events back,
// and its end takes them away again.
func TestRunsOnlySubscriptionMakesNoTaskEvents(t *testing.T) {
	f := newFixture(t)
	f.do("POST", "/workflows", dag)
	runs := f.eng.SubscribeRuns(1024)
	defer f.eng.Unsubscribe(runs)
	tasksOf := func(id string) (tasks int, rest string) {
		t.Helper()
		for b := range runs.C {
			for _, ev := range b.Events {
				if ev.Task != "" {
					tasks++
					continue
				}
				rest += ev.ID + " " + ev.Type + " " + ev.Status + "\n"
				if ev.Type == "run_finished" && ev.Run == id {
					return tasks, rest
				}
			}
		}
		t.Fatal("the subscription ended")
		return 0, ""
	}
	start := engine.EventPos{Index: runs.From, Pos: engine.EntryEnd}
	id := f.triggerWith("dag", `{}`)
	tasks, got := tasksOf(id)
	var want string
	for _, ev := range eventsOfLog(t, f.eng, start) {
		if ev.Task == "" {
			want += ev.ID + " " + ev.Type + " " + ev.Status + "\n"
		}
	}
	if tasks != 0 || got != want || !strings.Contains(got, "run_finished success") {
		t.Fatalf("runs only: %d task events and\n%s\nwant none and the log's\n%s", tasks, got, want)
	}
	all := f.eng.Subscribe(1024)
	if tasks, _ := tasksOf(f.triggerWith("dag", `{}`)); tasks == 0 {
		t.Fatal("with a full subscription open, no task events")
	}
	f.eng.Unsubscribe(all)
	if tasks, _ := tasksOf(f.triggerWith("dag", `{}`)); tasks != 0 {
		t.Fatalf("after the full subscription ended, %d task events", tasks)
	}
}

package api

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/wal"
)

// sse reads a server-sent event stream.
type sse struct {
	t    *testing.T
	resp *http.Response
	sc   *bufio.Scanner
	ch   chan sseEvent
}

// sseEvent is one event, or a comment (Comment set).
type sseEvent struct {
	ID, Name, Comment string
	Data              engine.Event
	Raw               string
}

func (f *fixture) events(path, lastID string) *sse {
	f.t.Helper()
	req, _ := http.NewRequest("GET", f.srv.URL+path, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp := f.send(req)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		f.t.Fatalf("%s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &sse{t: f.t, resp: resp, sc: bufio.NewScanner(resp.Body), ch: make(chan sseEvent, 1024)}
	go s.read()
	f.t.Cleanup(func() { resp.Body.Close() })
	return s
}

func (s *sse) read() {
	defer close(s.ch)
	var ev sseEvent
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "":
			if ev.ID != "" || ev.Comment != "" || ev.Raw != "" {
				s.ch <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ": "):
			ev.Comment = line[2:]
		case strings.HasPrefix(line, "retry: "):
		case strings.HasPrefix(line, "id: "):
			ev.ID = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.Name = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.Raw = line[6:]
			json.Unmarshal([]byte(ev.Raw), &ev.Data)
		}
	}
}

// next returns the next event, skipping comments unless comments is set.
func (s *sse) next(comments bool) sseEvent {
	s.t.Helper()
	guard := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-s.ch:
			if !ok {
				s.t.Fatal("event stream ended")
			}
			if (ev.Comment != "" || ev.Raw == "") && !comments {
				continue
			}
			return ev
		case <-guard:
			s.t.Fatal("no event within 20s")
		}
	}
}

// until collects events up to the run_finished of run.
func (s *sse) until(run string) []sseEvent {
	s.t.Helper()
	var out []sseEvent
	for {
		ev := s.next(false)
		out = append(out, ev)
		if ev.Data.Type == "run_finished" && ev.Data.Run == run {
			return out
		}
	}
}

func describe(evs []sseEvent) string {
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(ev.ID + " " + ev.Data.Type + " " + ev.Data.Task + " " + ev.Data.Status + "\n")
	}
	return b.String()
}

// TestEventsStreamAndResume: /events sends every transition of a run once
// durable, with ids in log order; a client reconnecting with the id of any
// of them gets exactly the events that followed, read from the log; a
// filter by run leaves the others out.
func TestEventsStreamAndResume(t *testing.T) {
	f := newFixture(t)
	f.do("POST", "/workflows", dag)
	all := f.events("/events", "")
	if ev := all.next(true); ev.Comment != "connected" {
		t.Fatalf("first: %+v", ev)
	}
	other := f.triggerWith("dag", `{}`)
	f.waitRun(other)
	byRun := f.events("/events?workflow=dag", "")
	runsOnly := f.events("/events?tasks=0", "")
	id := f.triggerWith("dag", `{}`)
	got := all.until(id)
	want := []string{"run_created", "task_dispatched", "task_started", "task_finished"}
	var types []string
	var prev engine.EventPos
	sawOther := false
	for _, ev := range got {
		pos, err := engine.ParseEventPos(ev.ID)
		if err != nil || !prev.Before(pos) || ev.Data.ID != ev.ID {
			t.Fatalf("id %q after %v (%v):\n%s", ev.ID, prev, err, describe(got))
		}
		prev = pos
		if ev.Data.Run == other {
			sawOther = true
			continue
		}
		if ev.Data.Task == "" || ev.Data.Task == "first" {
			types = append(types, ev.Data.Type)
		}
		if ev.Data.Workflow != "dag" {
			t.Fatalf("event without its workflow: %s", ev.Raw)
		}
	}
	if !sawOther {
		t.Fatalf("the first run's events are missing:\n%s", describe(got))
	}
	if strings.Join(types, " ") != strings.Join(append(want, "run_finished"), " ") {
		t.Fatalf("events of the run and its first task: %v\n%s", types, describe(got))
	}
	if last := got[len(got)-1].Data; last.Status != "success" {
		t.Fatalf("run_finished: %+v", last)
	}
	var ofRun []sseEvent
	for _, ev := range got {
		if ev.Data.Run == id {
			ofRun = append(ofRun, ev)
		}
	}
	if only := byRun.until(id); describe(only) != describe(got[len(got)-len(only):]) {
		t.Fatalf("?workflow=:\n%s", describe(only))
	}
	var want0 []string
	for _, ev := range got {
		if ev.Data.Task == "" {
			want0 = append(want0, ev.ID)
		}
	}
	var got0 []string
	for _, ev := range runsOnly.until(id) {
		got0 = append(got0, ev.ID)
	}
	if strings.Join(got0, " ") != strings.Join(want0[len(want0)-len(got0):], " ") || len(got0) < 2 {
		t.Fatalf("?tasks=0: %v, want the run events %v", got0, want0)
	}
	// From the last event before the run, filtered by run: the run's events.
	var before string
	for _, ev := range got {
		if ev.Data.Run == id {
			break
		}
		before = ev.ID
	}
	if only := f.events("/events?run="+id, before).until(id); describe(only) != describe(ofRun) {
		t.Fatalf("?run=:\n%s\nwant:\n%s", describe(only), describe(ofRun))
	}

	// Resume from every event of the second run: the rest, nothing more.
	for i, ev := range ofRun[:len(ofRun)-1] {
		s := f.events("/events?run="+id, ev.ID)
		rest := s.until(id)
		if describe(rest) != describe(ofRun[i+1:]) {
			t.Fatalf("resumed after %s:\n%s\nwant:\n%s", ev.ID, describe(rest), describe(ofRun[i+1:]))
		}
	}
}

// TestEventsResetAfterCompaction: a client whose last id was compacted
// away gets one reset event, then the live events.
func TestEventsResetAfterCompaction(t *testing.T) {
	f := newFixtureConfig(t, engine.Config{SegmentSize: 4 << 10})
	f.do("POST", "/workflows", dag)
	s := f.events("/events", "")
	id := f.triggerWith("dag", `{}`)
	first := s.until(id)[0]
	pos, _ := engine.ParseEventPos(first.ID)
	for i := 0; ; i++ { // until compaction has removed the first event's entry
		if front, _ := wal.FirstIndexDir(engine.Layout(f.dir).WAL()); front > pos.Index {
			break
		}
		if i == 50 {
			t.Fatal("compaction did not truncate the log")
		}
		f.waitRun(f.triggerWith("dag", `{}`))
		if err := f.eng.Compact(); err != nil {
			t.Fatal(err)
		}
	}
	r := f.events("/events", first.ID)
	ev := r.next(false)
	if ev.Name != "reset" || !strings.Contains(ev.Raw, "no longer in the log") {
		t.Fatalf("after compaction: %+v, want a reset", ev)
	}
	if _, err := engine.ParseEventPos(ev.ID); err != nil {
		t.Fatalf("reset id: %v", err)
	}
	id = f.triggerWith("dag", `{}`)
	if got := r.until(id); got[0].Data.Type != "run_created" || got[0].Data.Run != id {
		t.Fatalf("after the reset:\n%s", describe(got))
	}
	// Resuming from the reset's id misses nothing and repeats nothing.
	if got := f.events("/events?run="+id, ev.ID).until(id); got[0].Data.Type != "run_created" {
		t.Fatalf("from the reset's id:\n%s", describe(got))
	}
}

// TestEventsHeartbeatAndBounds: an idle stream gets heartbeat comments;
// streams beyond the limit are 429; a bad Last-Event-ID is 400.
func TestEventsHeartbeatAndBounds(t *testing.T) {
	f := newFixture(t, WithHeartbeat(10*time.Millisecond), WithMaxSubscribers(1))
	for _, bad := range []string{"x", "1.", "1.2.3", "-1.0", "1.01", "01"} {
		req, _ := http.NewRequest("GET", f.srv.URL+"/events", nil)
		req.Header.Set("Last-Event-ID", bad)
		resp := f.send(req)
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Fatalf("Last-Event-ID %q: %d, want 400", bad, resp.StatusCode)
		}
	}
	s := f.events("/events", "")
	s.next(true) // connected
	if ev := s.next(true); ev.Raw != "" || ev.ID == "" {
		t.Fatalf("after connected: %+v, want the position (an id without data)", ev)
	} else if pos, err := engine.ParseEventPos(ev.ID); err != nil || pos.Pos != engine.EntryEnd {
		t.Fatalf("position %q: %v", ev.ID, err)
	}
	if ev := s.next(true); ev.Comment != "heartbeat" {
		t.Fatalf("idle stream: %+v, want a heartbeat", ev)
	}
	if code, body := f.do("GET", "/events", ""); code != 429 || !strings.Contains(body, "too many event streams") {
		t.Fatalf("second stream: %d %s", code, body)
	}
}

// TestSlowSubscriberIsDropped: a subscriber that does not read is dropped
// once its buffer is full, and the engine goes on committing.
func TestSlowSubscriberIsDropped(t *testing.T) {
	f := newFixture(t)
	f.do("POST", "/workflows", dag)
	sub := f.eng.Subscribe(2)
	defer f.eng.Unsubscribe(sub)
	f.waitRun(f.triggerWith("dag", `{}`))
	f.waitRun(f.triggerWith("dag", `{}`))
	for range sub.C { // what was buffered, then the close
	}
	if !sub.Dropped() {
		t.Fatal("a subscriber that never read was not dropped")
	}
	if open, dropped := f.eng.EventSubscribers(); open != 0 || dropped != 1 {
		t.Fatalf("open %d dropped %d", open, dropped)
	}
}

package api

import (
	"fmt"
	"maps"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/orkwal/orkwal/engine"
)

// fanState is what a client following ?instances=counts knows: each
// fan-out's counts, replaced by each instance_counts event.
type fanState map[string]map[string]int

func (s fanState) apply(evs []sseEvent) {
	for _, ev := range evs {
		if ev.Data.Type == "instance_counts" {
			s[ev.Data.Task] = maps.Clone(ev.Data.Counts)
		}
	}
}

// reloaded is each fan-out's counts as GET /runs/{id} shows them.
func reloaded(t *testing.T, f *fixture, id string) fanState {
	t.Helper()
	r, err := f.eng.Run(id)
	if err != nil {
		t.Fatal(err)
	}
	s := fanState{}
	for _, task := range r.Tasks {
		if task.Instance != nil {
			if s[task.Task] == nil {
				s[task.Task] = map[string]int{}
			}
			s[task.Task][task.Status]++
		}
	}
	return s
}

// countsStream follows query until run id's run_finished.
func countsStream(f *fixture, query, last, id string) []sseEvent {
	s := f.events("/events?"+query, last)
	return s.until(id)
}

// checkResumes reconnects after each id of evs (a whole run's stream) as
// a client that had every event up to it, but none of the id-less events
// after it, and checks that it ends with the counts of a reload.
func checkResumes(t *testing.T, f *fixture, query, run string, evs []sseEvent) {
	t.Helper()
	want := reloaded(t, f, run)
	for i, ev := range evs {
		if ev.ID == "" || ev.Data.Type == "run_finished" {
			continue
		}
		had := fanState{}
		had.apply(evs[:i+1])
		had.apply(countsStream(f, query, ev.ID, run))
		if fmt.Sprint(had) != fmt.Sprint(want) {
			t.Errorf("resumed after %s (%s): counts %v, a reload has %v", ev.ID, ev.Data.Type, had, want)
		}
	}
}

// TestEventsInstanceCounts: with ?instances=counts a fan-out's instances
// come as instance_counts events, never as their own; every other event
// is sent as without it; ids increase; the last counts are a reload's;
// and a client resuming after any id ends with a reload's counts.
func TestEventsInstanceCounts(t *testing.T) {
	f := newFixture(t)
	f.do("POST", "/workflows", "name: fan\ntasks:\n  a: {executor: noop}\n  each: {executor: noop, parallel: 40, depends_on: [a]}\n  b: {executor: noop, depends_on: [each]}\n")
	counts := f.events("/events?workflow=fan&instances=counts", "")
	plain := f.events("/events?workflow=fan", "")
	id, err := f.eng.Trigger("fan", nil, "test")
	if err != nil {
		t.Fatal(err)
	}
	got, all := counts.until(id), plain.until(id)
	var others []string
	for _, ev := range all {
		if !strings.Contains(ev.Data.Task, "[") {
			others = append(others, ev.ID+" "+ev.Data.Type+" "+ev.Data.Task)
		}
	}
	var sent []string
	var last engine.EventPos
	n := 0
	for _, ev := range got {
		if strings.Contains(ev.Data.Task, "[") {
			t.Errorf("an instance's own event was sent: %s", ev.Raw)
		}
		if ev.ID != "" {
			p := mustPos(t, ev.ID)
			if !last.Before(p) {
				t.Errorf("id %s after %s", ev.ID, last)
			}
			last = p
		}
		if ev.Data.Type != "instance_counts" {
			sent = append(sent, ev.ID+" "+ev.Data.Type+" "+ev.Data.Task)
			continue
		}
		n++
		total := 0
		for _, c := range ev.Data.Counts {
			total += c
		}
		if ev.Data.Task != "each" || ev.Data.Instances != 40 || total != 40 || ev.Data.Run != id || ev.Data.Workflow != "fan" {
			t.Errorf("counts event %s", ev.Raw)
		}
	}
	if strings.Join(sent, "\n") != strings.Join(others, "\n") {
		t.Errorf("the other events:\n%s\nwithout instances=counts:\n%s", strings.Join(sent, "\n"), strings.Join(others, "\n"))
	}
	had := fanState{}
	had.apply(got)
	if want := reloaded(t, f, id); n == 0 || fmt.Sprint(had) != fmt.Sprint(want) {
		t.Errorf("%d counts events; counts %v, a reload has %v", n, had, want)
	}
	checkResumes(t, f, "workflow=fan&instances=counts", id, got)
}

// TestEventsInstanceCountsCancel: a cancel ends pending instances without
// events of their own; the stream sends the fan-out's counts after the
// run_cancel_requested, with no id line, and a client that resumes after
// that event's id without them has them again from the replay.
func TestEventsInstanceCountsCancel(t *testing.T) {
	f := newFixture(t)
	f.do("POST", "/workflows", "name: slow\ntasks:\n  each: {executor: noop, parallel: 5, delay: 1h}\n")
	s := f.events("/events?workflow=slow&instances=counts", "")
	id, err := f.eng.Trigger("slow", nil, "test")
	if err != nil {
		t.Fatal(err)
	}
	f.waitFor(func() bool { return fmt.Sprint(reloaded(t, f, id)) == "map[each:map[pending:5]]" })
	if code, body := f.do("POST", "/runs/"+id+"/cancel", ""); code != 200 {
		t.Fatalf("cancel: %d %s", code, body)
	}
	got := s.until(id)
	i := 0
	for i < len(got) && got[i].Data.Type != "run_cancel_requested" {
		i++
	}
	if i+1 >= len(got) || got[i+1].Data.Type != "instance_counts" || got[i+1].ID != "" || fmt.Sprint(got[i+1].Data.Counts) != "map[cancelled:5]" {
		t.Fatalf("after the cancel, want the counts without an id:\n%s", describe(got))
	}
	checkResumes(t, f, "workflow=slow&instances=counts", id, got)
}

// TestEventsInstancesParam: instances= is each or counts (anything else
// is a 400 naming it); with tasks=0 there is nothing to count.
func TestEventsInstancesParam(t *testing.T) {
	f := newFixture(t)
	if code, body := f.do("GET", "/events?instances=all", ""); code != 400 || !strings.Contains(body, "instances") {
		t.Errorf("instances=all: %d %s", code, body)
	}
	for q, want := range map[string]eventFilter{
		"instances=counts":         {counts: true},
		"instances=each":           {},
		"":                         {},
		"instances=counts&tasks=0": {noTasks: true},
	} {
		got, _, err := parseEventsRequest(httptest.NewRequest("GET", "/events?"+q, nil))
		if err != nil || got != want {
			t.Errorf("%s: %+v %v, want %+v", q, got, err, want)
		}
	}
}

// TestInstanceCountsReadWhatChanged: a window reads every instance of a
// fan-out it meets for the first time, then only those its events are
// about: a write costs what its events do, not the fan-out's size.
func TestInstanceCountsReadWhatChanged(t *testing.T) {
	f := newFixture(t)
	f.do("POST", "/workflows", "name: big\ntasks:\n  each: {executor: noop, parallel: 300, delay: 1h}\n")
	id, err := f.eng.Trigger("big", nil, "test")
	if err != nil {
		t.Fatal(err)
	}
	f.waitFor(func() bool { return fmt.Sprint(reloaded(t, f, id)) == "map[each:map[pending:300]]" })
	w := newEventWindow(eventFilter{counts: true}, f.eng, false)
	window := func(instances ...int) string {
		b := &engine.EventBatch{}
		for j, i := range instances {
			b.Events = append(b.Events, engine.Event{ID: fmt.Sprintf("9.%d", j), Type: "task_started", Run: id, Workflow: "big",
				Task: fmt.Sprintf("each[%d]", i), FanOut: "each", Instance: i, TaskSeq: uint64(i + 1)})
		}
		w.add(b)
		var out strings.Builder
		w.take(func(p []byte) error { out.Write(p); return nil })
		return out.String()
	}
	if got := window(1); w.fans.reads != 300 || !strings.Contains(got, `"counts":{"pending":300}`) {
		t.Fatalf("first window: %d reads, sent %s", w.fans.reads, got)
	}
	if got := window(2, 3, 2); w.fans.reads != 303 || strings.Count(got, "instance_counts") != 1 || !strings.HasPrefix(got, "id: 9.2\n") {
		t.Errorf("second window: %d reads in all (want 303), sent %s", w.fans.reads, got)
	}
}

package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/orkwal/orkwal/engine"
)

// TestEventsLatest: with ?latest=1, a write carries each task's latest
// event only (in log order, ids increasing), run events all; without it,
// every event.
func TestEventsLatest(t *testing.T) {
	batch := func() *engine.EventBatch {
		return &engine.EventBatch{Events: []engine.Event{
			{ID: "1.0", Type: "task_dispatched", Run: "r", Task: "a", TaskSeq: 1},
			{ID: "1.1", Type: "run_started", Run: "r"},
			{ID: "2.0", Type: "task_started", Run: "r", Task: "a", TaskSeq: 1},
			{ID: "2.1", Type: "task_dispatched", Run: "r", Task: "b", TaskSeq: 2},
			{ID: "3.0", Type: "task_finished", Run: "r", Task: "a", TaskSeq: 1},
			{ID: "3.1", Type: "task_dispatched", Run: "s", Task: "a", TaskSeq: 3},
		}}
	}
	ids := func(latest bool) string {
		w := httptest.NewRecorder()
		st := &sseWriter{w: w, rc: http.NewResponseController(w), eventWindow: eventWindow{filter: eventFilter{latest: latest}}}
		st.add(batch())
		if err := st.flush(); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, line := range strings.Split(w.Body.String(), "\n") {
			if id, ok := strings.CutPrefix(line, "id: "); ok {
				got = append(got, id)
			}
		}
		return strings.Join(got, " ")
	}
	if got, want := ids(true), "1.1 2.1 3.0 3.1"; got != want {
		t.Errorf("latest=1 sent %s, want %s", got, want)
	}
	if got, want := ids(false), "1.0 1.1 2.0 2.1 3.0 3.1"; got != want {
		t.Errorf("every event: sent %s, want %s", got, want)
	}
	for _, q := range []string{"latest=1", "latest=true", "latest=0", "latest=yes"} {
		r := httptest.NewRequest("GET", "/events?"+q, nil)
		f, _, err := parseEventsRequest(r)
		if (err != nil) != (q == "latest=yes") || (err == nil && f.latest != strings.HasSuffix(q, "1") && f.latest != strings.HasSuffix(q, "true")) {
			t.Errorf("%s: %+v, %v", q, f, err)
		}
	}
}

package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"testing"

	"github.com/orkwal/orkwal/engine"
)

// TestRunJSONCostsLessThanItsBody: GET /runs/{id} and /runs/{id}/tasks
// of a 2,000-instance run allocate less than the body they answer (issue
// 27: a monitor polling a big run made the daemon allocate seven times its
// JSON a request), and the API's bodies are what json.Encoder with the
// API's indent writes of the run's view. The run's page, and the run
// summarised (?instances=counts) as the page reads it, hold no instance:
// their bodies and allocations stay under 16 KB (the whole run is
// megabytes).
func TestRunJSONCostsLessThanItsBody(t *testing.T) {
	d := startDaemon(t)
	id := fanRun(d, 2000)
	h := New(d.eng, quiet)
	run, err := d.eng.Run(id)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want any // nil: not the run's view, and a bound that does not grow with its instances
	}{{"/runs/" + id, run}, {"/runs/" + id + "/tasks", run.Tasks}, {"/ui/runs/" + id, nil}, {"/runs/" + id + "?instances=counts", nil}} {
		req := httptest.NewRequest("GET", "http://127.0.0.1"+c.path, nil)
		w := &countingWriter{h: http.Header{}}
		h.ServeHTTP(w, req) // warm: the buffers are kept between requests
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		const rounds = 5
		for i := 0; i < rounds; i++ {
			w.n = 0
			h.ServeHTTP(w, req)
		}
		runtime.ReadMemStats(&after)
		perRequest := (after.TotalAlloc - before.TotalAlloc) / rounds
		if c.want == nil {
			if w.code != 200 || perRequest >= 16<<10 || w.n >= 16<<10 {
				t.Errorf("%s: %d, %d bytes allocated a request for a body of %d: want both under 16 KB", c.path, w.code, perRequest, w.n)
			}
			continue
		}
		if w.code != 200 || perRequest >= uint64(w.n) {
			t.Errorf("%s: %d, %d bytes allocated a request for a body of %d", c.path, w.code, perRequest, w.n)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		enc.Encode(c.want)
		if !bytes.Equal(rec.Body.Bytes(), want.Bytes()) {
			t.Errorf("%s: the body is not the view's indented JSON:\n%.2000s\nwant:\n%.2000s", c.path, rec.Body.Bytes(), want.Bytes())
		}
	}
}

// fanRun runs a fan-out of n noop instances to its end; its run id.
func fanRun(d *daemon, n int) string {
	d.put(fmt.Sprintf("name: fan\ntasks:\n  each: {executor: noop, parallel: %d}\n", n))
	id := d.trigger("fan")
	for {
		ch := d.eng.Changed()
		if s, _ := d.eng.RunStatus(id); s == "success" {
			return id
		}
		<-ch
	}
}

// TestLogFollowerReadsOneTask: what a log follower checks at every commit
// (the task's status and attempt) is read from that task alone, not from
// a view of its whole run: on a 2,000-instance run it allocates under
// 8 KB (a view of the run was megabytes), and it is the run view's task.
func TestLogFollowerReadsOneTask(t *testing.T) {
	d := startDaemon(t)
	id := fanRun(d, 2000)
	s := New(d.eng, quiet)
	run, err := d.eng.Run(id)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"each", "each[0]", "each[1999]"} {
		var want engine.TaskView
		for _, v := range run.Tasks {
			if v.Name == key {
				want = v
			}
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got, ended, err := s.taskView(id, key)
		runtime.ReadMemStats(&after)
		if err != nil || !ended || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, ended %v:\n%+v\nwant %+v", key, err, ended, got, want)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n >= 8<<10 {
			t.Errorf("%s: %d bytes allocated to read one task", key, n)
		}
	}
	if _, _, err := s.taskView(id, "each[2000]"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("each[2000]: %v, want not found", err)
	}
}

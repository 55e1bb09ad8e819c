package executors

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors/googletest"
)

// fakeGoogle adds to googletest's token endpoint and Cloud Run API the
// other calls the trackers make, as their public REST reference has
// them: BigQuery v2 jobs.get (RUNNING, then DONE) and Dataproc v1
// jobs.get (DONE).
func fakeGoogle(t *testing.T) *googletest.Server {
	srv := googletest.New(t, "projects/p/locations/europe-west1/jobs/nightly")
	var bqPolls atomic.Int32
	srv.Handle("GET /bigquery/v2/projects/p/jobs/bq1", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("location") != "US" {
			http.Error(w, `{}`, http.StatusNotFound)
			return
		}
		state := "RUNNING"
		if bqPolls.Add(1) > 1 {
			state = "DONE"
		}
		w.Write([]byte(`{"kind": "bigquery#job", "status": {"state": "` + state + `"}}`))
	})
	srv.Handle("GET /v1/projects/p/regions/europe-west1/jobs/dp1", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"reference": {"jobId": "dp1"}, "status": {"state": "DONE"}}`))
	})
	return srv
}

func trackOnce(t *testing.T, base, output string) Event {
	d := NewDeferred(DeferredConfig{PollInterval: time.Millisecond, Google: GoogleConfig{BaseURL: base}})
	events := make(chan Event, 100)
	_, err := d.Start(Job{TaskID: "r:t", Attempt: 1, Deferred: &DeferredJob{Output: []byte(output)}}, func(ev Event) { events <- ev })
	if err != nil {
		t.Fatal(err)
	}
	for ev := range events {
		if ev.Kind == Finished {
			return ev
		}
	}
	return Event{}
}

// TestDeferredGoogleJobs: BigQuery and Dataproc jobs are polled with a
// service account's token (fetched once) until DONE; a Cloud Run
// execution that completed with a failed task fails the attempt.
func TestDeferredGoogleJobs(t *testing.T) {
	srv := fakeGoogle(t)
	srv.KeyFile(t)
	out := `{"deferred": [{"service_type": "bigquery", "project": "p", "job_id": "bq1", "location": "US"},
		{"service_type": "dataproc", "project": "p", "region": "europe-west1", "cluster_name": "c", "job_id": "dp1"}]}`
	ev := trackOnce(t, srv.URL, out)
	if !ev.OK || string(ev.Output) != out {
		t.Errorf("bigquery and dataproc: ok %v, %q, output %s", ev.OK, ev.Err, ev.Output)
	}
	if n := srv.Tokens(); n != 1 {
		t.Errorf("%d tokens fetched, want 1", n)
	}
	exec := startExecution(t, srv, "projects/p/locations/europe-west1/jobs/nightly")
	srv.Fail(exec, "Task nightly-1-0 failed with exit code 3")
	ev = trackOnce(t, srv.URL, `{"deferred": [{"service_type": "cloudrun", "project": "p", "region": "europe-west1",
		"job_name": "nightly", "execution_id": "`+exec[strings.LastIndex(exec, "/")+1:]+`"}]}`)
	if ev.OK || !strings.Contains(ev.Err, "1 tasks failed, 0 cancelled: Task nightly-1-0 failed with exit code 3") {
		t.Errorf("cloudrun: ok %v, %q", ev.OK, ev.Err)
	}
}

package executors

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors/googletest"
)

const nightly = "projects/p/locations/europe-west1/jobs/nightly"

// startCloudRun starts job's execution on srv and returns its events.
func startCloudRun(t *testing.T, srv *googletest.Server, job Job, onStarted func()) <-chan Event {
	t.Helper()
	c := NewCloudRun(CloudRunConfig{Project: "p", Region: "europe-west1", Google: GoogleConfig{BaseURL: srv.URL}})
	events := make(chan Event, 10)
	_, err := c.Start(job, func(ev Event) {
		if ev.Kind == Started && onStarted != nil {
			onStarted()
		}
		events <- ev
	})
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func finished(t *testing.T, events <-chan Event) (started string, fin Event) {
	t.Helper()
	for ev := range events {
		switch ev.Kind {
		case Started:
			started = ev.RemoteID
		case Finished:
			return started, ev
		}
	}
	return "", Event{}
}

// startExecution starts an execution of job (a full name) on srv and
// returns its name.
func startExecution(t *testing.T, srv *googletest.Server, job string) string {
	t.Helper()
	p := strings.Split(job, "/")
	_, ev := finished(t, startCloudRun(t, srv, Job{TaskID: "r:t", Attempt: 1,
		CloudRun: &CloudRunJob{Project: p[1], Region: p[3], Job: p[5]}}, nil))
	var out struct {
		Deferred []descriptor `json:"deferred"`
	}
	if err := json.Unmarshal(ev.Output, &out); !ev.OK || err != nil || len(out.Deferred) != 1 {
		t.Fatalf("start %s: %+v, %v", job, ev, err)
	}
	return job + "/executions/" + out.Deferred[0].ExecutionID
}

// TestCloudRunStartsAnExecution: jobs.run is called with a key file's
// token, one task and the task contract in the container's environment
// (Ork's ORK_INPUT_JSON and its parameters, orkwal's ORKWAL_*, the
// task's env last), and the attempt ends deferring to the execution the
// answer names: Started with its name, Finished OK with one cloudrun
// descriptor, and its log says so.
func TestCloudRunStartsAnExecution(t *testing.T) {
	srv := googletest.New(t, nightly)
	srv.KeyFile(t)
	log := filepath.Join(t.TempDir(), "1.log")
	job := Job{RunID: "r1", TaskID: "r1:extract", TaskName: "extract", Workflow: "etl", Attempt: 2, ParallelCount: 1,
		LogPath: log, Env: map[string]string{"MODE": "full", "ORK_ATTEMPT": "mine"},
		Ork:      OrkTask{Inputs: []byte(`{"day":"2026-11-25"}`), MaxRetries: 3},
		CloudRun: &CloudRunJob{Job: "nightly"}}
	remote, ev := finished(t, startCloudRun(t, srv, job, nil))
	want := nightly + "/executions/nightly-1"
	if remote != want || !ev.OK {
		t.Fatalf("started %q, finished %+v", remote, ev)
	}
	if got := string(ev.Output); got != `{"deferred":[{"execution_id":"nightly-1","job_name":"nightly","project":"p","region":"europe-west1","service_type":"cloudrun"}]}` {
		t.Errorf("output %s", got)
	}
	runs := srv.Runs()
	if len(runs) != 1 || runs[0].Job != nightly || srv.Tokens() != 1 {
		t.Fatalf("runs %+v, %d tokens", runs, srv.Tokens())
	}
	overrides := runs[0].Body["overrides"].(map[string]any)
	env := map[string]string{}
	for _, e := range overrides["containerOverrides"].([]any)[0].(map[string]any)["env"].([]any) {
		kv := e.(map[string]any)
		env[kv["name"].(string)] = kv["value"].(string)
	}
	for k, v := range map[string]string{"ORK_INPUT_JSON": `{"day":"2026-11-25"}`, "ORKWAL_TASK_ID": "r1:extract",
		"ORKWAL_ATTEMPT": "2", "ORK_ATTEMPT": "mine", "MODE": "full", "max_retries": "3", "run_id": "r1", "workflow_name": "etl"} {
		if env[k] != v {
			t.Errorf("env %s = %q, want %q", k, env[k], v)
		}
	}
	if _, ok := env["ORKWAL_INPUT"]; ok || overrides["taskCount"] != 1.0 {
		t.Errorf("ORKWAL_INPUT (a local path) given, or taskCount %v", overrides["taskCount"])
	}
	if b, _ := os.ReadFile(log); !strings.Contains(string(b), "cloudrun: started execution "+want) {
		t.Errorf("log: %q", b)
	}
}

// TestCloudRunStartFailures: a job the API does not know fails the
// attempt with the API's message; a job with no project anywhere is
// refused at start, naming the fix.
func TestCloudRunStartFailures(t *testing.T) {
	srv := googletest.New(t, nightly)
	srv.KeyFile(t)
	_, ev := finished(t, startCloudRun(t, srv, Job{TaskID: "r:t", Attempt: 1, CloudRun: &CloudRunJob{Job: "nope"}}, nil))
	if ev.OK || !strings.Contains(ev.Err, "status 404: Resource 'projects/p/locations/europe-west1/jobs/nope' of kind 'JOB' does not exist") {
		t.Errorf("unknown job: %+v", ev)
	}
	_, err := NewCloudRun(CloudRunConfig{Region: "us-east1"}).Start(Job{CloudRun: &CloudRunJob{Job: "nightly"}}, func(Event) {})
	if err == nil || !strings.Contains(err.Error(), "has no project: set the task's project, or the daemon's --cloudrun-project") {
		t.Errorf("no project: %v", err)
	}
}

// TestCloudRunStopWhileStarting: a cancel that comes while jobs.run is
// under way cancels the execution it started as soon as it is known, and
// fails the attempt; a shutdown does not (the engine records the
// deferral, and the next boot polls it).
func TestCloudRunStopWhileStarting(t *testing.T) {
	srv := googletest.New(t, nightly)
	srv.KeyFile(t)
	for _, reason := range []string{"cancelled", StopShutdown} {
		handle := make(chan Handle, 1)
		c := NewCloudRun(CloudRunConfig{Project: "p", Region: "europe-west1", Google: GoogleConfig{BaseURL: srv.URL}})
		events := make(chan Event, 10)
		h, err := c.Start(Job{TaskID: "r:t", Attempt: 1, CloudRun: &CloudRunJob{Job: "nightly"}}, func(ev Event) {
			if ev.Kind == Started {
				(<-handle).Stop(0, reason) // the call has answered; the attempt has not ended
			}
			events <- ev
		})
		if err != nil {
			t.Fatal(err)
		}
		handle <- h
		remote, ev := finished(t, events)
		switch reason {
		case "cancelled":
			if ev.OK || ev.Err != "cancelled" || srv.Cancelled(t) != remote {
				t.Errorf("cancel: %+v", ev)
			}
		default:
			if !ev.OK || len(srv.Cancels) != 0 {
				t.Errorf("shutdown: %+v, %d cancels", ev, len(srv.Cancels))
			}
		}
	}
}

// TestCloudRunOwnedTracking: the deferred wait of an execution the
// attempt started (Owned) ends OK with no output when it succeeds, fails
// with its Completed condition's message when it fails, cancels it when
// stopped for a timeout, and leaves it running when stopped for a
// shutdown.
func TestCloudRunOwnedTracking(t *testing.T) {
	srv := googletest.New(t, nightly)
	srv.KeyFile(t)
	d := NewDeferred(DeferredConfig{PollInterval: time.Millisecond, Google: GoogleConfig{BaseURL: srv.URL}})
	track := func(exec string) (Handle, <-chan Event) {
		events := make(chan Event, 1000)
		h, err := d.Start(Job{TaskID: "r:t", Attempt: 1, Deferred: &DeferredJob{Output: deferredExecution(exec), Owned: true}},
			func(ev Event) { events <- ev })
		if err != nil {
			t.Fatal(err)
		}
		return h, events
	}
	ok := startExecution(t, srv, nightly)
	srv.Succeed(ok)
	if _, ev := finished(t, second(track(ok))); !ev.OK || ev.Output != nil {
		t.Errorf("succeeded: %+v", ev)
	}
	bad := startExecution(t, srv, nightly)
	srv.Fail(bad, "Task nightly-2-0 failed with exit code 3")
	if _, ev := finished(t, second(track(bad))); ev.OK || !strings.Contains(ev.Err, "1 tasks failed, 0 cancelled: Task nightly-2-0 failed with exit code 3") {
		t.Errorf("failed: %+v", ev)
	}
	for _, reason := range []string{"timeout after 1h0m0s", StopShutdown} {
		exec := startExecution(t, srv, nightly)
		h, events := track(exec)
		for srv.Polled(t) != exec {
		}
		h.Stop(0, reason)
		_, ev := finished(t, events)
		cancelled := len(srv.Cancels) > 0 && <-srv.Cancels == exec
		if ev.OK || ev.Err != reason || cancelled != (reason != StopShutdown) {
			t.Errorf("stop for %q: %+v, cancelled %v", reason, ev, cancelled)
		}
	}
}

func second(_ Handle, events <-chan Event) <-chan Event { return events }

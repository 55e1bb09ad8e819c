package engine

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay/workflow"
)

// jobServer is a deferred job's status endpoint: "running" until done is
// closed, then "done"; each poll is signalled on polls, and the most polls
// in progress at once is kept.
type jobServer struct {
	*httptest.Server
	done    chan struct{}
	polls   chan struct{}
	active  atomic.Int32
	maxSeen atomic.Int32
}

func newJobServer(t *testing.T) *jobServer {
	s := &jobServer{done: make(chan struct{}), polls: make(chan struct{}, 1000)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.active.Add(1)
		defer s.active.Add(-1)
		for m := s.maxSeen.Load(); n > m && !s.maxSeen.CompareAndSwap(m, n); m = s.maxSeen.Load() {
		}
		if r.Header.Get("Authorization") != "Bearer t0k" {
			http.Error(w, `{"error": "no token"}`, http.StatusUnauthorized)
			return
		}
		status := "running"
		select {
		case <-s.done:
			status = "done"
		default:
		}
		w.Write([]byte(`{"status": "` + status + `"}`))
		s.polls <- struct{}{}
	}))
	t.Cleanup(s.Close)
	return s
}

// trackers is a Deferred executor whose polling a test can end, as the
// death of the daemon's process would (crash only stops the loop).
type trackers struct {
	ex      executors.Executor
	mu      sync.Mutex
	handles []executors.Handle
}

func (k *trackers) Start(job executors.Job, report func(executors.Event)) (executors.Handle, error) {
	h, err := k.ex.Start(job, report)
	if err == nil {
		k.mu.Lock()
		k.handles = append(k.handles, h)
		k.mu.Unlock()
	}
	return h, err
}

func (k *trackers) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, h := range k.handles {
		h.Stop(0, executors.StopShutdown) // a dead daemon cancels nothing remote
	}
}

const deferTasks = `
import json, os

def start(url, marker):
    with open(marker, "a") as f:
        f.write("ran\n")
    return {"job": "j1", "deferred": [
        {"service_type": "custom_http", "url": url, "method": "GET", "headers": {"Authorization": "Bearer t0k"},
         "status_field": "status", "success_value": "done", "failure_value": "failed", "job_id": url}]}

def after(up):
    return {"got": up["job"], "deferred_jobs": len(up["deferred"])}

def mock(url):
    return {"deferred": [{"service_type": "custom_http", "url": url}]}
`

func deferSpec(t *testing.T, dir, url string) *workflow.Spec {
	t.Helper()
	return deferWorkflow(t, dir, "defer.yaml", `name: defer
tasks:
  start:
    executor: python
    file: tasks.py
    function: start
    inputs: {url: {const: "`+url+`"}, marker: {const: "`+filepath.Join(dir, "ran")+`"}}
  after:
    executor: python
    file: tasks.py
    function: after
    depends_on: [start]
    inputs: {up: {ref: tasks.start.output}}
`)
}

// deferWorkflow writes deferTasks to dir/tasks.py and parses the workflow
// file dir/name whose text is body.
func deferWorkflow(t *testing.T, dir, name, body string) *workflow.Spec {
	t.Helper()
	os.WriteFile(filepath.Join(dir, "tasks.py"), []byte(deferTasks), 0o644)
	spec, err := workflow.Parse(filepath.Join(dir, name), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// replaysTheSame closes e cleanly and opens its data folder again with
// open: the replayed state must equal e's live one.
func replaysTheSame(t *testing.T, e *Engine, open func() *Engine) {
	t.Helper()
	live, _ := e.StateHash()
	e.Close()
	back := open()
	defer back.Close()
	if h, _ := back.StateHash(); h != live {
		t.Errorf("replayed state %x, live %x", h, live)
	}
}

func openDeferring(t *testing.T, dir string, k *trackers) *Engine {
	t.Helper()
	e, err := Open(Config{DataDir: dir, Logger: quiet, Deferred: k})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	e.Start()
	return e
}

// TestDeferredTaskResumesAfterACrash: a python task returning
// {"deferred": [custom_http]} ends its process and stays running while the
// job's status endpoint says "running"; a crash mid-wait and a boot resume
// the polling (the function does not run again, one poll at a time), and
// once the endpoint says "done" the task succeeds with what it returned,
// which the downstream task receives. The state replayed after a clean
// shutdown equals the live one.
func TestDeferredTaskResumesAfterACrash(t *testing.T) {
	srv := newJobServer(t)
	dir, data := t.TempDir(), t.TempDir()
	poll := func() executors.Executor {
		return executors.NewDeferred(executors.DeferredConfig{PollInterval: time.Millisecond})
	}
	first := &trackers{ex: poll()}
	e := openDeferring(t, data, first)
	put(t, e, deferSpec(t, dir, srv.URL+"/jobs/j1"))
	id := trigger(t, e, "defer")
	<-srv.polls
	run, err := e.Run(id)
	if err != nil || run.Tasks[0].Status != "running" || run.Tasks[1].Status != "pending" {
		t.Fatalf("while the job runs: %+v, %v", run, err)
	}
	crash(e)
	first.kill()

	second := &trackers{ex: poll()}
	e = openDeferring(t, data, second)
	for len(srv.polls) > 0 {
		<-srv.polls
	}
	<-srv.polls // polled again after the boot
	close(srv.done)
	run, err = e.WaitRun(t.Context(), id)
	if err != nil || run.Status != "success" {
		t.Fatalf("run: %+v, %v", run, err)
	}
	if got := string(run.Tasks[1].Output); got != `{"got":"j1","deferred_jobs":1}` {
		t.Errorf("after's output = %s", got)
	}
	if run.Tasks[0].Attempt != 1 || !strings.Contains(string(run.Tasks[0].Output), `"job":"j1"`) {
		t.Errorf("start: attempt %d, output %s", run.Tasks[0].Attempt, run.Tasks[0].Output)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "ran")); string(b) != "ran\n" {
		t.Errorf("the deferring function ran %q, want once", b)
	}
	if n := srv.maxSeen.Load(); n != 1 {
		t.Errorf("%d polls at once, want 1", n)
	}
	replaysTheSame(t, e, func() *Engine { return openDeferring(t, data, &trackers{ex: poll()}) })
}

// TestDeferredMockFailedFailsTheTask: Ork's mock://failed job fails the
// task (retries as usual) and its downstream task is skipped;
// mock://success completes it at once.
func TestDeferredMockFailedFailsTheTask(t *testing.T) {
	dir := t.TempDir()
	spec := deferWorkflow(t, dir, "mock.yaml", `name: mock
tasks:
  ok:
    executor: python
    file: tasks.py
    function: mock
    inputs: {url: {const: "mock://success/j1"}}
  bad:
    executor: python
    file: tasks.py
    function: mock
    retries: 1
    retry_backoff: {initial: 1ms}
    inputs: {url: {const: "mock://failed/j2"}}
`)
	e := openDeferring(t, t.TempDir(), &trackers{ex: executors.NewDeferred(executors.DeferredConfig{})})
	defer e.Close()
	put(t, e, spec)
	run, err := e.WaitRun(t.Context(), trigger(t, e, "mock"))
	if err != nil || run.Status != "failed" {
		t.Fatalf("run: %+v, %v", run, err)
	}
	ok, bad := run.Tasks[0], run.Tasks[1]
	if ok.Status != "success" || string(ok.Output) != `{"deferred":[{"service_type":"custom_http","url":"mock://success/j1"}]}` {
		t.Errorf("ok: %s %s", ok.Status, ok.Output)
	}
	if bad.Status != "failed" || bad.Attempt != 2 || !strings.Contains(bad.Error, "mock job failed") {
		t.Errorf("bad: %s attempt %d: %s", bad.Status, bad.Attempt, bad.Error)
	}
}

// TestDeferredTaskShutdownAndCancel: a shutdown stops the polling of a
// deferred task (a mock:// job that never ends) without ending its
// attempt, which the next boot polls again; cancelling the run then stops
// it, and the task ends cancelled.
func TestDeferredTaskShutdownAndCancel(t *testing.T) {
	dir := t.TempDir()
	spec := deferWorkflow(t, dir, "forever.yaml", `name: forever
tasks:
  wait:
    executor: python
    file: tasks.py
    function: mock
    inputs: {url: {const: "mock://running/j3"}}
`)
	beats := make(chan struct{}, 1)
	tracker := &trackers{ex: &beating{executors.NewDeferred(executors.DeferredConfig{PollInterval: time.Millisecond}), beats}}
	data := t.TempDir()
	e := openDeferring(t, data, tracker)
	put(t, e, spec)
	id := trigger(t, e, "forever")
	<-beats // polled once, still running
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openDeferring(t, data, tracker)
	defer e.Close()
	for len(beats) > 0 {
		<-beats
	}
	<-beats // the shutdown left it deferred: polled again
	if run, _ := e.Run(id); run.Tasks[0].Status != "running" || run.Tasks[0].Attempt != 1 {
		t.Fatalf("after a shutdown: %s, attempt %d", run.Tasks[0].Status, run.Tasks[0].Attempt)
	}
	if _, err := e.CancelRun(id); err != nil {
		t.Fatal(err)
	}
	run, err := e.WaitRun(t.Context(), id)
	if err != nil || run.Status != "cancelled" || run.Tasks[0].Status != "cancelled" {
		t.Fatalf("run: %+v, %v", run, err)
	}
}

// beating signals each heartbeat of the jobs it tracks.
type beating struct {
	ex    executors.Executor
	beats chan struct{}
}

func (b *beating) Start(job executors.Job, report func(executors.Event)) (executors.Handle, error) {
	return b.ex.Start(job, func(ev executors.Event) {
		if ev.Kind == executors.Heartbeat {
			select {
			case b.beats <- struct{}{}:
			default:
			}
		}
		report(ev)
	})
}

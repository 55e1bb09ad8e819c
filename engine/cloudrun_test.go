package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/executors/googletest"
	"github.com/orkwal/orkwal/replay/workflow"
)

const nightlyJob = "projects/p/locations/europe-west1/jobs/nightly"

// cloudRunFake is a stand-in for Google's token endpoint and Cloud Run
// API (a key file for it in GOOGLE_APPLICATION_CREDENTIALS), and the
// engine config that reaches it: the cloudrun executor, a 1 ms poll.
func cloudRunFake(t *testing.T) (*googletest.Server, func(dir string, clock Clock) (*Engine, *trackers)) {
	srv := googletest.New(t, nightlyJob)
	srv.KeyFile(t)
	google := executors.GoogleConfig{BaseURL: srv.URL}
	open := func(dir string, clock Clock) (*Engine, *trackers) {
		t.Helper()
		k := &trackers{ex: executors.NewDeferred(executors.DeferredConfig{PollInterval: time.Millisecond, Google: google})}
		e, err := Open(Config{DataDir: dir, Logger: quiet, Clock: clock, Deferred: k, Executors: map[string]executors.Executor{
			"noop":     executors.Noop{},
			"cloudrun": executors.NewCloudRun(executors.CloudRunConfig{Project: "p", Region: "europe-west1", Google: google}),
		}})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		e.Start()
		return e, k
	}
	return srv, open
}

func cloudRunSpec(t *testing.T, task string) *workflow.Spec {
	t.Helper()
	spec, err := workflow.Parse("nightly.yaml", []byte("name: nightly\ntasks:\n  etl:\n"+task+"  after:\n    executor: noop\n    depends_on: [etl]\n"))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// nightlyTask is the etl task of cloudRunSpec: one execution of nightlyJob.
const nightlyTask = "    executor: cloudrun\n    job: nightly\n"

// oneExecution: srv started one execution and cancelled none.
func oneExecution(t *testing.T, srv *googletest.Server) {
	t.Helper()
	if n := len(srv.Runs()); n != 1 || len(srv.Cancels) != 0 {
		t.Errorf("%d executions started, %d cancelled; want 1, 0", n, len(srv.Cancels))
	}
}

// TestCloudRunTask: a cloudrun task starts one execution of its job and
// runs (deferred, no process) until the execution succeeds; then it
// succeeds with no output, and its downstream task runs. An execution
// that fails fails its task with the execution's message.
func TestCloudRunTask(t *testing.T) {
	srv, open := cloudRunFake(t)
	e, _ := open(t.TempDir(), nil)
	defer e.Close()
	put(t, e, cloudRunSpec(t, nightlyTask))

	id := trigger(t, e, "nightly")
	exec := srv.Polled(t)
	if run, _ := e.Run(id); run.Tasks[0].Status != "running" || run.Tasks[1].Status != "pending" {
		t.Fatalf("while the execution runs: %s, %s", run.Tasks[0].Status, run.Tasks[1].Status)
	}
	srv.Succeed(exec)
	run, err := e.WaitRun(t.Context(), id)
	if err != nil || run.Status != "success" || run.Tasks[0].Output != nil {
		t.Fatalf("run: %+v, %v", run, err)
	}

	id = trigger(t, e, "nightly")
	srv.Fail(srv.Polled(t, exec), "Task nightly-2-0 failed with exit code 3")
	run, err = e.WaitRun(t.Context(), id)
	if err != nil || run.Status != "failed" || !strings.Contains(run.Tasks[0].Error, "Task nightly-2-0 failed with exit code 3") {
		t.Fatalf("run: %+v, %v", run, err)
	}
	if n := len(srv.Runs()); n != 2 {
		t.Errorf("%d executions started, want 2", n)
	}
}

// TestCloudRunTaskCancelAndTimeout: cancelling the run, and the task's
// timeout, cancel its execution (executions.cancel) and end the task.
func TestCloudRunTaskCancelAndTimeout(t *testing.T) {
	srv, open := cloudRunFake(t)
	clock := &fakeClock{}
	e, _ := open(t.TempDir(), clock)
	defer e.Close()
	put(t, e, cloudRunSpec(t, nightlyTask+"    timeout: 1h\n"))

	id := trigger(t, e, "nightly")
	exec := srv.Polled(t)
	if _, err := e.CancelRun(id); err != nil {
		t.Fatal(err)
	}
	if got := srv.Cancelled(t); got != exec {
		t.Errorf("cancelled %s, want %s", got, exec)
	}
	run, err := e.WaitRun(t.Context(), id)
	if err != nil || run.Status != "cancelled" || run.Tasks[0].Status != "cancelled" {
		t.Fatalf("cancelled run: %+v, %v", run, err)
	}

	id = trigger(t, e, "nightly")
	exec = srv.Polled(t, exec)
	clock.Advance(time.Hour + time.Second)
	if got := srv.Cancelled(t); got != exec {
		t.Errorf("cancelled %s, want %s", got, exec)
	}
	run, err = e.WaitRun(t.Context(), id)
	if err != nil || run.Status != "failed" || run.Tasks[0].Error != "timeout after 1h0m0s" {
		t.Fatalf("timed out run: %+v, %v", run, err)
	}
}

// TestCloudRunTaskResumesAfterACrash: a crash while the execution runs,
// and a boot, resume the polling of the same execution (jobs.run is not
// called again, the attempt is the same); the task then succeeds. The
// state replayed after a clean shutdown equals the live one.
func TestCloudRunTaskResumesAfterACrash(t *testing.T) {
	srv, open := cloudRunFake(t)
	data := t.TempDir()
	e, first := open(data, nil)
	put(t, e, cloudRunSpec(t, nightlyTask))
	id := trigger(t, e, "nightly")
	exec := srv.Polled(t)
	crash(e)
	first.kill()

	e, _ = open(data, nil)
	for len(srv.Polls) > 0 {
		<-srv.Polls
	}
	if got := srv.Polled(t); got != exec {
		t.Fatalf("polled %s after the boot, want %s", got, exec)
	}
	srv.Succeed(exec)
	run, err := e.WaitRun(t.Context(), id)
	if err != nil || run.Status != "success" || run.Tasks[0].Attempt != 1 {
		t.Fatalf("run: %+v, %v", run, err)
	}
	oneExecution(t, srv)
	replaysTheSame(t, e, func() *Engine { back, _ := open(data, nil); return back })
}

// TestCloudRunShutdownWhileStarting: a shutdown while jobs.run is under
// way waits for its answer and records the execution it started
// (task_deferred) without cancelling it; the next boot polls that
// execution, and no second one is started.
func TestCloudRunShutdownWhileStarting(t *testing.T) {
	srv, open := cloudRunFake(t)
	srv.Hold, srv.Held = make(chan struct{}), make(chan struct{}, 1)
	data := t.TempDir()
	e, _ := open(data, nil)
	put(t, e, cloudRunSpec(t, nightlyTask))
	id := trigger(t, e, "nightly")
	<-srv.Held
	closed := make(chan error, 1)
	go func() { closed <- e.Close() }()
	close(srv.Hold)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	e, _ = open(data, nil)
	defer e.Close()
	exec := srv.Polled(t)
	srv.Succeed(exec)
	run, err := e.WaitRun(t.Context(), id)
	if err != nil || run.Status != "success" || run.Tasks[0].Attempt != 1 {
		t.Fatalf("run: %+v, %v", run, err)
	}
	oneExecution(t, srv)
}

// TestGoogleTokenIsShared: the engine's default cloudrun executor, which
// starts an execution (jobs.run), and its Deferred one, which polls it
// (executions.get), share one access token: one fetch for both kinds of
// call, not one each.
func TestGoogleTokenIsShared(t *testing.T) {
	srv := googletest.New(t, nightlyJob)
	srv.KeyFile(t)
	e, err := Open(Config{DataDir: t.TempDir(), Logger: quiet,
		CloudRun: executors.CloudRunConfig{Project: "p", Region: "europe-west1", Google: executors.GoogleConfig{BaseURL: srv.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	defer e.Close()
	put(t, e, cloudRunSpec(t, nightlyTask))
	trigger(t, e, "nightly")
	srv.Polled(t) // both calls were authorized
	if n := len(srv.Runs()); n != 1 {
		t.Errorf("%d executions started, want 1", n)
	}
	if n := srv.Tokens(); n != 1 {
		t.Errorf("%d tokens fetched for a start and a poll, want 1", n)
	}
}

package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
)

// clocked opens an engine on a manual clock the test advances.
func clocked(t *testing.T, dir string, ex executors.Executor, maxConc int) (*Engine, *fakeClock) {
	t.Helper()
	clock := &fakeClock{}
	e, err := Open(Config{DataDir: dir, MaxConcurrent: maxConc, Clock: clock, Logger: quiet, KillGrace: time.Second,
		Executors: map[string]executors.Executor{"process": ex, "noop": executors.Noop{}}})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	return e, clock
}

func one(name string, mod func(*workflow.Task)) *workflow.Spec {
	tk := &workflow.Task{Name: "t", Executor: "process", Command: []string{"x"}}
	mod(tk)
	return &workflow.Spec{Name: name, Tasks: []*workflow.Task{tk}}
}

func taskView(e *Engine, run, key string) TaskView {
	r, _ := e.Run(run)
	for _, t := range r.Tasks {
		if t.Name == key {
			return t
		}
	}
	return TaskView{}
}

// advance moves the clock after the engine has committed what it was given,
// so that the timers it armed exist.
func advance(t *testing.T, e *Engine, c *fakeClock, d time.Duration) {
	t.Helper()
	c.Advance(d)
}

func TestRetryAfterBackoffSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e, clock := clocked(t, dir, m, 4)
	put(t, e, one("w", func(tk *workflow.Task) {
		tk.Retries = 2
		tk.RetryBackoff = &workflow.Backoff{Initial: 10 * time.Second, Max: time.Minute, Factor: 2}
	}))
	id := trigger(t, e, "w")
	m.finish(m.next(), false)
	waitFor(t, e, "first failure recorded", func() bool { return taskView(e, id, "t").Failures == 1 })
	tv := taskView(e, id, "t")
	if tv.Status != "pending" || tv.NotBefore == nil || !strings.HasPrefix(tv.WaitingOn[0], "not before") {
		t.Fatalf("after a failure: %+v", tv)
	}
	m.none()
	crash(e) // the backoff deadline is in the log

	m2 := newManual(t, dir)
	e2, err := Open(Config{DataDir: dir, MaxConcurrent: 4, Clock: clock, Logger: quiet,
		Executors: map[string]executors.Executor{"process": m2}})
	if err != nil {
		t.Fatal(err)
	}
	e2.Start()
	defer e2.Close()
	trigger(t, e2, "w") // a turn has passed: the retry is still waiting
	if j := m2.next(); j.RunID == id {
		t.Fatalf("retry dispatched before its backoff ended")
	} else {
		m2.finish(j, true)
	}
	advance(t, e2, clock, 10*time.Second)
	j := m2.next()
	if j.RunID != id || j.Attempt != 2 {
		t.Fatalf("after the backoff: %s attempt %d, want %s attempt 2", j.RunID, j.Attempt, id)
	}
	m2.finish(j, true)
	waitFor(t, e2, "run success", func() bool { return runStatus(e2, id) == "success" })
}

func TestTimeoutStopsAndRetries(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e, clock := clocked(t, dir, m, 4)
	defer e.Close()
	put(t, e, one("w", func(tk *workflow.Task) {
		tk.Timeout = 30 * time.Second
		tk.Retries = 1
		tk.RetryBackoff = &workflow.Backoff{Initial: time.Second, Max: time.Second, Factor: 1}
	}))
	id := trigger(t, e, "w")
	m.next()
	waitFor(t, e, "running", func() bool { return taskView(e, id, "t").Status == "running" })
	advance(t, e, clock, 30*time.Second) // the manual handle reports Finished on Stop
	waitFor(t, e, "timeout recorded", func() bool { return taskView(e, id, "t").Failures == 1 })
	if tv := taskView(e, id, "t"); tv.Error != "timeout after 30s" {
		t.Fatalf("error %q, want timeout after 30s", tv.Error)
	}
	advance(t, e, clock, time.Second)
	if j := m.next(); j.Attempt != 2 {
		t.Fatalf("retry attempt %d", j.Attempt)
	}
}

func TestHeartbeatAndNeverStarted(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e, clock := clocked(t, dir, m, 4)
	defer e.Close()
	put(t, e, one("w", func(tk *workflow.Task) { tk.HeartbeatTimeout = 10 * time.Second }))
	id := trigger(t, e, "w")
	j := m.next()
	waitFor(t, e, "running", func() bool { return taskView(e, id, "t").Status == "running" })
	advance(t, e, clock, 6*time.Second)
	m.beat(j)
	settle(t, e)
	advance(t, e, clock, 6*time.Second) // 12s since start, 6s since the beat: alive
	settle(t, e)
	if tv := taskView(e, id, "t"); tv.Status != "running" {
		t.Fatalf("a beating task failed: %+v", tv)
	}
	advance(t, e, clock, 5*time.Second) // 11s since the beat: stale
	waitFor(t, e, "stale heartbeat", func() bool { return taskView(e, id, "t").Status == "failed" })
	if tv := taskView(e, id, "t"); tv.Error != "heartbeat timeout (none for 10s)" {
		t.Fatalf("error %q", tv.Error)
	}

	silent := &silentExec{manual: newManual(t, dir)}
	e.cfg.Executors["noop"] = silent
	put(t, e, &workflow.Spec{Name: "s", Tasks: []*workflow.Task{{Name: "t", Executor: "noop", StartTimeout: time.Minute}}})
	sid := trigger(t, e, "s")
	silent.next()
	advance(t, e, clock, time.Minute)
	waitFor(t, e, "never started", func() bool { return taskView(e, sid, "t").Status == "failed" })
	if tv := taskView(e, sid, "t"); !strings.HasPrefix(tv.Error, "never started") {
		t.Fatalf("error %q", tv.Error)
	}
}

// settle waits until the engine has taken every event it was given.
func settle(t *testing.T, e *Engine) {
	t.Helper()
	if _, err := e.do(func(*replayState, int64) (replayRecord, any, error) { return nil, nil, nil }); err != nil {
		t.Fatal(err)
	}
	e.launcher.wait() // and every start those turns decided has been made
}

func TestCancelStopsRunningAndPending(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e, _ := clocked(t, dir, m, 1)
	defer e.Close()
	put(t, e, flat("three", 3))
	id := trigger(t, e, "three")
	m.next()
	waitFor(t, e, "a running", func() bool { return taskView(e, id, "a").Status == "running" })
	if _, err := e.CancelRun(id); err != nil {
		t.Fatal(err)
	}
	waitFor(t, e, "cancelled", func() bool { return runStatus(e, id) == "cancelled" })
	for _, k := range []string{"a", "b", "c"} {
		if tv := taskView(e, id, k); tv.Status != "cancelled" {
			t.Errorf("task %s is %s", k, tv.Status)
		}
	}
	if _, err := e.CancelRun(id); err != nil {
		t.Fatalf("cancel of a cancelled run: %v, want no-op", err)
	}
	m.none()
}

func TestRetryRunReRunsFailuresOnly(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e, _ := clocked(t, dir, m, 4)
	defer e.Close()
	put(t, e, diamond("process"))
	id := trigger(t, e, "diamond")
	m.finish(m.next(), true)
	bc := m.nextSorted(2, byTaskName)
	b, c := bc[0], bc[1]
	m.finish(b, false)
	if _, err := e.RetryRun(id); !errors.Is(err, ErrConflict) {
		t.Fatalf("retry while active: %v, want ErrConflict", err)
	}
	m.finish(c, true)
	waitFor(t, e, "failed", func() bool { return runStatus(e, id) == "failed" })
	if _, err := e.RetryRun(id); err != nil {
		t.Fatal(err)
	}
	b2 := m.next()
	if b2.TaskName != "b" || b2.Attempt != 2 {
		t.Fatalf("rerun started %s attempt %d, want b attempt 2", b2.TaskName, b2.Attempt)
	}
	m.finish(b2, true)
	m.finish(m.next(), true) // d
	waitFor(t, e, "success", func() bool { return runStatus(e, id) == "success" })
	if _, err := e.CancelRun(id); !errors.Is(err, ErrConflict) {
		t.Fatalf("cancel of a successful run: %v, want ErrConflict", err)
	}
	if tv := taskView(e, id, "a"); tv.Attempt != 1 {
		t.Fatalf("a ran again: attempt %d", tv.Attempt)
	}
}

// outputs is an executor that succeeds at once with a fixed output per task.
type outputs struct {
	manual *manual
	out    map[string]string
}

func (o *outputs) Start(job executors.Job, report func(executors.Event)) (executors.Handle, error) {
	if out, ok := o.out[job.TaskName]; ok {
		report(executors.Event{Kind: executors.Started, TaskID: job.TaskID, Attempt: job.Attempt})
		report(executors.Event{Kind: executors.Finished, TaskID: job.TaskID, Attempt: job.Attempt, OK: true, Output: []byte(out)})
		return nopHandle{}, nil
	}
	return o.manual.Start(job, report)
}

func TestForeachWithConcurrencyAndInputs(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	ex := &outputs{manual: m, out: map[string]string{"discover": `{"files": ["a", "b", "c", "d"], "meta": {"n": 4}}`}}
	e, _ := clocked(t, dir, ex, 16)
	defer e.Close()
	put(t, e, &workflow.Spec{Name: "fan", Tasks: []*workflow.Task{
		{Name: "discover", Executor: "process", Command: []string{"x"}},
		{Name: "each", Executor: "process", Command: []string{"x"}, DependsOn: []string{"discover"},
			Foreach: "discover.files", Concurrency: 2,
			Inputs: map[string]workflow.Input{"n": {Ref: "tasks.discover.output.meta.n"}, "k": {Const: []byte(`"v"`)}}},
		{Name: "join", Executor: "process", Command: []string{"x"}, DependsOn: []string{"each"}},
	}})
	id := trigger(t, e, "fan")
	js := m.nextSorted(2, func(j executors.Job) string { return fmt.Sprint(j.ParallelIndex) })
	j0, j1 := js[0], js[1]
	settle(t, e)
	m.none() // concurrency 2
	var in struct {
		Inputs map[string]json.RawMessage
		Item   string
	}
	json.Unmarshal(j0.Input, &in)
	if j0.ParallelIndex != 0 || j0.ParallelCount != 4 || in.Item != "a" || string(in.Inputs["n"]) != "4" || string(in.Inputs["k"]) != `"v"` {
		t.Fatalf("instance 0: index %d count %d input %s", j0.ParallelIndex, j0.ParallelCount, j0.Input)
	}
	if tv := taskView(e, id, "each[2]"); len(tv.WaitingOn) != 1 || !strings.Contains(tv.WaitingOn[0], "concurrency 2") {
		t.Fatalf("each[2] waiting on %v", tv.WaitingOn)
	}
	m.finish(j0, true)
	j2 := m.next()
	m.finish(j1, true)
	j3 := m.next()
	m.finish(j2, true)
	settle(t, e)
	m.none() // join waits for every instance
	m.finish(j3, true)
	if j := m.next(); j.TaskName != "join" {
		t.Fatalf("after the instances: %s", j.TaskName)
	}
}

func TestMutexAndMaxActiveRuns(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e, _ := clocked(t, dir, m, 16)
	defer e.Close()
	put(t, e, &workflow.Spec{Name: "mig", Params: map[string]string{"db": "x"}, Tasks: []*workflow.Task{
		{Name: "migrate", Executor: "process", Command: []string{"x"}, Mutex: "db-{{params.db}}"}}})
	r1, _ := e.Trigger("mig", map[string]string{"db": "a"}, "test")
	r2, _ := e.Trigger("mig", map[string]string{"db": "a"}, "test")
	r3, _ := e.Trigger("mig", map[string]string{"db": "b"}, "test")
	j1, j3 := m.next(), m.next() // started concurrently: in either order
	if j1.RunID == r3 {
		j1, j3 = j3, j1
	}
	if j1.RunID != r1 || j3.RunID != r3 {
		t.Fatalf("started %s and %s, want runs 1 and 3", j1.RunID, j3.RunID)
	}
	settle(t, e)
	m.none()
	if tv := taskView(e, r2, "migrate"); !strings.Contains(strings.Join(tv.WaitingOn, ""), `mutex "db-a" held by `+r1) {
		t.Fatalf("r2 waiting on %v", tv.WaitingOn)
	}
	m.finish(j1, true)
	if j := m.next(); j.RunID != r2 {
		t.Fatalf("after r1: %s, want r2", j.RunID)
	}

	put(t, e, &workflow.Spec{Name: "one", MaxActiveRuns: 1, Tasks: []*workflow.Task{{Name: "t", Executor: "process", Command: []string{"x"}}}})
	a := trigger(t, e, "one")
	b := trigger(t, e, "one")
	ja := m.next()
	settle(t, e)
	m.none()
	if r, _ := e.Run(b); r.Status != "pending" || !strings.Contains(strings.Join(r.Tasks[0].WaitingOn, ""), "max_active_runs 1") {
		t.Fatalf("second run: %s %v", r.Status, r.Tasks[0].WaitingOn)
	}
	m.finish(ja, true)
	if j := m.next(); j.RunID != b {
		t.Fatalf("after %s: %s, want %s", a, j.RunID, b)
	}
}

type (
	replayState  = replay.State
	replayRecord = replay.Record
)

// TestCrashWhileFanOutRuns: a fan-out node is running while its instances
// run; at boot only the instances are attempts to interrupt, never the
// node (found by the power-loss harness).
func TestCrashWhileFanOutRuns(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e, _ := clocked(t, dir, m, 4)
	put(t, e, &workflow.Spec{Name: "fan", Tasks: []*workflow.Task{
		{Name: "each", Executor: "process", Command: []string{"x"}, Parallel: 2}}})
	id := trigger(t, e, "fan")
	m.next()
	m.next()
	crash(e)
	m2 := newManual(t, dir)
	e2, _ := clocked(t, dir, m2, 4)
	defer e2.Close()
	m2.finish(m2.next(), true)
	m2.finish(m2.next(), true)
	waitFor(t, e2, "run after the crash", func() bool { return runStatus(e2, id) == "success" })
}

func TestIdempotentTriggerAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, executors.Noop{}, 4)
	put(t, e, diamond("noop"))
	id, created, err := e.TriggerIdempotent("diamond", nil, "api", "order-42")
	if err != nil || !created {
		t.Fatalf("first trigger: %v created=%v", err, created)
	}
	again, created, err := e.TriggerIdempotent("diamond", nil, "api", "order-42")
	if err != nil || created || again != id {
		t.Fatalf("same key: %s created=%v err=%v, want %s and not created", again, created, err, id)
	}
	crash(e)
	e2 := openEngine(t, dir, executors.Noop{}, 4)
	defer e2.Close()
	if again, created, _ := e2.TriggerIdempotent("diamond", nil, "api", "order-42"); created || again != id {
		t.Fatalf("after a restart: %s created=%v, want %s", again, created, id)
	}
	if other, created, _ := e2.TriggerIdempotent("diamond", nil, "api", "order-43"); !created || other == id {
		t.Fatal("another key must make another run")
	}
	if len(e2.Runs(RunFilter{})) != 2 {
		t.Fatalf("%d runs, want 2", len(e2.Runs(RunFilter{})))
	}
}

func TestInputDocumentIsValidJSON(t *testing.T) {
	in := &taskInput{Params: map[string]string{"b": "x\"y", "a": "1"},
		Inputs:   map[string]json.RawMessage{"n": json.RawMessage(`5`), "s": json.RawMessage(`"v"`)},
		Upstream: map[string]json.RawMessage{"up": json.RawMessage(`{"k": [1, 2]}`)}, Item: json.RawMessage(`"it"`)}
	var back map[string]any
	if err := json.Unmarshal(in.encode(), &back); err != nil {
		t.Fatalf("%s: %v", in.encode(), err)
	}
	want := `{"params":{"a":"1","b":"x\"y"},"inputs":{"n":5,"s":"v"},"upstream":{"up":{"k": [1, 2]}},"item":"it"}`
	if got := string(in.encode()); got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	empty := &taskInput{Params: map[string]string{}, Inputs: map[string]json.RawMessage{}, Upstream: map[string]json.RawMessage{}}
	if got := string(empty.encode()); got != `{"params":{},"inputs":{},"upstream":{}}` {
		t.Fatalf("empty input %s", got)
	}
}

// TestRerunOfAFanOutCleanupWaitsForItsUpstream: a fan-out with
// on_failure: run runs once its upstream tasks ended, whatever their
// outcome. A rerun resets its upstream task that failed and its instances
// that failed, and dispatched those instances at once, beside the task
// they clean up after. They wait until it ended again, across a restart
// too.
func TestRerunOfAFanOutCleanupWaitsForItsUpstream(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e, _ := clocked(t, dir, m, 16)
	put(t, e, &workflow.Spec{Name: "w", Tasks: []*workflow.Task{
		{Name: "work", Executor: "process", Command: []string{"x"}},
		{Name: "clean", Executor: "process", Command: []string{"x"}, DependsOn: []string{"work"}, OnFailure: "run", Parallel: 2},
	}})
	id := trigger(t, e, "w")
	m.finish(m.next(), false)
	cl := m.nextSorted(2, func(j executors.Job) string { return fmt.Sprint(j.ParallelIndex) })
	m.finish(cl[0], true)
	m.finish(cl[1], false)
	waitFor(t, e, "failed", func() bool { return runStatus(e, id) == "failed" })
	if _, err := e.RetryRun(id); err != nil {
		t.Fatal(err)
	}
	if j := m.next(); j.TaskName != "work" {
		t.Fatalf("the rerun started %s[%d] first, want work", j.TaskName, j.ParallelIndex)
	}
	settle(t, e)
	m.none()
	if tv := taskView(e, id, "clean[1]"); !strings.Contains(strings.Join(tv.WaitingOn, ""), "upstream of clean") {
		t.Fatalf("clean[1] waiting on %v", tv.WaitingOn)
	}
	crash(e)
	m2 := newManual(t, dir)
	e2, _ := clocked(t, dir, m2, 16)
	defer e2.Close()
	work := m2.next() // interrupted by the crash, run again
	settle(t, e2)
	m2.none()
	m2.finish(work, true)
	if j := m2.next(); j.TaskName != "clean" || j.ParallelIndex != 1 {
		t.Fatalf("after work: %s[%d], want clean[1]", j.TaskName, j.ParallelIndex)
	}
}

// TestRetriedRunWaitsForMaxActiveRuns: a rerun made its run running at
// once, and the gate holds back only pending runs: a retried run ran
// beside the active runs of its workflow past max_active_runs (and a
// queued cron run past overlap: queue). A retried run is pending until
// its first dispatch, as a new one is.
func TestRetriedRunWaitsForMaxActiveRuns(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e, _ := clocked(t, dir, m, 16)
	defer e.Close()
	put(t, e, &workflow.Spec{Name: "one", MaxActiveRuns: 1, Tasks: []*workflow.Task{{Name: "t", Executor: "process", Command: []string{"x"}}}})
	a := trigger(t, e, "one")
	m.finish(m.next(), false)
	waitFor(t, e, "a failed", func() bool { return runStatus(e, a) == "failed" })
	first, _ := e.Run(a)
	b := trigger(t, e, "one")
	jb := m.next()
	if _, err := e.RetryRun(a); err != nil {
		t.Fatal(err)
	}
	settle(t, e)
	m.none()
	if r, _ := e.Run(a); r.Status != "pending" || !strings.Contains(strings.Join(r.Tasks[0].WaitingOn, ""), "max_active_runs 1") {
		t.Fatalf("retried run while %s runs: %s, waiting on %v", b, r.Status, r.Tasks[0].WaitingOn)
	}
	m.finish(jb, true)
	if j := m.next(); j.RunID != a || j.Attempt != 2 {
		t.Fatalf("after %s: %s attempt %d, want the retried run's attempt 2", b, j.RunID, j.Attempt)
	}
	if r, _ := e.Run(a); r.Status != "running" || r.StartedAt == nil || !r.StartedAt.Equal(*first.StartedAt) {
		t.Fatalf("retried run once dispatched: %s, started at %v, want running since %v", r.Status, r.StartedAt, first.StartedAt)
	}
}

// TestRetryRunExpandsAFanOutThatFailedToExpand: the engine records its
// reruns with expand, so that a fan-out whose expansion failed expands
// again once its upstream task ran again. (A run_retried without it is an
// earlier version's, and replays as that version left the node: running,
// with no instance to end it.)
func TestRetryRunExpandsAFanOutThatFailedToExpand(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e, _ := clocked(t, dir, m, 16)
	defer e.Close()
	put(t, e, &workflow.Spec{Name: "w", Tasks: []*workflow.Task{
		{Name: "discover", Executor: "process", Command: []string{"x"}},
		{Name: "each", Executor: "process", Command: []string{"x"}, DependsOn: []string{"discover"}, OnFailure: "run", ParallelFrom: "discover.n"},
	}})
	id := trigger(t, e, "w")
	m.finish(m.next(), false) // each fails to expand: discover has no output
	waitFor(t, e, "failed", func() bool { return runStatus(e, id) == "failed" })
	if _, err := e.RetryRun(id); err != nil {
		t.Fatal(err)
	}
	d := m.next()
	m.mu.Lock()
	report := m.reports[d.TaskID]
	m.mu.Unlock()
	report(executors.Event{Kind: executors.Finished, TaskID: d.TaskID, Attempt: d.Attempt, OK: true, Output: []byte(`{"n": 1}`)})
	if j := m.next(); j.TaskName != "each" || j.ParallelCount != 1 {
		t.Fatalf("after discover ran again: %s of %d, want each's one instance", j.TaskName, j.ParallelCount)
	}
}

// slowStop is manual whose attempts ignore Stop: they end when the test
// finishes them, as an attempt that succeeds before a cancel's stop
// reaches it does.
type slowStop struct{ *manual }

func (s slowStop) Start(job executors.Job, report func(executors.Event)) (executors.Handle, error) {
	if _, err := s.manual.Start(job, report); err != nil {
		return nil, err
	}
	return nopHandle{}, nil
}

// TestRetryOfARunWithNothingToRetryIsRefused: a cancel whose attempts
// all succeeded before they could be stopped ends the run cancelled with
// every task a success. A retry of it reset nothing and left the run
// pending for good, no dispatch ever starting it: it blocked a delete of
// its workflow and, with overlap: skip, every fire of its schedule. The
// retry is refused, as a succeeded run's is.
func TestRetryOfARunWithNothingToRetryIsRefused(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e, _ := clocked(t, dir, slowStop{m}, 16)
	defer e.Close()
	put(t, e, &workflow.Spec{Name: "w", Tasks: []*workflow.Task{{Name: "t", Executor: "process", Command: []string{"x"}}}})
	id := trigger(t, e, "w")
	j := m.next()
	if _, err := e.CancelRun(id); err != nil {
		t.Fatal(err)
	}
	m.finish(j, true)
	waitFor(t, e, "cancelled", func() bool { return runStatus(e, id) == "cancelled" })
	if _, err := e.RetryRun(id); !errors.Is(err, ErrConflict) {
		t.Fatalf("retry of a cancelled run whose every task succeeded: %v, want a conflict", err)
	}
	if got := runStatus(e, id); got != "cancelled" {
		t.Fatalf("after the refused retry: run %s, want cancelled", got)
	}
}

// TestRetryBackoffIsJittered: the engine draws the jitter of a failed
// attempt's backoff from its random source and records it, so the retry
// waits less than the bare backoff (here 10 s × (1 − 0.2 × 0.5)).
func TestRetryBackoffIsJittered(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	clock := &fakeClock{}
	e, err := Open(Config{DataDir: dir, MaxConcurrent: 4, Clock: clock, Logger: quiet,
		Rand: func() float64 { return 0.5 }, Executors: map[string]executors.Executor{"process": m}})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	defer e.Close()
	put(t, e, one("w", func(tk *workflow.Task) {
		tk.Retries = 1
		tk.RetryBackoff = &workflow.Backoff{Initial: 10 * time.Second, Max: time.Minute, Factor: 2}
	}))
	id := trigger(t, e, "w")
	m.finish(m.next(), false)
	waitFor(t, e, "failure recorded", func() bool { return taskView(e, id, "t").Failures == 1 })
	tv := taskView(e, id, "t")
	if tv.NotBefore == nil {
		t.Fatalf("no not_before after a failure: %+v", tv)
	}
	if got, want := tv.NotBefore.Sub(clock.Now()), 9*time.Second; got != want {
		t.Fatalf("retry waits %v, want %v (10s less 10%% jitter)", got, want)
	}
}

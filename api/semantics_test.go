package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/executors"
)

// These tests drive the task semantics through the HTTP API with real
// processes, as a user would.

func (f *fixture) put(yaml string) {
	f.t.Helper()
	if code, body := f.do("POST", "/workflows", yaml); code != 201 && code != 200 {
		f.t.Fatalf("put workflow: %d %s", code, body)
	}
}

func (f *fixture) trigger(name string) string {
	f.t.Helper()
	return f.triggerWith(name, "")
}

// triggerWith triggers workflow name with a request body (params, ...)
// and returns the run's id.
func (f *fixture) triggerWith(name, request string) string {
	f.t.Helper()
	code, body := f.do("POST", "/workflows/"+name+"/runs", request)
	if code != 201 {
		f.t.Fatalf("trigger %s: %d %s", name, code, body)
	}
	var r struct{ ID string }
	json.Unmarshal([]byte(body), &r)
	return r.ID
}

func (f *fixture) tasks(id string) map[string]engine.TaskView {
	_, body := f.do("GET", "/runs/"+id+"/tasks", "")
	var list []engine.TaskView
	json.Unmarshal([]byte(body), &list)
	out := map[string]engine.TaskView{}
	for _, t := range list {
		out[t.Name] = t
	}
	return out
}

// waitTask waits, on commits, until cond holds for the run's tasks.
func (f *fixture) waitTasks(id, what string, cond func(map[string]engine.TaskView) bool) map[string]engine.TaskView {
	f.t.Helper()
	guard := time.After(20 * time.Second)
	for {
		ch := f.eng.Changed()
		if ts := f.tasks(id); cond(ts) {
			return ts
		}
		select {
		case <-ch:
		case <-guard:
			f.t.Fatalf("timed out waiting for %s: %+v", what, f.tasks(id))
		}
	}
}

func processGone(pid int) bool { return syscall.Kill(pid, 0) != nil }

func TestRetriesThroughAPI(t *testing.T) {
	f := newFixture(t)
	f.put(`name: flaky
tasks:
  t:
    command: '[ "$ORKWAL_ATTEMPT" -ge 3 ] || exit 1; echo "attempt $ORK_ATTEMPT"'
    retries: 3
    retry_backoff: {initial: 20ms, max: 20ms}
`)
	id := f.trigger("flaky")
	run := f.waitRun(id)
	tv := run.Tasks[0]
	if run.Status != "success" || tv.Attempt != 3 || tv.Failures != 2 || tv.Retries != 3 {
		t.Fatalf("run %s, task %+v", run.Status, tv)
	}
	if _, body := f.do("GET", "/runs/"+id+"/tasks/t/logs?attempt=3", ""); body != "attempt 3\n" {
		t.Fatalf("log of attempt 3: %q", body)
	}
}

func TestTimeoutThroughAPI(t *testing.T) {
	f := newFixture(t)
	f.put("name: slow\ntasks:\n  t: {command: exec sleep 30, timeout: 300ms}\n")
	id := f.trigger("slow")
	ts := f.waitTasks(id, "running", func(ts map[string]engine.TaskView) bool { return ts["t"].PID > 0 })
	pid := ts["t"].PID
	run := f.waitRun(id)
	if run.Status != "failed" || run.Tasks[0].Error != "timeout after 300ms" {
		t.Fatalf("run %s: %q", run.Status, run.Tasks[0].Error)
	}
	if !processGone(pid) {
		t.Fatalf("process %d survived its timeout", pid)
	}
}

func TestCancelThroughAPI(t *testing.T) {
	f := newFixture(t)
	f.put("name: long\ntasks:\n  a: {command: exec sleep 30}\n  b: {command: 'true', depends_on: [a]}\n")
	id := f.trigger("long")
	ts := f.waitTasks(id, "a running", func(ts map[string]engine.TaskView) bool { return ts["a"].PID > 0 })
	pid := ts["a"].PID
	if code, body := f.do("POST", "/runs/"+id+"/cancel", ""); code != 200 {
		t.Fatalf("cancel: %d %s", code, body)
	}
	run := f.waitStatus(id, "cancelled")
	if run.Tasks[0].Status != "cancelled" || run.Tasks[1].Status != "cancelled" {
		t.Fatalf("tasks after cancel: %+v", run.Tasks)
	}
	if !processGone(pid) {
		t.Fatalf("process %d survived the cancel", pid)
	}
	if code, _ := f.do("POST", "/runs/"+id+"/cancel", ""); code != 200 {
		t.Fatalf("second cancel: %d, want 200 (idempotent)", code)
	}
	f.put("name: quick\ntasks:\n  a: {command: 'true'}\n")
	done := f.trigger("quick")
	f.waitRun(done)
	if code, body := f.do("POST", "/runs/"+done+"/cancel", ""); code != 409 || !strings.Contains(body, "already ended success") {
		t.Fatalf("cancel of a finished run: %d %s", code, body)
	}
}

// waitStatus waits for a run to reach a given status.
func (f *fixture) waitStatus(id, status string) engine.RunView {
	f.t.Helper()
	guard := time.After(20 * time.Second)
	for {
		ch := f.eng.Changed()
		if r, err := f.eng.Run(id); err == nil && r.Status == status {
			return r
		}
		select {
		case <-ch:
		case <-guard:
			r, _ := f.eng.Run(id)
			f.t.Fatalf("run %s is %s, want %s", id, r.Status, status)
		}
	}
}

func TestRerunThroughAPI(t *testing.T) {
	f := newFixture(t)
	marker := filepath.Join(t.TempDir(), "fixed")
	f.put(`name: fixme
tasks:
  first: {command: 'echo "{\"v\": 7}" > "$ORKWAL_OUTPUT"'}
  second:
    depends_on: [first]
    command: 'test -f ` + marker + `'
`)
	id := f.trigger("fixme")
	if run := f.waitRun(id); run.Status != "failed" {
		t.Fatalf("first run %s", run.Status)
	}
	os.WriteFile(marker, nil, 0o644)
	code, body := f.do("POST", "/runs/"+id+"/retry", "")
	if code != 200 {
		t.Fatalf("retry: %d %s", code, body)
	}
	if code, _ := f.do("POST", "/runs/"+id+"/retry", ""); code != 409 {
		t.Fatalf("retry while active: %d, want 409", code)
	}
	run := f.waitRun(id)
	if run.Status != "success" || run.Tasks[0].Attempt != 1 || run.Tasks[1].Attempt != 2 || string(run.Tasks[0].Output) != `{"v": 7}` {
		t.Fatalf("after retry: %s %+v", run.Status, run.Tasks)
	}
}

func TestOutputsAndFanOutThroughAPI(t *testing.T) {
	f := newFixture(t)
	f.put(`name: fan
tasks:
  discover:
    command: 'echo "{\"files\": [\"a\", \"b\", \"c\"], \"n\": 2}" > "$ORKWAL_OUTPUT"'
  each:
    depends_on: [discover]
    foreach: discover.files
    concurrency: 2
    command: 'echo "{\"i\": $ORKWAL_PARALLEL_INDEX, \"of\": $ORKWAL_PARALLEL_COUNT}" > "$ORKWAL_OUTPUT"'
  count:
    depends_on: [discover]
    parallel: discover.n
    command: 'true'
  join:
    depends_on: [each, count, discover]
    inputs:
      all: {ref: tasks.each.output}
      n: {ref: tasks.discover.output.n}
    command: 'cat "$ORKWAL_INPUT"'
`)
	id := f.trigger("fan")
	run := f.waitRun(id)
	if run.Status != "success" {
		t.Fatalf("run %s: %+v", run.Status, run.Tasks)
	}
	ts := f.tasks(id)
	if ts["each"].Instances != 3 || ts["count"].Instances != 2 || string(ts["each[1]"].Item) != `"b"` {
		t.Fatalf("fan-out: each %+v count %+v each[1] %+v", ts["each"], ts["count"], ts["each[1]"])
	}
	_, log := f.do("GET", "/runs/"+id+"/tasks/join/logs", "")
	// Compared as JSON: the engine passes outputs through as the tasks
	// wrote them (spacing included).
	var input struct{ Inputs json.RawMessage }
	var got, want any
	json.Unmarshal([]byte(log), &input)
	json.Unmarshal(input.Inputs, &got)
	json.Unmarshal([]byte(`{"all":[{"i":0,"of":3},{"i":1,"of":3},{"i":2,"of":3}],"n":2}`), &want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("join's input:\n%s\nwant inputs %v", log, want)
	}
	if _, log := f.do("GET", "/runs/"+id+"/tasks/each[2]/logs", ""); log != "" {
		t.Fatalf("instance log: %q", log)
	}

	f.put("name: big\ntasks:\n  t: {command: 'head -c 1100000 /dev/zero | tr \"\\\\0\" 1 > \"$ORKWAL_OUTPUT\"'}\n")
	if run := f.waitRun(f.trigger("big")); run.Status != "failed" || !strings.Contains(run.Tasks[0].Error, "output larger than") {
		t.Fatalf("output over the cap: %s %q", run.Status, run.Tasks[0].Error)
	}
}

func TestCleanupAndWaitingCausesThroughAPI(t *testing.T) {
	f := newFixture(t)
	f.put(`name: deploy
params: {db: main}
tasks:
  migrate: {command: exec sleep 30, mutex: "db-{{params.db}}"}
  after: {command: 'true', depends_on: [migrate]}
  cleanup: {command: 'true', depends_on: [migrate], on_failure: run}
`)
	first := f.trigger("deploy")
	f.waitTasks(first, "migrate running", func(ts map[string]engine.TaskView) bool { return ts["migrate"].PID > 0 })
	second := f.trigger("deploy")
	ts := f.tasks(second)
	if w := strings.Join(ts["migrate"].WaitingOn, ";"); !strings.Contains(w, `mutex "db-main" held by `+first) {
		t.Fatalf("second migrate waiting on %q", w)
	}
	if w := strings.Join(ts["after"].WaitingOn, ";"); w != "upstream migrate" {
		t.Fatalf("after waiting on %q", w)
	}
	f.do("POST", "/runs/"+first+"/cancel", "")
	f.waitStatus(first, "cancelled")
	f.do("POST", "/runs/"+second+"/cancel", "")
	f.waitStatus(second, "cancelled")

	f.put("name: broken\ntasks:\n  work: {command: exit 1}\n  after: {command: 'true', depends_on: [work]}\n  cleanup: {command: 'true', depends_on: [work], on_failure: run}\n")
	run := f.waitRun(f.trigger("broken"))
	got := map[string]string{}
	for _, tv := range run.Tasks {
		got[tv.Name] = tv.Status
	}
	if run.Status != "failed" || got["after"] != "skipped" || got["cleanup"] != "success" {
		t.Fatalf("run %s tasks %v", run.Status, got)
	}
}

func TestOnInterruptFailThroughAPI(t *testing.T) {
	dir := t.TempDir()
	open := func() *fixture {
		eng, err := engine.Open(engine.Config{DataDir: dir, Logger: quiet, KillGrace: time.Second,
			Executors: map[string]executors.Executor{"process": executors.NewProcess(executors.ProcessConfig{})}})
		if err != nil {
			t.Fatal(err)
		}
		eng.Start()
		srv := newServer(eng)
		return &fixture{t: t, dir: dir, eng: eng, srv: srv}
	}
	f := open()
	f.put("name: once\ntasks:\n  charge: {command: exec sleep 30, on_interrupt: fail}\n")
	id := f.trigger("once")
	f.waitTasks(id, "running", func(ts map[string]engine.TaskView) bool { return ts["charge"].PID > 0 })
	f.srv.Close()
	f.eng.Close() // interrupts the attempt
	f = open()
	defer func() { f.srv.Close(); f.eng.Close() }()
	run, _ := f.eng.Run(id)
	if run.Status != "failed" || !strings.Contains(run.Tasks[0].Error, "on_interrupt is fail") || run.Tasks[0].Attempt != 1 {
		t.Fatalf("after the interruption: %s %+v", run.Status, run.Tasks[0])
	}
}

func TestSchedulePauseResumeThroughAPI(t *testing.T) {
	f := newFixture(t)
	f.put("name: nightly\nschedule: \"0 3 * * *\"\ntasks:\n  t: {command: 'true'}\n")
	f.put("name: plain\ntasks:\n  t: {command: 'true'}\n")
	code, body := f.do("POST", "/workflows/nightly/schedule/pause", "")
	var w engine.WorkflowView
	json.Unmarshal([]byte(body), &w)
	if code != 200 || w.Schedule == nil || !w.Schedule.Paused || w.Schedule.NextFire != nil {
		t.Fatalf("pause: %d %s", code, body)
	}
	if code, _ := f.do("POST", "/workflows/nightly/schedule/pause", ""); code != 200 {
		t.Fatalf("second pause: %d, want 200 (idempotent)", code)
	}
	code, body = f.do("POST", "/workflows/nightly/schedule/resume", "")
	json.Unmarshal([]byte(body), &w)
	if code != 200 || w.Schedule.Paused || w.Schedule.NextFire == nil || w.Schedule.Cron != "0 3 * * *" {
		t.Fatalf("resume: %d %s", code, body)
	}
	if code, body := f.do("POST", "/workflows/plain/schedule/pause", ""); code != 409 || !strings.Contains(body, "has no schedule") {
		t.Fatalf("pause without a schedule: %d %s", code, body)
	}
	if code, _ := f.do("POST", "/workflows/nope/schedule/resume", ""); code != 404 {
		t.Fatalf("unknown workflow: %d", code)
	}
}

// TestEnvPlaceholdersAreFilled: a task's env values get the run's params
// and the task's inputs at dispatch ({{params.NAME}}, {{inputs.NAME}}; a
// JSON string input gives its text, any other value its JSON).
func TestEnvPlaceholdersAreFilled(t *testing.T) {
	f := newFixture(t)
	f.put(`name: greet
params: {who: nobody}
tasks:
  up: {command: 'echo "{\"name\": \"ann\", \"n\": 3}" > "$ORKWAL_OUTPUT"'}
  say:
    depends_on: [up]
    inputs:
      name: {ref: tasks.up.output.name}
      n: {ref: tasks.up.output.n}
    env: {GREETING: 'hi {{params.who}}, {{ inputs.name }} x{{inputs.n}}'}
    command: 'printf "%s" "$GREETING"'
`)
	id := f.triggerWith("greet", `{"params": {"who": "bob"}}`)
	if run := f.waitRun(id); run.Status != "success" {
		t.Fatalf("run %s", run.Status)
	}
	if _, log := f.do("GET", "/runs/"+id+"/tasks/say/logs", ""); log != "hi bob, ann x3" {
		t.Fatalf("the task saw GREETING=%q, want %q", log, "hi bob, ann x3")
	}
}

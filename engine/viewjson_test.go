package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors"
)

// TestAppendRunIsMarshal: AppendRun and AppendTasks write the bytes
// json.Marshal writes for Run's view and its tasks, on a run with a
// fan-out, a foreach over an output with HTML characters and U+2028 in
// it, inputs, a failed task with its attempts and an error, and params.
func TestAppendRunIsMarshal(t *testing.T) {
	e, err := Open(Config{DataDir: t.TempDir(), Logger: quiet,
		Executors: map[string]executors.Executor{"process": executors.NewProcess(executors.ProcessConfig{}), "noop": executors.Noop{}}})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	defer e.Close()
	spec, err := CheckWorkflow("", []byte(`name: views
params: {p: "<x> & y"}
tasks:
  out: {command: "printf '%s' '{\"items\":[\"a<b\",2],\"s\":\"\\u2028 é\"}' > $ORKWAL_OUTPUT"}
  each: {command: "true", foreach: out.items, depends_on: [out]}
  fan: {command: "true", parallel: 3}
  bad: {command: "echo 'x & y' >&2; exit 3", retries: 1}
  use: {command: "true", depends_on: [out], inputs: {v: {ref: tasks.out.output.s}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.PutWorkflow(spec, ""); err != nil {
		t.Fatal(err)
	}
	id, err := e.Trigger("views", map[string]string{"p": "<x> & y\u2029"}, "api")
	if err != nil {
		t.Fatal(err)
	}
	// Mid-run (pending tasks say what they wait on) and at the end.
	compareRunJSON(t, e, id)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := e.WaitRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != "failed" || len(run.Tasks) != 10 {
		t.Fatalf("run %s with %d tasks, want failed with 10", run.Status, len(run.Tasks))
	}
	compareRunJSON(t, e, id)
}

func compareRunJSON(t *testing.T, e *Engine, id string) {
	t.Helper()
	// The clock moves between two reads: the same instant for both.
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.state.Runs[id]
	want, err := json.Marshal(e.viewRun(r, true))
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.appendRunLocked(nil, r, false)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendRun:\n%s\njson.Marshal:\n%s", got, want)
	}
	// Summarised: the workflow's tasks alone, a fan-out without its output.
	sum := e.viewRun(r, true)
	sum.Tasks = sum.Tasks[:len(r.Spec.Tasks)]
	for i := range sum.Tasks {
		if sum.Tasks[i].InstanceCounts != nil || r.Tasks[i].Expanded {
			sum.Tasks[i].Output = nil
		}
	}
	wantSum, _ := json.Marshal(sum)
	if gotSum, err := e.appendRunLocked(nil, r, true); err != nil || !bytes.Equal(gotSum, wantSum) {
		t.Fatalf("AppendRunSummary: %v\n%s\njson.Marshal:\n%s", err, gotSum, wantSum)
	}
	wantTasks, _ := json.Marshal(e.viewRun(r, true).Tasks)
	gotTasks, err := e.appendTasks(nil, r, r.Tasks, false)
	if err != nil || !bytes.Equal(gotTasks, wantTasks) {
		t.Fatalf("AppendTasks: %v\n%s\njson.Marshal:\n%s", err, gotTasks, wantTasks)
	}
}

// TestReadyTaskSaysSo: a pending task that nothing holds says so in a
// typed field (TaskView.Ready, "ready": true), which the power-loss
// harness reads rather than waiting_on's words; one that waits for its
// upstream does not, nor one dispatched. Here a is ready after a crash
// (its attempt was interrupted) in an engine not started yet.
func TestReadyTaskSaysSo(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e := openEngine(t, dir, m, 4)
	put(t, e, diamond("process"))
	id := trigger(t, e, "diamond")
	m.next()
	crash(e)

	m = newManual(t, dir)
	e = openStopped(t, dir, m, 4)
	a, b := taskView(e, id, "a"), taskView(e, id, "b")
	if a.Status != "pending" || !a.Ready || len(a.WaitingOn) != 1 || a.WaitingOn[0] != waitingReady {
		t.Fatalf("a is %s %q (ready %v): want pending, ready", a.Status, a.WaitingOn, a.Ready)
	}
	if b.Ready {
		t.Fatalf("b, waiting on %q, says it is ready", b.WaitingOn)
	}
	compareRunJSON(t, e, id) // a's "ready": true, as json.Marshal writes it
	e.Start()
	defer e.Close()
	m.next()
	settle(t, e)
	if a := taskView(e, id, "a"); a.Status != "running" && a.Status != "dispatched" || a.Ready {
		t.Fatalf("a once started is %s (ready %v): want dispatched or running, not ready", a.Status, a.Ready)
	}
}

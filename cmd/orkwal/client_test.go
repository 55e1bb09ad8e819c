package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orkwal/orkwal/api"
	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/executors"
)

const cliEtlYAML = `name: etl
params:
  date: "2024-01-01"
tasks:
  extract:
    executor: noop
  load:
    executor: noop
    depends_on: extract
`

const cliFailingYAML = `name: broken
tasks:
  extract:
    command: "false"
  load:
    executor: noop
    depends_on: extract
`

// failingExec is an Executor whose every job fails with exit status 1.
type failingExec struct{}

type failedHandle struct{}

func (failedHandle) Stop(time.Duration, string) {}

func (failingExec) Start(job executors.Job, report func(executors.Event)) (executors.Handle, error) {
	now := time.Now()
	report(executors.Event{Kind: executors.Started, TaskID: job.TaskID, Attempt: job.Attempt, At: now})
	report(executors.Event{Kind: executors.Finished, TaskID: job.TaskID, Attempt: job.Attempt, At: now,
		ExitCode: 1, Err: "exit status 1"})
	return failedHandle{}, nil
}

// cliDaemon runs the real API over an engine with in-process executors and
// returns its URL.
func cliDaemon(t *testing.T, process executors.Executor, opts ...api.Option) string {
	t.Helper()
	_, url := cliDaemonServer(t, process, opts...)
	return url
}

// cliDaemonServer is cliDaemon, returning the API server too.
func cliDaemonServer(t *testing.T, process executors.Executor, opts ...api.Option) (*api.Server, string) {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	eng, err := engine.Open(engine.Config{DataDir: t.TempDir(), Logger: logger,
		Executors: map[string]executors.Executor{"process": process, "noop": executors.Noop{}}})
	if err != nil {
		t.Fatalf("engine.Open: %v", err)
	}
	eng.Start()
	a := api.New(eng, logger, opts...)
	srv := httptest.NewServer(a)
	t.Cleanup(func() {
		a.StopStreams()
		srv.Close()
		if err := eng.Close(); err != nil {
			t.Errorf("engine.Close: %v", err)
		}
	})
	return a, srv.URL
}

// runCLI runs the orkwal command line and returns its output and the exit
// code main would use.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &errOut
	err := app.Run(append([]string{"orkwal"}, args...))
	if err != nil {
		errOut.WriteString("orkwal: " + err.Error() + "\n")
		code = exitFailure
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
	}
	return out.String(), errOut.String(), code
}

// mustCLI runs the CLI and fails the test unless it exits with want.
func mustCLI(t *testing.T, want int, args ...string) (stdout, stderr string) {
	t.Helper()
	stdout, stderr, code := runCLI(t, args...)
	if code != want {
		t.Fatalf("orkwal %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s",
			strings.Join(args, " "), code, want, stdout, stderr)
	}
	return stdout, stderr
}

func cliWriteFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// cliApplied starts a daemon with the noop workflow etl recorded.
func cliApplied(t *testing.T) string {
	t.Helper()
	url := cliDaemon(t, executors.Noop{})
	mustCLI(t, exitOK, "apply", "--addr", url, cliWriteFile(t, "etl.yaml", cliEtlYAML))
	return url
}

// cliTriggered starts a run of etl, waits for it and returns its id.
func cliTriggered(t *testing.T, url string) string {
	t.Helper()
	out, _ := mustCLI(t, exitOK, "trigger", "--addr", url, "--wait", "etl")
	return strings.SplitN(out, "\n", 2)[0]
}

func TestValidate(t *testing.T) {
	good := cliWriteFile(t, "etl.yaml", cliEtlYAML)
	out, _ := mustCLI(t, exitOK, "validate", good)
	if want := good + ": ok (2 tasks: extract, load)"; !strings.Contains(out, want) {
		t.Errorf("stdout %q, want %q", out, want)
	}
	bad := cliWriteFile(t, "bad.yaml", strings.Replace(cliEtlYAML, "depends_on: extract", "depends_on: extrct", 1))
	out, errOut := mustCLI(t, exitFailure, "validate", good, bad)
	if !strings.Contains(out, good+": ok") {
		t.Errorf("stdout %q lacks the valid file", out)
	}
	for _, want := range []string{bad, "tasks.load.depends_on", "extrct"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q lacks %q", errOut, want)
		}
	}
	mustCLI(t, exitUsage, "validate")
}

func TestApply(t *testing.T) {
	url := cliDaemon(t, executors.Noop{})
	file := cliWriteFile(t, "etl.yaml", cliEtlYAML)
	out, _ := mustCLI(t, exitOK, "apply", "--addr", url, file)
	if want := "workflow etl: version 1 recorded\n"; out != want {
		t.Errorf("first apply: %q, want %q", out, want)
	}
	out, _ = mustCLI(t, exitOK, "apply", file, "--addr", url)
	if want := "workflow etl: unchanged (version 1)\n"; out != want {
		t.Errorf("second apply: %q, want %q", out, want)
	}
	bad := cliWriteFile(t, "bad.yaml", "name: etl\n")
	_, errOut := mustCLI(t, exitFailure, "apply", "--addr", url, bad)
	if !strings.Contains(errOut, bad+": tasks: required") {
		t.Errorf("stderr %q does not name the file and key", errOut)
	}
	out, _ = mustCLI(t, exitOK, "workflows", "--addr", url)
	if !strings.Contains(out, "etl   1") {
		t.Errorf("invalid apply changed the workflow:\n%s", out)
	}
}

// TestApplyResolvesPathsAgainstTheFile: a workflow recorded with apply
// resolves its relative paths against the file's folder, as --workflows does:
// the task runs in the workdir next to the file, not the daemon's.
func TestApplyResolvesPathsAgainstTheFile(t *testing.T) {
	url := cliDaemon(t, executors.NewProcess(executors.ProcessConfig{}))
	file := cliWriteFile(t, "rel.yaml", "name: rel\ntasks:\n  t:\n    command: [cat, marker]\n    workdir: sub\n")
	sub := filepath.Join(filepath.Dir(file), "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "marker"), []byte("here\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, exitOK, "apply", "--addr", url, file)
	out, _ := mustCLI(t, exitOK, "trigger", "--addr", url, "--wait", "-o", "json", "rel")
	var run engine.RunView
	if err := json.Unmarshal([]byte(out), &run); err != nil || run.Status != "success" {
		t.Fatalf("run: %v, status %q\n%s", err, run.Status, out)
	}
	logs, _ := mustCLI(t, exitOK, "logs", "--addr", url, run.ID, "t")
	if !strings.Contains(logs, "here") {
		t.Errorf("the task did not run in %s: log %q", sub, logs)
	}
}

func TestTrigger(t *testing.T) {
	url := cliApplied(t)
	out, _ := mustCLI(t, exitOK, "trigger", "--addr", url, "-p", "date=2024-05-05", "etl")
	id := strings.TrimSpace(out)
	if len(id) != 36 || strings.Count(out, "\n") != 1 {
		t.Fatalf("stdout %q: want the run id on its own line", out)
	}
	out, _ = mustCLI(t, exitOK, "show", "--addr", url, "-o", "json", id)
	var run engine.RunView
	if err := json.Unmarshal([]byte(out), &run); err != nil {
		t.Fatalf("show -o json: %v\n%s", err, out)
	}
	if run.Trigger != "cli" || run.Params["date"] != "2024-05-05" {
		t.Errorf("run trigger %q params %v, want cli and date=2024-05-05", run.Trigger, run.Params)
	}
}

func TestTriggerWait(t *testing.T) {
	url := cliApplied(t)
	// Flags after the name work too.
	out, _ := mustCLI(t, exitOK, "trigger", "etl", "--addr", url, "-p", "date=x", "--wait")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	id := lines[0]
	if last := lines[len(lines)-1]; last != "run "+id+" success" {
		t.Errorf("last line %q, want %q", last, "run "+id+" success")
	}
	if !strings.Contains(out, " extract success\n") || !strings.Contains(out, " load success\n") {
		t.Errorf("no progress line per task:\n%s", out)
	}
	out, _ = mustCLI(t, exitOK, "trigger", "--addr", url, "--wait", "-o", "json", "etl")
	var run engine.RunView
	if err := json.Unmarshal([]byte(out), &run); err != nil || run.Status != "success" || len(run.Tasks) != 2 {
		t.Errorf("--wait -o json: %v, status %q, %d tasks\n%s", err, run.Status, len(run.Tasks), out)
	}
}

func TestTriggerWaitFailed(t *testing.T) {
	url := cliDaemon(t, failingExec{})
	mustCLI(t, exitOK, "apply", "--addr", url, cliWriteFile(t, "broken.yaml", cliFailingYAML))
	out, errOut := mustCLI(t, exitFailure, "trigger", "--addr", url, "--wait", "broken")
	id := strings.SplitN(out, "\n", 2)[0]
	for _, want := range []string{"extract failed: exit status 1", "load skipped", "run " + id + " failed",
		"  extract (attempt 1): exit status 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "run "+id+" failed") {
		t.Errorf("stderr %q", errOut)
	}
	out, _ = mustCLI(t, exitOK, "show", "--addr", url, id)
	if !strings.Contains(out, "exit status 1") || !strings.Contains(out, "status:   failed") {
		t.Errorf("show of the failed run:\n%s", out)
	}
}

func TestTriggerErrors(t *testing.T) {
	url := cliApplied(t)
	_, errOut := mustCLI(t, exitNotFound, "trigger", "--addr", url, "nope")
	if !strings.Contains(errOut, `workflow "nope"`) {
		t.Errorf("stderr %q", errOut)
	}
	mustCLI(t, exitUsage, "trigger", "--addr", url, "-p", "date", "etl")
	mustCLI(t, exitUsage, "trigger", "--addr", url, "etl", "-p", "date")
	mustCLI(t, exitUsage, "trigger", "--addr", url)
	mustCLI(t, exitUsage, "trigger", "--addr", url, "etl", "extra")
	mustCLI(t, exitUsage, "trigger", "--addr", url, "-o", "yaml", "etl")
	mustCLI(t, exitUsage, "runs", "--addr", url, "-o", "yaml")
	mustCLI(t, exitUsage, "trigger", "--addr", url, "etl", "--bogus")
	_, errOut = mustCLI(t, exitFailure, "trigger", "--addr", url, "-p", "nope=1", "etl")
	if !strings.Contains(errOut, "unknown nope") {
		t.Errorf("stderr %q lacks the API's message", errOut)
	}
	mustCLI(t, exitFailure, "show", "--addr", url, "not-a-uuid")
	mustCLI(t, exitNotFound, "show", "--addr", url, "01a20516-6e9c-7568-816c-fb1da4ecc48a")
}

func TestRuns(t *testing.T) {
	url := cliApplied(t)
	id := cliTriggered(t, url)
	out, _ := mustCLI(t, exitOK, "runs", "--addr", url)
	if !strings.HasPrefix(out, "ID ") || !strings.Contains(out, id) || !strings.Contains(out, "success") {
		t.Errorf("runs table:\n%s", out)
	}
	out, _ = mustCLI(t, exitOK, "runs", "--addr", url, "--workflow", "etl", "--limit", "5", "-o", "json")
	var runs []engine.RunView
	if err := json.Unmarshal([]byte(out), &runs); err != nil {
		t.Fatalf("runs -o json: %v\n%s", err, out)
	}
	if len(runs) != 1 || runs[0].ID != id {
		t.Errorf("runs -o json: %+v, want the one run %s", runs, id)
	}
	out, _ = mustCLI(t, exitOK, "runs", "--addr", url, "--workflow", "other")
	if strings.Contains(out, id) {
		t.Errorf("--workflow other lists %s", id)
	}
	mustCLI(t, exitUsage, "runs", "--addr", url, "--limit", "-1")
}

func TestShow(t *testing.T) {
	url := cliApplied(t)
	id := cliTriggered(t, url)
	out, _ := mustCLI(t, exitOK, "show", id, "--addr", url)
	for _, want := range []string{id, "etl@1", "status:   success", "trigger:  cli", `date="2024-01-01"`,
		"NAME", "DEPENDS ON", "DURATION", "extract", "load     success  1/1"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
}

func TestLogs(t *testing.T) {
	url := cliApplied(t)
	id := cliTriggered(t, url)
	out, _ := mustCLI(t, exitOK, "logs", "--addr", url, id, "extract")
	if out != "" {
		t.Errorf("logs of a noop task: %q", out)
	}
	mustCLI(t, exitOK, "logs", "--addr", url, "--attempt", "1", id, "extract")
	mustCLI(t, exitNotFound, "logs", "--addr", url, id, "extract", "--attempt", "2")
	mustCLI(t, exitNotFound, "logs", "--addr", url, id, "nope")
	mustCLI(t, exitUsage, "logs", "--addr", url, id)
}

func TestWorkflows(t *testing.T) {
	url := cliApplied(t)
	out, _ := mustCLI(t, exitOK, "workflows", "--addr", url)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME") || !strings.HasPrefix(lines[1], "etl   1        2  ") {
		t.Errorf("workflows table:\n%s", out)
	}
	out, _ = mustCLI(t, exitOK, "workflows", "--addr", url, "-o", "json")
	var wfs []engine.WorkflowView
	if err := json.Unmarshal([]byte(out), &wfs); err != nil || len(wfs) != 1 || wfs[0].Name != "etl" {
		t.Errorf("workflows -o json: %v %+v", err, wfs)
	}
}

func TestUnreachable(t *testing.T) {
	_, errOut := mustCLI(t, exitServer, "runs", "--addr", "127.0.0.1:1")
	for _, want := range []string{"cannot reach orkwal at 127.0.0.1:1", `(is "orkwal run" running?)`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q lacks %q", errOut, want)
		}
	}
	t.Setenv("ORKWAL_ADDR", "127.0.0.1:1")
	mustCLI(t, exitServer, "workflows")
	mustCLI(t, exitUsage, "workflows", "--addr", "ftp://x")
}

func TestServerError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error": "write-ahead log failed"}`)
	}))
	defer srv.Close()
	_, errOut := mustCLI(t, exitServer, "workflows", "--addr", srv.URL)
	if !strings.Contains(errOut, "503") || !strings.Contains(errOut, "write-ahead log failed") {
		t.Errorf("stderr %q", errOut)
	}
}

func TestCancelAndRetry(t *testing.T) {
	url := cliDaemon(t, executors.NewProcess(executors.ProcessConfig{KillGrace: time.Second}))
	marker := filepath.Join(t.TempDir(), "ok")
	mustCLI(t, exitOK, "apply", "--addr", url, cliWriteFile(t, "w.yaml", `name: w
tasks:
  gate: {command: 'test -f `+marker+`'}
  slow: {command: exec sleep 30, depends_on: [gate]}
`))
	out, _ := mustCLI(t, exitFailure, "trigger", "--addr", url, "--wait", "w")
	id := strings.SplitN(out, "\n", 2)[0]
	if _, errOut := mustCLI(t, exitFailure, "cancel", "--addr", url, id); !strings.Contains(errOut, "already ended failed") {
		t.Fatalf("cancel of a failed run: %s", errOut)
	}
	os.WriteFile(marker, nil, 0o644)
	out, _ = mustCLI(t, exitOK, "retry", "--addr", url, id)
	if !strings.Contains(out, "run "+id+": running") {
		t.Fatalf("retry: %q", out)
	}
	out, _ = mustCLI(t, exitOK, "cancel", "--addr", url, id)
	if !strings.Contains(out, "run "+id+": ") {
		t.Fatalf("cancel: %q", out)
	}
	out, _ = mustCLI(t, exitOK, "show", "--addr", url, id)
	if !strings.Contains(out, "(cancelling)") && !strings.Contains(out, "status:   cancelled") {
		t.Fatalf("show after cancel:\n%s", out)
	}
}

func TestSchedulePauseResume(t *testing.T) {
	url := cliDaemon(t, executors.Noop{})
	mustCLI(t, exitOK, "apply", "--addr", url, cliWriteFile(t, "n.yaml", "name: nightly\nschedule: \"0 3 * * *\"\ntasks:\n  t: {executor: noop}\n"))
	out, _ := mustCLI(t, exitOK, "workflows", "--addr", url)
	if !strings.Contains(out, "0 3 * * *") || !strings.Contains(out, "NEXT FIRE") {
		t.Fatalf("workflows:\n%s", out)
	}
	if out, _ = mustCLI(t, exitOK, "schedule", "pause", "--addr", url, "nightly"); !strings.Contains(out, "paused") {
		t.Fatalf("pause: %q", out)
	}
	if out, _ = mustCLI(t, exitOK, "workflows", "--addr", url); !strings.Contains(out, "paused") {
		t.Fatalf("workflows after pause:\n%s", out)
	}
	if out, _ = mustCLI(t, exitOK, "schedule", "resume", "--addr", url, "nightly"); !strings.Contains(out, "running, next fire") {
		t.Fatalf("resume: %q", out)
	}
	mustCLI(t, exitNotFound, "schedule", "pause", "--addr", url, "nope")
}

// TestCancelledRunIsFinal: a cancelled run showed "cancelled
// (cancelling)" in show forever, and cancel_requested stayed true in the
// API. Once the run has ended, its status is all there is.
func TestCancelledRunIsFinal(t *testing.T) {
	url := cliDaemon(t, executors.Noop{})
	mustCLI(t, exitOK, "apply", "--addr", url, cliWriteFile(t, "w.yaml", "name: w\ntasks:\n  later: {executor: noop, delay: 1h}\n"))
	out, _ := mustCLI(t, exitOK, "trigger", "--addr", url, "w")
	id := strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
	mustCLI(t, exitOK, "cancel", "--addr", url, id)
	resp, err := http.Get(url + "/runs/" + id + "?wait=30s")
	if err != nil {
		t.Fatal(err)
	}
	var run engine.RunView
	json.NewDecoder(resp.Body).Decode(&run)
	resp.Body.Close()
	if run.Status != "cancelled" || run.CancelRequested {
		t.Fatalf("ended run: status %q, cancel_requested %v; want cancelled, false", run.Status, run.CancelRequested)
	}
	out, _ = mustCLI(t, exitOK, "show", "--addr", url, id)
	if strings.Contains(out, "cancelling") || !strings.Contains(out, "cancelled") {
		t.Fatalf("show of a cancelled run:\n%s", out)
	}
}

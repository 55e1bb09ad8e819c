package api

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/wal"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type fixture struct {
	t     *testing.T
	dir   string
	eng   *engine.Engine
	srv   *httptest.Server
	api   *Server
	token string // sent by do when set
}

func newFixture(t *testing.T, opts ...Option) *fixture {
	return newFixtureConfig(t, engine.Config{}, opts...)
}

// newFixtureConfig is newFixture with some of the engine's settings.
func newFixtureConfig(t *testing.T, cfg engine.Config, opts ...Option) *fixture {
	dir := t.TempDir()
	cfg.DataDir, cfg.Logger, cfg.KillGrace = dir, quiet, time.Second
	cfg.Executors = map[string]executors.Executor{"process": executors.NewProcess(executors.ProcessConfig{}), "noop": executors.Noop{},
		"http": executors.NewHTTP(executors.HTTPConfig{})}
	eng, err := engine.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	eng.Start()
	a := New(eng, quiet, opts...)
	srv := httptest.NewServer(a)
	t.Cleanup(func() { a.StopStreams(); srv.Close(); eng.Close() })
	return &fixture{t: t, dir: dir, eng: eng, srv: srv, api: a}
}

func newServer(eng *engine.Engine) *httptest.Server { return httptest.NewServer(New(eng, quiet)) }

func (f *fixture) do(method, path, body string) (int, string) {
	f.t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	resp := f.send(req)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// send sends req with the fixture's token, if any.
func (f *fixture) send(req *http.Request) *http.Response {
	f.t.Helper()
	if f.token != "" {
		req.Header.Set("Authorization", "Bearer "+f.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	return resp
}

// walFrames counts the frames on disk.
func (f *fixture) walFrames() int {
	n := 0
	wal.ReplayDir(filepath.Join(f.dir, "wal"), 1, func(uint64, [][]byte) error { n++; return nil })
	return n
}

const dag = `name: dag
params: {greeting: hello}
tasks:
  first: {command: "echo $ORKWAL_TASK_NAME"}
  second: {command: "cat $ORKWAL_INPUT", depends_on: [first]}
  third: {command: "echo third", depends_on: [second]}
`

func (f *fixture) waitRun(id string) engine.RunView {
	f.t.Helper()
	guard := time.After(20 * time.Second)
	for {
		ch := f.eng.Changed()
		r, err := f.eng.Run(id)
		if err == nil && (r.Status == "success" || r.Status == "failed") {
			return r
		}
		select {
		case <-ch:
		case <-guard:
			f.t.Fatalf("run %s did not finish", id)
		}
	}
}

func TestWorkflowLifecycleAndRun(t *testing.T) {
	f := newFixture(t)
	if code, body := f.do("POST", "/workflows", dag); code != 201 || !strings.Contains(body, `"version": 1`) {
		t.Fatalf("put: %d %s", code, body)
	}
	if code, _ := f.do("POST", "/workflows", dag); code != 200 {
		t.Fatalf("same workflow again: %d, want 200 (unchanged)", code)
	}
	id := f.triggerWith("dag", `{"params": {"greeting": "hi"}}`)
	run := f.waitRun(id)
	if run.Status != "success" || len(run.Tasks) != 3 {
		t.Fatalf("run %s with %d tasks", run.Status, len(run.Tasks))
	}
	for i := 1; i < 3; i++ {
		if run.Tasks[i].StartedAt.Before(*run.Tasks[i-1].FinishedAt) {
			t.Fatalf("task %s started before %s finished", run.Tasks[i].Name, run.Tasks[i-1].Name)
		}
	}
	code, body := f.do("GET", "/runs/"+id+"/tasks/second/logs", "")
	if code != 200 || !strings.Contains(body, `"greeting":"hi"`) {
		t.Fatalf("logs of second: %d %q, want its ORKWAL_INPUT with the param", code, body)
	}
	if code, body = f.do("GET", "/runs/"+id+"/tasks", ""); code != 200 || !strings.Contains(body, `"attempt": 1`) {
		t.Fatalf("tasks: %d %s", code, body)
	}
	if code, body = f.do("GET", "/runs?workflow=dag&limit=1", ""); code != 200 || !strings.Contains(body, id) {
		t.Fatalf("runs: %d %s", code, body)
	}
	if code, _ = f.do("DELETE", "/workflows/dag", ""); code != 204 {
		t.Fatalf("delete: %d", code)
	}
	if code, _ = f.do("GET", "/workflows/dag", ""); code != 404 {
		t.Fatalf("get after delete: %d", code)
	}
}

// TestBadInputWritesNothing: every row is rejected with its status and a
// message naming what is wrong, and no frame reaches the WAL.
func TestBadInputWritesNothing(t *testing.T) {
	f := newFixture(t)
	f.do("POST", "/workflows", dag)
	before := f.walFrames()
	rows := []struct {
		name, method, path, body string
		status                   int
		msg                      string
	}{
		{"malformed yaml", "POST", "/workflows", "name: [x\ntasks:", 400, "invalid YAML"},
		{"cycle", "POST", "/workflows", "name: c\ntasks:\n  a: {command: x, depends_on: [b]}\n  b: {command: x, depends_on: [a]}\n", 400, "dependency cycle"},
		{"unknown dependency", "POST", "/workflows", "name: u\ntasks:\n  a: {command: x, depends_on: [nope]}\n", 400, `tasks.a.depends_on: unknown task "nope"`},
		{"unknown key", "POST", "/workflows", "name: u\ntasks:\n  a: {comand: x}\n", 400, "tasks.a.comand: unknown key"},
		{"too large", "POST", "/workflows", strings.Repeat("#", MaxWorkflowBytes+1), 413, "limit"},
		{"unknown workflow", "POST", "/workflows/nope/runs", "", 404, `workflow "nope"`},
		{"bad json", "POST", "/workflows/dag/runs", `{"params": `, 400, "request body"},
		{"unknown field", "POST", "/workflows/dag/runs", `{"parms": {}}`, 400, "parms"},
		{"object param", "POST", "/workflows/dag/runs", `{"params": {"greeting": {}}}`, 400, "params.greeting"},
		{"undeclared param", "POST", "/workflows/dag/runs", `{"params": {"x": "1"}}`, 400, "unknown x"},
		{"bad name", "POST", "/workflows/..%2fetc/runs", "", 400, "slash"},
		{"bad name chars", "POST", "/workflows/a%20b/runs", "", 400, "workflow name"},
		{"bad run id", "GET", "/runs/nope", "", 400, "not a run id"},
		{"unknown run", "GET", "/runs/01a20513-4449-7a72-88e6-f0b8c447588e", "", 404, "run"},
		{"bad limit", "GET", "/runs?limit=-1", "", 400, "limit"},
		{"delete unknown", "DELETE", "/workflows/nope", "", 404, "nope"},
		{"no endpoint", "GET", "/nope", "", 404, "no endpoint"},
	}
	for _, r := range rows {
		code, body := f.do(r.method, r.path, r.body)
		var e struct{ Error string }
		if err := json.Unmarshal([]byte(body), &e); err != nil {
			t.Errorf("%s: body is not a JSON error: %q", r.name, body)
		}
		if code != r.status || !strings.Contains(e.Error, r.msg) {
			t.Errorf("%s: %d %q, want %d containing %q", r.name, code, e.Error, r.status, r.msg)
		}
	}
	if after := f.walFrames(); after != before {
		t.Fatalf("bad input wrote %d WAL frames", after-before)
	}
}

func TestDeleteRefusedWhileRunActive(t *testing.T) {
	f := newFixture(t)
	f.do("POST", "/workflows", "name: slow\ntasks:\n  s: {command: sleep 30}\n")
	f.do("POST", "/workflows/slow/runs", "")
	if code, body := f.do("DELETE", "/workflows/slow", ""); code != 409 || !strings.Contains(body, "active run") {
		t.Fatalf("delete with an active run: %d %s", code, body)
	}
}

func TestHealthz(t *testing.T) {
	f := newFixture(t)
	if code, body := f.do("GET", "/healthz", ""); code != 200 || !strings.Contains(body, "ok") {
		t.Fatalf("healthz: %d %s", code, body)
	}
}

// TestFailedWALAnswers503AndKeepsServingReads: after an fsync failure,
// writes answer 503 with the reason, reads keep working, /healthz is 503.
func TestFailedWALAnswers503AndKeepsServingReads(t *testing.T) {
	dir := t.TempDir()
	var broken atomic.Bool
	eng, err := engine.Open(engine.Config{DataDir: dir, Logger: quiet,
		Executors: map[string]executors.Executor{"process": executors.Noop{}, "noop": executors.Noop{}},
		WALFault: func(op wal.Op, _ uint64) error {
			if broken.Load() && op == wal.OpSync {
				return errors.New("injected I/O error")
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	eng.Start()
	srv := httptest.NewServer(New(eng, quiet))
	f := &fixture{t: t, dir: dir, eng: eng, srv: srv}
	t.Cleanup(func() { srv.Close(); eng.Close() })
	f.do("POST", "/workflows", dag)
	broken.Store(true)
	for _, w := range []struct{ method, path, body string }{
		{"POST", "/workflows/dag/runs", ""},
		{"POST", "/workflows", strings.Replace(dag, "name: dag", "name: dag2", 1)},
		{"DELETE", "/workflows/dag", ""},
	} {
		code, body := f.do(w.method, w.path, w.body)
		if code != 503 || !strings.Contains(body, "write-ahead log failed") || !strings.Contains(body, "injected I/O error") {
			t.Errorf("%s %s with a failed WAL: %d %s", w.method, w.path, code, body)
		}
	}
	if code, body := f.do("GET", "/workflows/dag", ""); code != 200 {
		t.Errorf("read with a failed WAL: %d %s", code, body)
	}
	if code, body := f.do("GET", "/healthz", ""); code != 503 || !strings.Contains(body, "injected I/O error") {
		t.Errorf("healthz with a failed WAL: %d %s", code, body)
	}
}

// TestPutWorkflowFileHeader: X-Orkwal-Workflow-File gives a posted workflow
// the folder its relative paths resolve against; a bad header is a 400
// naming it, and nothing is recorded.
func TestPutWorkflowFileHeader(t *testing.T) {
	f := newFixture(t)
	const relative = "name: rel\ntasks:\n  t: {command: [cat, marker], workdir: sub}\n"
	post := func(header ...string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", f.srv.URL+"/workflows", strings.NewReader(relative))
		for _, h := range header {
			req.Header.Add(WorkflowFileHeader, h)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	frames := f.walFrames()
	for _, bad := range [][]string{{"wf/rel.yaml"}, {"/srv/../etc/rel.yaml"}, {"/a/rel.yaml", "/b/rel.yaml"}} {
		if code, body := post(bad...); code != 400 || !strings.Contains(body, WorkflowFileHeader) {
			t.Errorf("header %q: %d %s, want 400 naming the header", bad, code, body)
		}
	}
	if f.walFrames() != frames {
		t.Fatal("a rejected workflow was recorded")
	}
	code, body := post("/srv/flows/rel.yaml")
	if code != 201 {
		t.Fatalf("with the header: %d %s", code, body)
	}
	view, err := f.eng.Workflow("rel")
	if err != nil {
		t.Fatal(err)
	}
	if got := view.Tasks[0].Workdir; got != "/srv/flows/sub" {
		t.Errorf("workdir %q, want it resolved against the file's folder", got)
	}
}

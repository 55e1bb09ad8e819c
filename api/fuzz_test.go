package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/executors"
)

// The request decoders under go test -fuzz: whatever the body, the answer is
// never a panic and never a 5xx; an error is a JSON {"error"}.
//
//	go test -run '^$' -fuzz '^FuzzTriggerBody$' -fuzztime 30s ./api/

// fuzzServer is a Server over a real engine whose every executor is a noop:
// a fuzzed workflow (a schedule, say) never runs anything.
func fuzzServer(f *testing.F) *Server {
	noop := executors.Noop{}
	eng, err := engine.Open(engine.Config{DataDir: f.TempDir(), Logger: quiet,
		Executors: map[string]executors.Executor{"process": noop, "noop": noop, "python": noop, "http": noop}})
	if err != nil {
		f.Fatal(err)
	}
	eng.Start()
	f.Cleanup(func() { eng.Close() })
	s := New(eng, quiet)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("POST", "http://127.0.0.1/workflows", strings.NewReader(
		"name: w\nparams: {a: x, b: y}\ntasks:\n  t: {executor: noop}\n")))
	if rec.Code != 201 {
		f.Fatalf("put w: %d %s", rec.Code, rec.Body)
	}
	return s
}

// checkAnswer fails on a 5xx, or an error that is not JSON.
func checkAnswer(t *testing.T, rec *httptest.ResponseRecorder, input []byte) {
	t.Helper()
	if rec.Code >= 500 {
		t.Fatalf("%d for %q: %s", rec.Code, input, rec.Body)
	}
	if rec.Code >= 400 {
		var e struct{ Error string }
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" {
			t.Fatalf("%d for %q: not a JSON error: %q", rec.Code, input, rec.Body)
		}
	}
}

func FuzzTriggerBody(f *testing.F) {
	for _, seed := range []struct{ body, key string }{
		{``, ``},
		{`{}`, `k`},
		{`{"params": {"a": "1", "b": 2}}`, `order-42`},
		{`{"params": {"a": 1e400}}`, ``},
		{`{"params": {"a": true, "b": null}}`, ``},
		{`{"params": {"zz": "1"}}`, ``},
		{`{"params": []}`, ``},
		{`{"params": {"a": {"x": 1}}}`, ``},
		{`{"parms": {}}`, ``},
		{`{"params": {"a": "1"}} {}`, ``},
		{`[{"params": 1}]`, ``},
		{`"\ud800"`, ``},
		{`{"params": {"\u0000": "\u0000"}}`, "\x00"},
		{strings.Repeat(`{"params":`, 1000), strings.Repeat("k", 200)},
	} {
		f.Add([]byte(seed.body), seed.key)
	}
	s := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte, key string) {
		req := httptest.NewRequest("POST", "http://127.0.0.1/workflows/w/runs", bytes.NewReader(body))
		if key != "" {
			req.Header["Idempotency-Key"] = []string{key}
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		checkAnswer(t, rec, body)
		if rec.Code == 201 {
			var created struct{ ID string }
			if json.Unmarshal(rec.Body.Bytes(), &created) != nil || checkRunID(created.ID) != nil {
				t.Fatalf("201 without a run id: %s", rec.Body)
			}
		}
	})
}

func FuzzWorkflowBody(f *testing.F) {
	for _, seed := range []string{
		"",
		"name: w2\ntasks:\n  t: {executor: noop}\n",
		dag,
		"name: c\ntasks:\n  a: {command: x, depends_on: [b]}\n  b: {command: x, depends_on: [a]}\n",
		"name: [x\ntasks:",
		"name: f\ntasks:\n  d: {command: x}\n  e: {command: x, foreach: d.items, depends_on: [d]}\n",
		"name: s\nschedule: '@every 1h'\ntasks:\n  t: {executor: noop}\n",
		"name: p\ntasks:\n  t: {executor: python, file: x.py, function: f, types: {A: {type: object}}}\n",
		"a: &a [*a, *a]\n",
		"name: \"\\u0000\"\ntasks: {}\n",
		"{\"name\": \"j\", \"tasks\": {\"t\": {\"executor\": \"noop\"}}}",
		"\xff\xfe\x00",
	} {
		f.Add([]byte(seed))
	}
	s := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("POST", "http://127.0.0.1/workflows", bytes.NewReader(body)))
		checkAnswer(t, rec, body)
	})
}

// FuzzRequestTarget: any path and query of any method.
func FuzzRequestTarget(f *testing.F) {
	for _, seed := range []string{
		"/runs?limit=5&status=failed&since=2026-01-01T00:00:00Z",
		"/runs?cursor=MToxOjAxYTIwNTEzLTQ0NDktN2E3Mi04OGU2LWYwYjhjNDQ3NTg4ZQ",
		"/runs/01a20513-4449-7a72-88e6-f0b8c447588e/tasks/t[0]/logs?attempt=1",
		"/workflows/%2e%2e/runs",
		"/metrics",
	} {
		f.Add("GET", seed)
	}
	s := fuzzServer(f)
	f.Fuzz(func(t *testing.T, method, target string) {
		req, err := http.NewRequest(method, "http://127.0.0.1"+target, nil)
		if err != nil || req.URL.Path == "" || strings.Contains(target, "follow") {
			return // not a request net/http would hand over; follow would block
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		checkAnswer(t, rec, []byte(method+" "+target))
	})
}

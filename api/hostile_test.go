package api

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rawRequest sends path exactly as written (no client-side cleaning or
// escaping) and returns the status, the headers and the body.
func (f *fixture) rawRequest(method, path string, header map[string]string) (int, http.Header, string) {
	f.t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.srv.URL, "http://"))
	if err != nil {
		f.t.Fatal(err)
	}
	defer conn.Close()
	var b strings.Builder
	b.WriteString(method + " " + path + " HTTP/1.1\r\nHost: " + strings.TrimPrefix(f.srv.URL, "http://") + "\r\nConnection: close\r\n")
	for k, v := range header {
		b.WriteString(k + ": " + v + "\r\n")
	}
	if f.token != "" {
		b.WriteString("Authorization: Bearer " + f.token + "\r\n")
	}
	b.WriteString("\r\n")
	if _, err := conn.Write([]byte(b.String())); err != nil {
		f.t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		f.t.Fatalf("%s %q: %v", method, path, err)
	}
	defer resp.Body.Close()
	var body strings.Builder
	bufio.NewReader(resp.Body).WriteTo(&body)
	return resp.StatusCode, resp.Header, body.String()
}

// TestPathTraversalRejected: no path parameter reaches a file outside the
// data folder's own layout: encoded and raw "..", encoded slashes and
// backslashes, NUL and other control characters are all 400, before any
// handler runs, and nothing is written.
func TestPathTraversalRejected(t *testing.T) {
	f := newFixture(t)
	f.put("name: w\ntasks:\n  t: {executor: noop}\n")
	id := f.trigger("w")
	f.waitRun(id)
	// A file a traversal would aim at, with a recognizable content.
	secret := "top-secret-7d1c"
	os.WriteFile(filepath.Join(f.dir, "secret.log"), []byte(secret), 0o600)
	before := f.walFrames()
	run := "/runs/" + id
	for _, path := range []string{
		"/runs/%2e%2e/tasks",
		"/runs/%2E%2E",
		"/runs/../workflows",
		"/runs/./" + id,
		"/workflows/..%2f..%2fetc%2fpasswd",
		"/workflows/..%2F..%2Fsecret",
		"/workflows/%2e%2e%2fsecret/runs",
		"/workflows/a%5cb",
		"/workflows/%00",
		"/workflows/a%00b/runs",
		"/workflows/a%0ab",
		"/workflows/a%7fb",
		run + "/tasks/..%2f..%2fsecret/logs",
		run + "/tasks/%2e%2e/logs",
		run + "/tasks/%2e%2e%2f%2e%2e%2fsecret/logs",
		run + "/tasks/t%00/logs",
		run + "%00/tasks",
		run + "%2f..%2f..%2fsecret",
		"/runs/" + strings.Repeat("%2e%2e%2f", 20) + "secret",
		"//workflows",
		"/workflows//runs",
		"/runs/%zz",
	} {
		for _, method := range []string{"GET", "POST", "DELETE"} {
			code, _, body := f.rawRequest(method, path, nil)
			if code != http.StatusBadRequest {
				t.Errorf("%s %s: %d %s, want 400", method, path, code, body)
			}
			if strings.Contains(body, secret) {
				t.Errorf("%s %s: the answer holds the secret file", method, path)
			}
		}
	}
	// Rejected by the path parameter's own check (GET: the only method of
	// the route; another method is a 405).
	for _, path := range []string{
		run + "/tasks/t%5b..%5d/logs", // t[..]
		run + "/tasks/t[-1]/logs",
		run + "/tasks/t[01]/logs",
		run + "/tasks/.hidden/logs",
		run + "/tasks/-t/logs",
		"/workflows/.hidden",
		"/runs/" + strings.ToUpper(id) + "x",
	} {
		if code, _, body := f.rawRequest("GET", path, nil); code != http.StatusBadRequest || strings.Contains(body, secret) {
			t.Errorf("GET %s: %d %s, want 400", path, code, body)
		}
	}
	// A raw NUL or space is refused by net/http itself, before the API.
	for _, path := range []string{"/workflows/a\x00b", "/runs/\x00"} {
		if code, _, _ := f.rawRequest("GET", path, nil); code != http.StatusBadRequest {
			t.Errorf("GET %q: %d, want 400", path, code)
		}
	}
	if after := f.walFrames(); after != before {
		t.Fatalf("hostile paths wrote %d WAL frames", after-before)
	}
	// The same paths, well formed, still work.
	if code, _, body := f.rawRequest("GET", run+"/tasks/t/logs", nil); code != 200 {
		t.Fatalf("the task's log: %d %s", code, body)
	}
}

// TestMethodNotAllowed: a known path with another method is a JSON 405
// naming the methods it has, in Allow too; an unknown path is a JSON 404.
func TestMethodNotAllowed(t *testing.T) {
	f := newFixture(t)
	id := "01a20513-4449-7a72-88e6-f0b8c447588e"
	for _, row := range []struct {
		method, path, allow string
	}{
		{"PUT", "/workflows", "GET, HEAD, POST"},
		{"DELETE", "/runs", "GET, HEAD"},
		{"PATCH", "/runs/" + id, "GET, HEAD"},
		{"GET", "/workflows/x/runs", "POST"},
		{"GET", "/runs/" + id + "/cancel", "POST"},
		{"POST", "/healthz", "GET, HEAD"},
		{"POST", "/metrics", "GET, HEAD"},
		{"OPTIONS", "/workflows/x", "DELETE, GET, HEAD"},
	} {
		code, header, body := f.rawRequest(row.method, row.path, nil)
		var e struct{ Error string }
		if code != 405 || json.Unmarshal([]byte(body), &e) != nil || !strings.Contains(e.Error, "not allowed") {
			t.Errorf("%s %s: %d %s, want a JSON 405", row.method, row.path, code, body)
		}
		if got := header.Get("Allow"); got != row.allow {
			t.Errorf("%s %s: Allow %q, want %q", row.method, row.path, got, row.allow)
		}
	}
	for _, path := range []string{"/nope", "/runs/", "/workflows/x/y/z", "/runs/" + id + "/tasks/t/logs/x"} {
		code, _, body := f.rawRequest("GET", path, nil)
		if code != 404 || !strings.Contains(body, `"error"`) {
			t.Errorf("GET %s: %d %s, want a JSON 404", path, code, body)
		}
	}
}

// TestBadRequestsAreClear4xx: every malformed query, header or body is a
// 4xx whose message names what is wrong, and writes nothing.
func TestBadRequestsAreClear4xx(t *testing.T) {
	f := newFixture(t)
	f.put("name: w\nparams: {a: x}\ntasks:\n  t: {executor: noop}\n")
	id := f.trigger("w")
	f.waitRun(id)
	before := f.walFrames()
	logs := "/runs/" + id + "/tasks/t/logs"
	rows := []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
		msg                      string
	}{
		{"status", "GET", "/runs?status=done", "", nil, 400, "status \"done\": must be one of"},
		{"since", "GET", "/runs?since=yesterday", "", nil, 400, "RFC 3339"},
		{"limit zero", "GET", "/runs?limit=0", "", nil, 400, "limit"},
		{"limit over max", "GET", "/runs?limit=1001", "", nil, 400, "1 to 1000"},
		{"cursor", "GET", "/runs?cursor=garbage", "", nil, 400, "not a cursor"},
		{"cursor id", "GET", "/runs?cursor=MTox", "", nil, 400, "not a cursor"},
		{"typo", "GET", "/runs?stauts=failed", "", nil, 400, `unknown query parameter "stauts"`},
		{"twice", "GET", "/runs?status=failed&status=success", "", nil, 400, "given 2 times"},
		{"workflow", "GET", "/runs?workflow=../x", "", nil, 400, "workflow"},
		{"run typo", "GET", "/runs/" + id + "?wiat=1s", "", nil, 400, `unknown query parameter "wiat" (known: wait, instances)`},
		{"run wait twice", "GET", "/runs/" + id + "?wait=1s&wait=zzz", "", nil, 400, "wait: given 2 times"},
		{"tasks param", "GET", "/runs/" + id + "/tasks?status=failed", "", nil, 400, `unknown query parameter "status" (known: fanout, after, limit)`},
		{"workflows param", "GET", "/workflows?name=w", "", nil, 400, `"name"`},
		{"healthz param", "GET", "/healthz?verbose=1", "", nil, 400, `"verbose"`},
		{"bad escape", "GET", "/runs?status=%zz", "", nil, 400, "invalid URL escape"},
		{"cancel param", "POST", "/runs/" + id + "/cancel?force=1", "", nil, 400, `"force"`},
		{"trigger param", "POST", "/workflows/w/runs?a=1", "", nil, 400, `"a"`},
		{"attempt", "GET", logs + "?attempt=0", "", nil, 400, "attempt"},
		{"attempt word", "GET", logs + "?attempt=last", "", nil, 400, "attempt"},
		{"follow", "GET", logs + "?follow=yes", "", nil, 400, "follow"},
		{"logs typo", "GET", logs + "?folow=1", "", nil, 400, "folow"},
		{"no attempt", "GET", logs + "?attempt=2", "", nil, 404, "no attempt 2"},
		{"no task", "GET", "/runs/" + id + "/tasks/nope/logs", "", nil, 404, "nope"},
		{"follow no task", "GET", "/runs/" + id + "/tasks/nope/logs?follow=1", "", nil, 404, "nope"},
		{"key too long", "POST", "/workflows/w/runs", "", map[string]string{"Idempotency-Key": strings.Repeat("k", 129)}, 400, "Idempotency-Key"},
		{"key non-ascii", "POST", "/workflows/w/runs", "", map[string]string{"Idempotency-Key": "clé"}, 400, "printable ASCII"},
		{"trigger too large", "POST", "/workflows/w/runs", `{"params": {"a": "` + strings.Repeat("x", MaxTriggerBytes) + `"}}`, nil, 413, "limit is 65536 bytes"},
		{"two values", "POST", "/workflows/w/runs", `{} {}`, nil, 400, "more than one JSON value"},
		{"trailing garbage", "POST", "/workflows/w/runs", `{} ]`, nil, 400, "more than one JSON value"},
		{"array", "POST", "/workflows/w/runs", `[]`, nil, 400, "request body"},
		{"list param", "POST", "/workflows/w/runs", `{"params": {"a": [1]}}`, nil, 400, "params.a"},
		{"null param", "POST", "/workflows/w/runs", `{"params": {"a": null}}`, nil, 400, "params.a"},
		{"param not utf-8", "POST", "/workflows/w/runs", "{\"params\": {\"a\": \"caf\xe9\"}}", nil, 400, "params.a: the value is not valid UTF-8"},
		{"param lone surrogate", "POST", "/workflows/w/runs", `{"params": {"a": "x\ud800y"}}`, nil, 400, "params.a: the value is not valid UTF-8"},
		{"param low surrogate", "POST", "/workflows/w/runs", `{"params": {"a": "\uDC00"}}`, nil, 400, "params.a: the value is not valid UTF-8"},
		{"param name not utf-8", "POST", "/workflows/w/runs", "{\"params\": {\"\xff\": \"x\"}}", nil, 400, "params: the name"},
		{"empty workflow", "POST", "/workflows", "", nil, 400, ""},
		{"binary workflow", "POST", "/workflows", "\x00\x01\x02", nil, 400, ""},
	}
	for _, r := range rows {
		req, _ := http.NewRequest(r.method, f.srv.URL+r.path, strings.NewReader(r.body))
		for k, v := range r.header {
			req.Header[k] = []string{v}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		var e struct{ Error string }
		err = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if err != nil || resp.StatusCode != r.status || !strings.Contains(e.Error, r.msg) || e.Error == "" {
			t.Errorf("%s: %d %q (%v), want %d containing %q", r.name, resp.StatusCode, e.Error, err, r.status, r.msg)
		}
	}
	// Headers a Go client refuses to send.
	code, _, body := f.rawRequest("POST", "/workflows/w/runs", map[string]string{"Idempotency-Key": "a", "idempotency-key": "b"})
	if code != 400 || !strings.Contains(body, "given 2 times") {
		t.Errorf("two keys: %d %s", code, body)
	}
	// (net/http refuses a control character in a header before the API.)
	if code, _, body = f.rawRequest("POST", "/workflows/w/runs", map[string]string{"Idempotency-Key": "a\x01b"}); code != 400 {
		t.Errorf("a control character in the key: %d %s", code, body)
	}
	if _, err := idempotencyKey(&http.Request{Header: http.Header{"Idempotency-Key": {"a\x01b"}}}); err == nil || !strings.Contains(err.Error(), "printable ASCII") {
		t.Errorf("a control character in the key: %v", err)
	}
	if after := f.walFrames(); after != before {
		t.Fatalf("bad requests wrote %d WAL frames", after-before)
	}
}

// TestParamsKeepValidUTF8: escapes that are valid UTF-8 (a surrogate
// pair, an escaped U+FFFD, an escaped backslash before "ud800") are
// accepted as written.
func TestParamsKeepValidUTF8(t *testing.T) {
	got, err := decodeTriggerBody([]byte(`{"params": {"p": "\ud83d\ude00", "r": "\ufffd", "b": "\\ud800", "e": "é"}}`))
	if err != nil || got["p"] != "\U0001F600" || got["r"] != "\uFFFD" || got["b"] != `\ud800` || got["e"] != "é" {
		t.Fatalf("%q %v", got, err)
	}
}

// TestParamNumbersKeepTheirSpelling: a number param is passed as written.
func TestParamNumbersKeepTheirSpelling(t *testing.T) {
	got, err := decodeTriggerBody([]byte(`{"params": {"n": 10000000, "f": 1.50, "b": true, "s": "x"}}`))
	if err != nil || got["n"] != "10000000" || got["f"] != "1.50" || got["b"] != "true" || got["s"] != "x" {
		t.Fatalf("%v %v", got, err)
	}
}

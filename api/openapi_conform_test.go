package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/orkwal/orkwal/engine"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	verrors "github.com/pb33f/libopenapi-validator/errors"
)

// openAPICase is one request of TestOpenAPIIsTrue: what is sent and the
// documented status it must get.
type openAPICase struct {
	op     string // the documented operation: "GET /runs/{id}"
	method string
	path   string
	body   string
	header map[string]string
	want   int
	// valid: the request itself is one the description allows (it is
	// validated too); error cases send what it does not.
	valid bool
	// stream: the answer is a stream; its status, headers and first bytes
	// are checked, and the stream is then closed.
	stream bool
	// anonymous: sent without the daemon's token, whatever the status.
	anonymous bool
	// fx picks the daemon: "" the plain one, "token" one with a token,
	// "limits" one that serves a single log or event stream at once.
	fx string
}

const conformToken = "s3cret-token-for-tests"

// notExercised are documented answers TestOpenAPIIsTrue does not provoke,
// each with where its behaviour is tested instead. Every other documented
// (operation, status) must be exercised.
var notExercised = map[string]string{
	"503": "a failed WAL (fail-stop) or a full disk: engine/failstop_test.go and the api's disk-full tests",
}

// openAPIValidator builds the maintained validator from the served
// description, failing on a description that is not valid OpenAPI.
func openAPIValidator(t *testing.T, doc []byte) validator.Validator {
	t.Helper()
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	v, errs := validator.NewValidator(d)
	if len(errs) > 0 {
		t.Fatalf("openapi.json: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("openapi.json is not valid OpenAPI: %s: %s", e.Message, e.Reason)
		}
		t.FailNow()
	}
	return v
}

// strictSchemas is doc with every object schema that lists its
// properties closed to others (additionalProperties false where it says
// nothing): an answer with a field the description does not name fails
// the validation, as a field left undocumented must (the description
// itself stays open to additions, for its clients). Objects that are
// maps (additionalProperties given) are left as they are.
func strictSchemas(t *testing.T, doc []byte) []byte {
	t.Helper()
	var d any
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if _, ok := v["properties"].(map[string]any); ok {
				if _, set := v["additionalProperties"]; !set {
					v["additionalProperties"] = false
				}
			}
			for _, kid := range v {
				walk(kid)
			}
		case []any:
			for _, kid := range v {
				walk(kid)
			}
		}
	}
	walk(d)
	out, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// documentedAnswers lists every documented "METHOD /path status".
func documentedAnswers(t *testing.T, doc []byte) map[string]bool {
	t.Helper()
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for path, ops := range d.Paths {
		for method, raw := range ops {
			if method == "parameters" {
				continue
			}
			var op struct {
				Responses map[string]json.RawMessage `json:"responses"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("openapi.json: %s %s: %v", method, path, err)
			}
			for status := range op.Responses {
				out[strings.ToUpper(method)+" "+path+" "+status] = true
			}
		}
	}
	return out
}

// TestOpenAPIIsTrue sends every documented request, and the documented
// error cases, to a real daemon (the API over a real engine, on a real
// socket) and validates each request and answer against /openapi.json with
// a maintained OpenAPI 3.1 validator (pb33f/libopenapi-validator). It fails
// on a documented answer no case provokes (but notExercised) and on a case
// whose answer is not documented.
func TestOpenAPIIsTrue(t *testing.T) {
	fxs := map[string]*fixture{
		"":       newFixture(t),
		"token":  newFixture(t, WithToken(conformToken)),
		"limits": newFixtureConfig(t, engine.Config{MaxPendingRuns: 1}, WithMaxFollowers(1), WithMaxSubscribers(1)),
	}
	_, doc := fxs[""].do("GET", "/openapi.json", "")
	v := openAPIValidator(t, strictSchemas(t, []byte(doc)))
	cases := openAPICases(t, fxs)
	seen := map[string]bool{}
	for _, c := range cases {
		if c.method == "" {
			c.method = "GET"
		}
		name := fmt.Sprintf("%s %s → %d", c.method, c.path, c.want)
		req, resp := sendCase(t, fxs[c.fx], c)
		if resp.StatusCode != c.want {
			t.Errorf("%s: got %d", name, resp.StatusCode)
			continue
		}
		seen[c.op+" "+fmt.Sprint(c.want)] = true
		if c.valid {
			if ok, errs := v.ValidateHttpRequestSync(req); !ok {
				t.Errorf("%s: the request does not follow the description: %s", name, describeErrs(errs))
			}
		}
		if c.want == http.StatusMethodNotAllowed {
			// The description has no operation for the method sent: the
			// 405 is documented under the path's operations.
			req = req.Clone(req.Context())
			req.Method = strings.Fields(c.op)[0]
		}
		if ok, errs := v.ValidateHttpResponse(req, resp); !ok {
			t.Errorf("%s: the answer does not follow the description: %s", name, describeErrs(errs))
		}
	}
	var missing []string
	for answer := range documentedAnswers(t, []byte(doc)) {
		status := answer[strings.LastIndexByte(answer, ' ')+1:]
		if !seen[answer] && notExercised[status] == "" {
			missing = append(missing, answer)
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("documented but never provoked: %s (add a case to openAPICases)", m)
	}
}

func describeErrs(errs []*validationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "\n\t%s: %s", e.Message, e.Reason)
		for _, s := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n\t\t%s: %s", s.FieldPath, s.Reason)
		}
	}
	return b.String()
}

// sendCase sends c and returns the request and the answer, its body read
// (up to the first event or log bytes of a stream) so that it can be
// validated.
func sendCase(t *testing.T, f *fixture, c openAPICase) (*http.Request, *http.Response) {
	t.Helper()
	if c.method == "" {
		c.method = "GET"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, c.method, f.srv.URL+c.path, strings.NewReader(c.body))
	for k, val := range c.header {
		if k == "Host" {
			req.Host = val
		} else {
			req.Header.Set(k, val)
		}
	}
	if c.body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if f.token != "" && c.header["Authorization"] == "" && !c.noAuth() && !c.anonymous {
		req.Header.Set("Authorization", "Bearer "+f.token)
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	defer resp.Body.Close()
	var body []byte
	if c.stream && resp.StatusCode == 200 {
		line, _ := bufio.NewReader(resp.Body).ReadBytes('\n')
		body = line
	} else {
		body, _ = io.ReadAll(resp.Body)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	// The validator reads the request's body again.
	req.Body = io.NopCloser(strings.NewReader(c.body))
	return req, resp
}

// noRedirects answers a redirect as it is, so that its status is checked.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// noAuth: the case is about a missing token.
func (c openAPICase) noAuth() bool { return c.want == http.StatusUnauthorized }

type validationError = verrors.ValidationError

// openAPICases sets up the daemons' workflows and runs and lists the cases:
// the hand-written ones (each documented success and error answer of each
// operation), then, from the description itself, a 401, 403 and 405 for
// every operation that documents one.
func openAPICases(t *testing.T, fxs map[string]*fixture) []openAPICase {
	t.Helper()
	f := fxs[""]
	f.put("name: w\nparams: {who: world}\ntasks:\n  a: {executor: noop}\n")
	for i := 0; i < 21; i++ { // a workflow keeps 20 versions: version 1 is no longer kept
		f.put(fmt.Sprintf("name: many\ntasks:\n  a: {executor: noop}\n# %d\n", i))
	}
	f.put("name: echo\ntasks:\n  a: {command: 'echo hello'}\n")
	f.put("name: fails\ntasks:\n  a: {command: 'exit 3'}\n")
	f.put("name: slow\ntasks:\n  a: {command: 'sleep 60'}\n")
	f.put("name: cron\nschedule: '0 3 * * *'\ntasks:\n  a: {executor: noop}\n")
	done := f.trigger("echo")
	f.waitStatus(done, "success")
	f.put("name: fan\ntasks:\n  each: {executor: noop, parallel: 3}\n  after: {executor: noop, depends_on: [each]}\n")
	fan := f.trigger("fan")
	f.waitStatus(fan, "success")
	failed := f.trigger("fails")
	f.waitStatus(failed, "failed")
	f.put("name: chain\ntasks:\n  a: {command: 'exit 3'}\n  b: {executor: noop, depends_on: [a]}\n")
	chain := f.trigger("chain")
	f.waitStatus(chain, "failed")
	running := f.trigger("slow")
	f.waitTasks(running, "slow running", func(ts map[string]engine.TaskView) bool { return ts["a"].Status == "running" })
	cancelMe := f.trigger("slow")
	f.put("name: twostep\ntasks:\n  a: {command: 'sleep 60'}\n  b: {executor: noop, depends_on: [a]}\n")
	pauseMe := f.trigger("twostep")

	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	t.Cleanup(receiver.Close)
	f.put("name: alerted\nalerts:\n  - on: [failure]\n    slack: " + receiver.URL + "/hook\ntasks:\n  a: {executor: noop}\n")
	folder := t.TempDir()
	os.WriteFile(filepath.Join(folder, "managed.yaml"), []byte("name: managed\ntasks:\n  a: {executor: noop}\n"), 0o600)
	if _, err := f.eng.LoadFolder(folder); err != nil {
		t.Fatal(err)
	}

	lf := fxs["limits"]
	lf.put("name: fails\ntasks:\n  a: {command: 'exit 3'}\n")
	lfFailed := lf.trigger("fails")
	lf.waitStatus(lfFailed, "failed")
	lf.put("name: slow\ntasks:\n  a: {command: 'echo started; sleep 60'}\n")
	held := lf.trigger("slow") // the one pending run the daemon admits
	lf.waitTasks(held, "slow running", func(ts map[string]engine.TaskView) bool { return ts["a"].Status == "running" })
	hold(t, lf, "/runs/"+held+"/tasks/a/logs?follow=1") // the one log stream it serves
	hold(t, lf, "/events")                              // and the one event stream

	assetResp, err := http.Get(f.srv.URL + "/ui/assets/app.js")
	if err != nil {
		t.Fatal(err)
	}
	assetResp.Body.Close()
	etag := assetResp.Header.Get("ETag")
	const missing = "01a20513-4449-7a72-88e6-f0b8c447588e"
	big := strings.Repeat("x", 2<<20)
	jsonBody := map[string]string{"Content-Type": "application/json"}
	cases := []openAPICase{
		{op: "GET /healthz", path: "/healthz", want: 200, valid: true},
		{op: "GET /metrics", path: "/metrics", want: 200, valid: true},
		{op: "GET /openapi.json", path: "/openapi.json", want: 200, valid: true},
		{op: "GET /schema/workflow.json", path: "/schema/workflow.json", want: 200, valid: true},
		{op: "GET /workflows", path: "/workflows", want: 200, valid: true},
		{op: "POST /workflows", method: "POST", path: "/workflows", body: "name: fresh\ntasks:\n  a: {executor: noop}\n", header: map[string]string{"Content-Type": "application/yaml"}, want: 201, valid: true},
		{op: "POST /workflows", method: "POST", path: "/workflows", body: "name: fresh\ntasks:\n  a: {executor: noop}\n", header: map[string]string{"Content-Type": "application/yaml"}, want: 200, valid: true},
		{op: "POST /workflows", method: "POST", path: "/workflows", body: "name: broken\ntasks:\n  a: {retries: three}\n", header: map[string]string{"Content-Type": "application/yaml"}, want: 400},
		{op: "POST /workflows", method: "POST", path: "/workflows", body: big, header: map[string]string{"Content-Type": "application/yaml"}, want: 413},
		{op: "GET /workflows/{name}", path: "/workflows/w", want: 200, valid: true},
		{op: "GET /workflows/{name}", path: "/workflows/-bad", want: 400},
		{op: "GET /workflows/{name}", path: "/workflows/nope", want: 404, valid: true},
		{op: "GET /workflows/{name}/versions", path: "/workflows/many/versions", want: 200, valid: true},
		{op: "GET /workflows/{name}/versions", path: "/workflows/-bad/versions", want: 400},
		{op: "GET /workflows/{name}/versions", path: "/workflows/nope/versions", want: 404, valid: true},
		{op: "GET /workflows/{name}/versions/{version}", path: "/workflows/many/versions/2", want: 200, valid: true},
		{op: "GET /workflows/{name}/versions/{version}", path: "/workflows/many/versions/0", want: 400},
		{op: "GET /workflows/{name}/versions/{version}", path: "/workflows/many/versions/02", want: 400},
		{op: "GET /workflows/{name}/versions/{version}", path: "/workflows/-bad/versions/1", want: 400},
		{op: "GET /workflows/{name}/versions/{version}", path: "/workflows/nope/versions/1", want: 404, valid: true},
		{op: "GET /workflows/{name}/versions/{version}", path: "/workflows/many/versions/1", want: 404, valid: true},
		{op: "GET /workflows/{name}/versions/{version}", path: "/workflows/many/versions/99", want: 404, valid: true},
		{op: "DELETE /workflows/{name}", method: "DELETE", path: "/workflows/fresh", want: 204, valid: true},
		{op: "DELETE /workflows/{name}", method: "DELETE", path: "/workflows/-bad", want: 400},
		{op: "DELETE /workflows/{name}", method: "DELETE", path: "/workflows/nope", want: 404, valid: true},
		{op: "DELETE /workflows/{name}", method: "DELETE", path: "/workflows/slow", want: 409, valid: true},
		{op: "POST /workflows/{name}/runs", method: "POST", path: "/workflows/w/runs", body: `{"params": {"who": "you"}}`, header: map[string]string{"Idempotency-Key": "k-1"}, want: 201, valid: true},
		{op: "POST /workflows/{name}/runs", method: "POST", path: "/workflows/w/runs", body: `{"params": {"who": "you"}}`, header: map[string]string{"Idempotency-Key": "k-1"}, want: 200, valid: true},
		{op: "POST /workflows/{name}/runs", method: "POST", path: "/workflows/w/runs", body: `{"params": {"nope": "x"}}`, header: jsonBody, want: 400},
		{op: "POST /workflows/{name}/runs", method: "POST", path: "/workflows/nope/runs", want: 404, valid: true},
		{op: "POST /workflows/{name}/runs", method: "POST", path: "/workflows/echo/runs", header: map[string]string{"Idempotency-Key": "k-1"}, want: 409, valid: true},
		{op: "POST /workflows/{name}/runs", method: "POST", path: "/workflows/w/runs", body: `{"params": {"who": "` + big + `"}}`, header: jsonBody, want: 413},
		{op: "POST /workflows/{name}/schedule/pause", method: "POST", path: "/workflows/cron/schedule/pause", want: 200, valid: true},
		{op: "POST /workflows/{name}/schedule/pause", method: "POST", path: "/workflows/-bad/schedule/pause", want: 400},
		{op: "POST /workflows/{name}/schedule/pause", method: "POST", path: "/workflows/nope/schedule/pause", want: 404, valid: true},
		{op: "POST /workflows/{name}/schedule/pause", method: "POST", path: "/workflows/w/schedule/pause", want: 409, valid: true},
		{op: "POST /workflows/{name}/schedule/resume", method: "POST", path: "/workflows/cron/schedule/resume", want: 200, valid: true},
		{op: "POST /workflows/{name}/schedule/resume", method: "POST", path: "/workflows/-bad/schedule/resume", want: 400},
		{op: "POST /workflows/{name}/schedule/resume", method: "POST", path: "/workflows/nope/schedule/resume", want: 404, valid: true},
		{op: "POST /workflows/{name}/schedule/resume", method: "POST", path: "/workflows/w/schedule/resume", want: 409, valid: true},
		{op: "GET /runs", path: "/runs?workflow=echo&status=success&limit=10", want: 200, valid: true},
		{op: "GET /runs", path: "/runs?limit=many", want: 400},
		{op: "GET /runs/{id}", path: "/runs/" + done, want: 200, valid: true},
		{op: "GET /runs/{id}", path: "/runs/" + done + "?wait=1s", want: 200, valid: true},
		{op: "GET /runs/{id}", path: "/runs/" + fan, want: 200, valid: true},
		{op: "GET /runs/{id}", path: "/runs/" + fan + "?instances=counts", want: 200, valid: true},
		{op: "GET /runs/{id}", path: "/runs/" + fan + "?instances=all", want: 400},
		{op: "GET /runs/{id}", path: "/runs/not-a-uuid", want: 400},
		{op: "GET /runs/{id}", path: "/runs/" + missing, want: 404, valid: true},
		{op: "POST /runs/{id}/cancel", method: "POST", path: "/runs/" + cancelMe + "/cancel", want: 200, valid: true},
		{op: "POST /runs/{id}/cancel", method: "POST", path: "/runs/not-a-uuid/cancel", want: 400},
		{op: "POST /runs/{id}/cancel", method: "POST", path: "/runs/" + missing + "/cancel", want: 404, valid: true},
		{op: "POST /runs/{id}/cancel", method: "POST", path: "/runs/" + done + "/cancel", want: 409, valid: true},
		{op: "POST /runs/{id}/retry", method: "POST", path: "/runs/" + failed + "/retry", want: 200, valid: true},
		{op: "POST /runs/{id}/retry", method: "POST", path: "/runs/not-a-uuid/retry", want: 400},
		{op: "POST /runs/{id}/retry", method: "POST", path: "/runs/" + missing + "/retry", want: 404, valid: true},
		{op: "POST /runs/{id}/retry", method: "POST", path: "/runs/" + done + "/retry", want: 409, valid: true},
		{op: "GET /runs/{id}/tasks", path: "/runs/" + done + "/tasks", want: 200, valid: true},
		{op: "GET /runs/{id}/tasks", path: "/runs/" + fan + "/tasks?fanout=each&limit=2", want: 200, valid: true},
		{op: "GET /runs/{id}/tasks", path: "/runs/" + fan + "/tasks?fanout=each&after=1", want: 200, valid: true},
		{op: "GET /runs/{id}/tasks", path: "/runs/" + fan + "/tasks?fanout=each&limit=0", want: 400},
		{op: "GET /runs/{id}/tasks", path: "/runs/" + fan + "/tasks?fanout=nope", want: 404, valid: true},
		{op: "GET /runs/{id}/tasks", path: "/runs/not-a-uuid/tasks", want: 400},
		{op: "GET /runs/{id}/tasks", path: "/runs/" + missing + "/tasks", want: 404, valid: true},
		{op: "GET /runs/{id}/tasks/{name}/logs", path: "/runs/" + done + "/tasks/a/logs", want: 200, valid: true},
		{op: "GET /runs/{id}/tasks/{name}/logs", path: "/runs/" + running + "/tasks/a/logs?follow=1", want: 200, valid: true, stream: true},
		{op: "GET /runs/{id}/tasks/{name}/logs", path: "/runs/" + done + "/tasks/a/logs?attempt=zero", want: 400},
		{op: "GET /runs/{id}/tasks/{name}/logs", path: "/runs/" + done + "/tasks/nope/logs", want: 404, valid: true},
		{op: "GET /runs/{id}/tasks/{name}/logs", path: "/runs/" + held + "/tasks/a/logs?follow=1", want: 429, fx: "limits"},
		{op: "GET /events", path: "/events?workflow=echo", want: 200, valid: true, stream: true},
		{op: "GET /events", path: "/events", header: map[string]string{"Last-Event-ID": "yesterday"}, want: 400},
		{op: "GET /events", path: "/events", want: 429, fx: "limits"},
		{op: "POST /workflows/{name}/runs", method: "POST", path: "/workflows/slow/runs", want: 429, valid: true, fx: "limits"},
		{op: "POST /runs/{id}/retry", method: "POST", path: "/runs/" + lfFailed + "/retry", want: 429, valid: true, fx: "limits"},
		{op: "POST /workflows", method: "POST", path: "/workflows", body: "name: managed\ntasks:\n  b: {executor: noop}\n", header: map[string]string{"Content-Type": "application/yaml"}, want: 409, valid: true},
		{op: "POST /workflows/batch", method: "POST", path: "/workflows/batch", body: `{"workflows": [{"source": "name: b1\ntasks:\n  a: {executor: noop}\n"}, {"source": "name: b2\ntasks:\n  a: {executor: noop}\n"}]}`, want: 200, valid: true},
		{op: "POST /workflows/batch", method: "POST", path: "/workflows/batch", body: `{"workflows": [{"source": "name: b3\ntasks: {}\n"}]}`, want: 400, valid: true},
		{op: "POST /workflows/batch", method: "POST", path: "/workflows/batch", body: `{"workflows": [{"source": "name: managed\ntasks:\n  a: {command: x}\n"}]}`, want: 409, valid: true},
		{op: "POST /workflows/batch", method: "POST", path: "/workflows/batch", body: `{"workflows": [{"source": "` + strings.Repeat("x", 17<<20) + `"}]}`, want: 413},
		{op: "POST /workflows/{name}/alerts/test", method: "POST", path: "/workflows/alerted/alerts/test", want: 200, valid: true},
		{op: "POST /workflows/{name}/alerts/test", method: "POST", path: "/workflows/nope/alerts/test", want: 404, valid: true},
		{op: "GET /alerts", path: "/alerts?limit=10", want: 200, valid: true},
		{op: "GET /alerts", path: "/alerts?limit=lots", want: 400},
		{op: "GET /summary", path: "/summary", want: 200, valid: true},
		{op: "GET /", path: "/", want: 302, valid: true},
		{op: "GET /ui/", path: "/ui/", want: 200, valid: true},
		{op: "GET /ui/runs", path: "/ui/runs?workflow=echo&status=failed", want: 200, valid: true},
		{op: "GET /ui/runs/{id}", path: "/ui/runs/" + done, want: 200, valid: true},
		{op: "GET /ui/workflows/{name}", path: "/ui/workflows/w", want: 200, valid: true},
		{op: "GET /ui/workflows/{name}", path: "/ui/workflows/many?version=2", want: 200, valid: true},
		{op: "GET /ui/assets/{file}", path: "/ui/assets/app.js", want: 200, valid: true},
		{op: "GET /ui/assets/{file}", path: "/ui/assets/app.js", header: map[string]string{"If-None-Match": etag}, want: 304, valid: true},
		{op: "GET /ui/assets/{file}", path: "/ui/assets/nope.js", want: 404, valid: true},
		{op: "POST /ui/login", method: "POST", path: "/ui/login", body: `{"token": "` + conformToken + `"}`, want: 200, valid: true, fx: "token", anonymous: true},
		{op: "POST /ui/login", method: "POST", path: "/ui/login", body: `{"token": "wrong"}`, want: 401, valid: true, fx: "token", anonymous: true},
		{op: "POST /ui/login", method: "POST", path: "/ui/login", body: `{"token": `, want: 400, fx: "token", anonymous: true},
		{op: "POST /runs/{id}/tasks/{name}/mark", method: "POST", path: "/runs/" + chain + "/tasks/a/mark", body: `{"status": "success"}`, want: 200, valid: true},
		{op: "POST /runs/{id}/tasks/{name}/mark", method: "POST", path: "/runs/" + chain + "/tasks/a/mark", body: `{"status": "maybe"}`, want: 400},
		{op: "POST /runs/{id}/tasks/{name}/mark", method: "POST", path: "/runs/" + chain + "/tasks/nope/mark", body: `{"status": "success"}`, want: 404, valid: true},
		{op: "POST /runs/{id}/tasks/{name}/mark", method: "POST", path: "/runs/" + done + "/tasks/a/mark", body: `{"status": "success"}`, want: 409, valid: true},
	}
	cases = append(cases, pauseCases(pauseMe, done, missing)...)
	cases = append(cases, []openAPICase{
		{op: "GET /api/runs", path: "/api/runs?limit=10&offset=0&status=success&workflow=echo", want: 200, valid: true},
		{op: "GET /api/runs", path: "/api/runs?offset=-1", want: 400},
		{op: "POST /api/runs", method: "POST", path: "/api/runs", body: `{"workflow": "w"}`, want: 200, valid: true},
		{op: "POST /api/runs", method: "POST", path: "/api/runs", body: `{}`, want: 400},
		{op: "POST /api/runs", method: "POST", path: "/api/runs", body: `{"workflow": "nope"}`, want: 404, valid: true},
		{op: "POST /api/runs", method: "POST", path: "/api/runs", body: `{"workflow": "slow"}`, want: 429, valid: true, fx: "limits"},
		{op: "GET /api/runs/{id}", path: "/api/runs/" + done, want: 200, valid: true},
		{op: "GET /api/runs/{id}", path: "/api/runs/not-a-uuid", want: 400},
		{op: "GET /api/runs/{id}", path: "/api/runs/" + missing, want: 404, valid: true},
		{op: "POST /api/runs/{id}/cancel", method: "POST", path: "/api/runs/" + running + "/cancel", want: 200, valid: true},
		{op: "POST /api/runs/{id}/cancel", method: "POST", path: "/api/runs/not-a-uuid/cancel", want: 400},
		{op: "POST /api/runs/{id}/cancel", method: "POST", path: "/api/runs/" + missing + "/cancel", want: 404, valid: true},
		{op: "POST /api/runs/{id}/cancel", method: "POST", path: "/api/runs/" + done + "/cancel", want: 409, valid: true},
		{op: "GET /api/workflows", path: "/api/workflows?search=ECH&limit=5&offset=0", want: 200, valid: true},
		{op: "GET /api/workflows", path: "/api/workflows?limit=-3", want: 400},
		{op: "POST /api/workflows", method: "POST", path: "/api/workflows", body: `{"yaml": "name: orky\ntasks:\n  a: {executor: noop}\n", "project": "p", "region": "r"}`, want: 200, valid: true},
		{op: "POST /api/workflows", method: "POST", path: "/api/workflows", body: `{"yaml": "name: orky\ntasks: {}\n"}`, want: 400},
		{op: "POST /api/workflows", method: "POST", path: "/api/workflows", body: `{"yaml": "name: w\ntasks:\n  a: {executor: noop}\n", "replace": false}`, want: 409, valid: true},
		{op: "POST /api/workflows", method: "POST", path: "/api/workflows", body: `{"yaml": "` + big + `"}`, want: 413},
		{op: "GET /api/workflows/{name}", path: "/api/workflows/cron", want: 200, valid: true},
		{op: "GET /api/workflows/{name}", path: "/api/workflows/-bad", want: 400},
		{op: "GET /api/workflows/{name}", path: "/api/workflows/nope", want: 404, valid: true},
		{op: "PATCH /api/workflows/{name}/schedule", method: "PATCH", path: "/api/workflows/cron/schedule", body: `{"enabled": false}`, want: 200, valid: true},
		{op: "PATCH /api/workflows/{name}/schedule", method: "PATCH", path: "/api/workflows/cron/schedule", body: `{}`, want: 400},
		{op: "PATCH /api/workflows/{name}/schedule", method: "PATCH", path: "/api/workflows/nope/schedule", body: `{"enabled": true}`, want: 404, valid: true},
		{op: "PATCH /api/workflows/{name}/schedule", method: "PATCH", path: "/api/workflows/w/schedule", body: `{"enabled": true}`, want: 409, valid: true},
		{op: "POST /ui/logout", method: "POST", path: "/ui/logout", want: 204, valid: true},
	}...)
	return append(cases, generatedCases(t, f, map[string]string{"{name}": "w", "{id}": done})...)
}

// pauseCases are the cases of the pause and resume routes, orkwal's and
// Ork's: each pauses (then resumes) a task or run of pauseMe, is refused a
// malformed id, finds no run missing, and conflicts with the ended done.
func pauseCases(pauseMe, done, missing string) []openAPICase {
	routes := []struct{ op, ok, bad, gone, ended string }{
		{"/runs/{id}", "/runs/" + pauseMe, "/runs/not-a-uuid", "/runs/" + missing, "/runs/" + done},
		{"/runs/{id}/tasks/{name}", "/runs/" + pauseMe + "/tasks/b", "/runs/" + pauseMe + "/tasks/-bad", "/runs/" + pauseMe + "/tasks/nope", "/runs/" + done + "/tasks/a"},
		{"/api/runs/{id}", "/api/runs/" + pauseMe, "/api/runs/not-a-uuid", "/api/runs/" + missing, "/api/runs/" + done},
		{"/api/tasks/{id}", "/api/tasks/" + pauseMe + ":b", "/api/tasks/nope", "/api/tasks/" + missing + ":b", "/api/tasks/" + done + ":a"},
	}
	var out []openAPICase
	for _, rt := range routes {
		for _, act := range []string{"/pause", "/resume"} {
			op := "POST " + rt.op + act
			out = append(out,
				openAPICase{op: op, method: "POST", path: rt.ok + act, want: 200, valid: true},
				openAPICase{op: op, method: "POST", path: rt.bad + act, want: 400},
				openAPICase{op: op, method: "POST", path: rt.gone + act, want: 404, valid: true},
				openAPICase{op: op, method: "POST", path: rt.ended + act, want: 409, valid: true})
		}
	}
	return out
}

// generatedCases are, for every operation whose description documents
// them, a 401 (no token, from the daemon with a token), a 403 (a browser's
// cross-site write, or a tokenless daemon asked by host name) and a 405 (a
// method the path does not take).
func generatedCases(t *testing.T, f *fixture, values map[string]string) []openAPICase {
	t.Helper()
	_, doc := f.do("GET", "/openapi.json", "")
	var out []openAPICase
	for answer := range documentedAnswers(t, []byte(doc)) {
		parts := strings.Fields(answer) // METHOD /path status
		method, path, status := parts[0], parts[1], parts[2]
		concrete := path
		for k, v := range values {
			concrete = strings.ReplaceAll(concrete, k, v)
		}
		if strings.HasSuffix(path, "/tasks/{name}/logs") {
			concrete = strings.Replace(strings.ReplaceAll(path, "{id}", values["{id}"]), "{name}", "a", 1)
		}
		c := openAPICase{op: method + " " + path, method: method, path: concrete}
		switch status {
		case "401":
			if path == "/ui/login" {
				continue // a wrong token, not a missing one: a hand-written case
			}
			c.want, c.fx = 401, "token"
		case "403":
			c.want = 403
			if method == "GET" {
				c.header = map[string]string{"Host": "orkwal.example:7777"}
			} else {
				c.header = map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}
			}
		case "405":
			c.method, c.want = "PATCH", 405
			if method == "PATCH" {
				c.method = "PUT"
			}
		default:
			continue
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].op+out[i].method < out[j].op+out[j].method })
	return out
}

// hold opens a stream on f and keeps it open until the test ends.
func hold(t *testing.T, f *fixture, path string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("hold %s: %v %v", path, err, resp)
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
}

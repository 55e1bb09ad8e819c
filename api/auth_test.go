package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/orkwal/orkwal/engine"
)

// TestTokenRequired: with a token, every endpoint but /healthz answers a
// JSON 401 with WWW-Authenticate unless the request carries the token.
func TestTokenRequired(t *testing.T) {
	const token = "correct-horse-battery-staple"
	f := newFixture(t, WithToken(token))
	id := "01a20513-4449-7a72-88e6-f0b8c447588e"
	endpoints := []struct{ method, path string }{
		{"GET", "/workflows"}, {"POST", "/workflows"}, {"GET", "/workflows/w"}, {"DELETE", "/workflows/w"},
		{"GET", "/workflows/w/versions"}, {"GET", "/workflows/w/versions/1"},
		{"POST", "/workflows/w/runs"}, {"GET", "/runs"}, {"GET", "/runs/" + id}, {"POST", "/runs/" + id + "/cancel"},
		{"POST", "/runs/" + id + "/retry"}, {"GET", "/runs/" + id + "/tasks"}, {"GET", "/runs/" + id + "/tasks/t/logs"},
		{"GET", "/metrics"}, {"GET", "/openapi.json"}, {"GET", "/nope"}, {"PUT", "/workflows"},
		{"POST", "/workflows/w/schedule/pause"}, {"POST", "/workflows/w/schedule/resume"},
		{"GET", "/schema/workflow.json"}, {"GET", "/events"},
		{"POST", "/workflows/w/alerts/test"}, {"GET", "/alerts"},
		{"GET", "/summary"}, {"GET", "/ui/nope"},
		{"GET", "/api/runs"}, {"POST", "/api/runs"}, {"GET", "/api/runs/" + id}, {"POST", "/api/runs/" + id + "/cancel"},
		{"GET", "/api/workflows"}, {"POST", "/api/workflows"}, {"GET", "/api/workflows/w"},
		{"PATCH", "/api/workflows/w/schedule"},
		{"POST", "/runs/" + id + "/pause"}, {"POST", "/runs/" + id + "/resume"},
		{"POST", "/runs/" + id + "/tasks/t/pause"}, {"POST", "/runs/" + id + "/tasks/t/resume"},
		{"POST", "/api/runs/" + id + "/pause"}, {"POST", "/api/runs/" + id + "/resume"},
		{"POST", "/api/tasks/" + id + ":t/pause"}, {"POST", "/api/tasks/" + id + ":t/resume"},
	}
	if len(endpoints) < len(f.api.Routes())-len(uiRoutes) { // the page's routes: TestUIPagesAndSession
		t.Fatalf("%d routes, %d in the test: add the new ones", len(f.api.Routes()), len(endpoints))
	}
	for _, auth := range []struct{ name, header, wwwAuth string }{
		{"none", "", `Bearer realm="orkwal"`},
		{"wrong", "Bearer wrong", `Bearer realm="orkwal", error="invalid_token"`},
		{"prefix", "Bearer " + token[:10], `Bearer realm="orkwal", error="invalid_token"`},
		{"longer", "Bearer " + token + "x", `Bearer realm="orkwal", error="invalid_token"`},
		{"basic", "Basic " + token, `Bearer realm="orkwal"`},
		{"bare", token, `Bearer realm="orkwal"`},
		{"empty bearer", "Bearer ", `Bearer realm="orkwal"`},
	} {
		for _, e := range endpoints {
			req, _ := http.NewRequest(e.method, f.srv.URL+e.path, nil)
			if auth.header != "" {
				req.Header.Set("Authorization", auth.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var body struct{ Error string }
			json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if resp.StatusCode != 401 || !strings.HasPrefix(body.Error, "unauthorized") {
				t.Errorf("%s %s with %s token: %d %q, want a JSON 401", e.method, e.path, auth.name, resp.StatusCode, body.Error)
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != auth.wwwAuth {
				t.Errorf("%s %s with %s token: WWW-Authenticate %q, want %q", e.method, e.path, auth.name, got, auth.wwwAuth)
			}
		}
	}
	if code, body := f.do("GET", "/healthz", ""); code != 200 {
		t.Fatalf("healthz without a token: %d %s", code, body)
	}
	f.token = token
	for _, e := range []struct{ method, path string }{{"GET", "/workflows"}, {"GET", "/runs"}, {"GET", "/metrics"}, {"GET", "/openapi.json"}} {
		if code, body := f.do(e.method, e.path, ""); code != 200 {
			t.Errorf("%s %s with the token: %d %s", e.method, e.path, code, body)
		}
	}
	req, _ := http.NewRequest("GET", f.srv.URL+"/workflows", nil)
	req.Header.Set("Authorization", "bearer "+token) // the scheme is case-insensitive
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("lower-case scheme: %v %v", resp, err)
	}
}

func TestNoTokenNoAuth(t *testing.T) {
	f := newFixture(t, WithToken(""))
	if code, body := f.do("GET", "/workflows", ""); code != 200 {
		t.Fatalf("without a token configured: %d %s", code, body)
	}
}

// TestIdempotencyKeyReachesTrigger: the key is handed to the TriggerFunc;
// created false answers 200 with the first run's id.
func TestIdempotencyKeyReachesTrigger(t *testing.T) {
	type call struct{ name, trigger, key string }
	var calls []call
	seen := map[string]string{}
	fake := func(name string, params map[string]string, trigger, key string) (string, bool, error) {
		calls = append(calls, call{name, trigger, key})
		if name == "conflict" {
			return "", false, fmt.Errorf("%w: Idempotency-Key %q was used for another request", engine.ErrConflict, key)
		}
		if id, ok := seen[key]; ok && key != "" {
			return id, false, nil
		}
		id := fmt.Sprintf("01a20513-4449-7a72-88e6-%012d", len(calls))
		seen[key] = id
		return id, true, nil
	}
	f := newFixture(t, WithTrigger(fake))
	post := func(name, key string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", f.srv.URL+"/workflows/"+name+"/runs", strings.NewReader(`{"params": {"a": 1}}`))
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		req.Header.Set("X-Orkwal-Trigger", "cli")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ ID, Error string }
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		return resp, body.ID + body.Error
	}
	first, id := post("w", "order-42")
	again, id2 := post("w", "order-42")
	if first.StatusCode != 201 || again.StatusCode != 200 || id != id2 || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("first %d %s, again %d %s %q", first.StatusCode, id, again.StatusCode, id2, again.Header.Get("Idempotent-Replayed"))
	}
	if again.Header.Get("Location") != "/runs/"+id {
		t.Fatalf("Location %q", again.Header.Get("Location"))
	}
	if resp, msg := post("conflict", "order-42"); resp.StatusCode != 409 || !strings.Contains(msg, "another request") {
		t.Fatalf("conflict: %d %s", resp.StatusCode, msg)
	}
	if resp, _ := post("w", ""); resp.StatusCode != 201 {
		t.Fatalf("no key: %d", resp.StatusCode)
	}
	want := []call{{"w", "cli", "order-42"}, {"w", "cli", "order-42"}, {"conflict", "cli", "order-42"}, {"w", "cli", ""}}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Fatalf("calls %v, want %v", calls, want)
	}
	// The default TriggerFunc: the engine records the key with the run.
	g := newFixture(t)
	g.put("name: w\ntasks:\n  t: {executor: noop}\n")
	g.put("name: other\ntasks:\n  t: {executor: noop}\n")
	var locations []string
	for i, want := range []int{201, 200, 200} {
		req, _ := http.NewRequest("POST", g.srv.URL+"/workflows/w/runs", nil)
		req.Header.Set("Idempotency-Key", "same")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != want {
			t.Fatalf("trigger %d with a key: %v %v, want %d", i, resp, err, want)
		}
		locations = append(locations, resp.Header.Get("Location"))
		resp.Body.Close()
	}
	if locations[0] != locations[1] || locations[1] != locations[2] {
		t.Fatalf("the same key made several runs: %v", locations)
	}
	if runs := g.eng.Runs(engine.RunFilter{Workflow: "w"}); len(runs) != 1 {
		t.Fatalf("%d runs of w, want 1", len(runs))
	}
	req, _ := http.NewRequest("POST", g.srv.URL+"/workflows/other/runs", nil)
	req.Header.Set("Idempotency-Key", "same")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 409 {
		t.Fatalf("the key of a run of w for other: %v %v, want 409", resp, err)
	}
	resp.Body.Close()
}

// TestPanicIsJSON500: a handler panic answers a JSON 500 and is counted.
func TestPanicIsJSON500(t *testing.T) {
	f := newFixture(t, WithTrigger(func(string, map[string]string, string, string) (string, bool, error) {
		panic(errors.New("boom"))
	}))
	code, body := f.do("POST", "/workflows/w/runs", "")
	if code != 500 || !strings.Contains(body, `"error": "internal error"`) {
		t.Fatalf("panic: %d %s", code, body)
	}
	if _, m := f.do("GET", "/metrics", ""); !strings.Contains(m, `orkwal_http_requests_total{route="POST /workflows/{name}/runs",code="500"} 1`) {
		t.Fatalf("metrics after a panic:\n%s", m)
	}
}

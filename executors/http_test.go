package executors

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var _ Executor = (*HTTP)(nil)

// testPollInterval keeps the async tests fast.
const testPollInterval = 2 * time.Millisecond

// newHTTPJob returns a job for spec with its log in a fresh folder.
func newHTTPJob(t *testing.T, spec HTTPJob) Job {
	t.Helper()
	job := newTestJob(t)
	job.HTTP = &spec
	return job
}

// startHTTP starts job on e and returns the handle and its events. The
// channel is large enough that the job never waits on the test.
func startHTTP(t *testing.T, e *HTTP, job Job) (Handle, <-chan Event) {
	t.Helper()
	events := make(chan Event, 1000)
	h, err := e.Start(job, func(ev Event) { events <- ev })
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return h, events
}

// expectStartedHTTP reads the next event and checks it is job's Started,
// without a pid.
func expectStartedHTTP(t *testing.T, job Job, events <-chan Event) Event {
	t.Helper()
	ev := nextEvent(t, events)
	if ev.Kind != Started || ev.TaskID != job.TaskID || ev.Attempt != job.Attempt || ev.PID != 0 {
		t.Fatalf("event = %+v, want Started of %s without a pid", ev, job.TaskID)
	}
	return ev
}

// runHTTP runs a synchronous job and returns its Finished event.
func runHTTP(t *testing.T, job Job) Event {
	t.Helper()
	_, events := startHTTP(t, NewHTTP(HTTPConfig{}), job)
	expectStartedHTTP(t, job, events)
	return expectFinished(t, job, events)
}

// expectHTTPFailed checks that fin failed (exit 1) with an Err containing want.
func expectHTTPFailed(t *testing.T, fin Event, want string) {
	t.Helper()
	if fin.OK || fin.ExitCode != 1 || !strings.Contains(fin.Err, want) {
		t.Errorf("Finished = {OK:%v Exit:%d Err:%q}, want failed with %q", fin.OK, fin.ExitCode, fin.Err, want)
	}
}

// serve starts a test server for handler, closed when the test ends.
func serve(t *testing.T, handler http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return srv
}

// reply returns a handler answering code and body.
func reply(code int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

func TestHTTPSyncJSON(t *testing.T) {
	t.Parallel()
	srv := serve(t, reply(200, `{"rows": 3}`+"\n"))
	job := newHTTPJob(t, HTTPJob{URL: srv.URL + "/load"})
	fin := runHTTP(t, job)
	if !fin.OK || fin.ExitCode != 0 || fin.Err != "" || string(fin.Output) != `{"rows": 3}` {
		t.Errorf("Finished = %+v, want OK with the body as output", fin)
	}
	want := "orkwal http: GET " + srv.URL + "/load -> 200 OK, 12 bytes in "
	if log := readLog(t, job); !strings.HasPrefix(log, want) || !strings.HasSuffix(log, "\n{\"rows\": 3}\n") {
		t.Errorf("log = %q, want a summary line starting %q and the body", log, want)
	}
}

func TestHTTPSyncNotJSON(t *testing.T) {
	t.Parallel()
	srv := serve(t, reply(201, "all \"good\"\n"))
	fin := runHTTP(t, newHTTPJob(t, HTTPJob{Method: "POST", URL: srv.URL}))
	if !fin.OK || string(fin.Output) != `"all \"good\"\n"` {
		t.Errorf("Finished = %+v, want OK with the body as a JSON string", fin)
	}
	fin = runHTTP(t, newHTTPJob(t, HTTPJob{URL: serve(t, reply(204, "")).URL}))
	if !fin.OK || fin.Output != nil {
		t.Errorf("Finished = %+v, want OK without output for an empty body", fin)
	}
}

func TestHTTPSyncServerError(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 300)
	tests := []struct{ body, want string }{
		{body: "  overloaded\n", want: "HTTP 503: overloaded"},
		{body: long, want: "HTTP 503: " + long[:200]},
		{body: "", want: "HTTP 503"},
	}
	for _, tt := range tests {
		srv := serve(t, reply(503, tt.body))
		job := newHTTPJob(t, HTTPJob{URL: srv.URL})
		fin := runHTTP(t, job)
		if fin.OK || fin.ExitCode != 1 || fin.Err != tt.want || fin.Output != nil {
			t.Errorf("Finished = %+v, want Err %q", fin, tt.want)
		}
		if log := readLog(t, job); !strings.Contains(log, "-> 503 Service Unavailable") || !strings.Contains(log, strings.TrimSpace(tt.body)) {
			t.Errorf("log lacks the status or the body: %q", log)
		}
	}
}

func TestHTTPSyncTimeout(t *testing.T) {
	t.Parallel()
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // hangs until the client gives up
	})
	job := newHTTPJob(t, HTTPJob{URL: srv.URL, Timeout: 200 * time.Millisecond})
	began := time.Now()
	fin := runHTTP(t, job)
	expectHTTPFailed(t, fin, "GET "+srv.URL+": timed out after 200ms")
	if elapsed := time.Since(began); elapsed < 200*time.Millisecond {
		t.Errorf("failed after %v, before the timeout", elapsed)
	}
}

// rawServer accepts connections and hands each to handle, until the test
// ends. It returns its address.
func rawServer(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				// Read the request head before answering.
				br := bufio.NewReader(conn)
				for {
					line, err := br.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				handle(conn)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

func TestHTTPSyncGarbageResponse(t *testing.T) {
	t.Parallel()
	url := rawServer(t, func(c net.Conn) { io.WriteString(c, "this is not HTTP\r\n\r\n") })
	expectHTTPFailed(t, runHTTP(t, newHTTPJob(t, HTTPJob{URL: url})), "malformed HTTP")
}

func TestHTTPSyncServerDisappears(t *testing.T) {
	t.Parallel()
	// Mid-response: the head promises 100 bytes, 10 come, the connection closes.
	url := rawServer(t, func(c net.Conn) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
	})
	job := newHTTPJob(t, HTTPJob{URL: url})
	expectHTTPFailed(t, runHTTP(t, job), "GET "+url+": read response: unexpected EOF")

	// Gone before the request.
	srv := httptest.NewServer(reply(200, "{}"))
	srv.Close()
	expectHTTPFailed(t, runHTTP(t, newHTTPJob(t, HTTPJob{URL: srv.URL})), "connection refused")
}

func TestHTTPSyncRequestAsSent(t *testing.T) {
	t.Parallel()
	type received struct {
		method, path, query, auth, trace, ctype, host string
		body                                          string
	}
	got := make(chan received, 1)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- received{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("X-Trace"),
			r.Header.Get("Content-Type"), r.Host, string(body)}
		io.WriteString(w, "{}")
	})
	job := newHTTPJob(t, HTTPJob{
		Method:  "PUT",
		URL:     srv.URL + "/items/7?key=s3cret-key",
		Headers: map[string]string{"Authorization": "Bearer s3cret-token", "X-Trace": "abc", "Host": "api.example"},
		Body:    []byte(`{"name": "seven"}`),
	})
	if fin := runHTTP(t, job); !fin.OK {
		t.Fatalf("Finished = %+v", fin)
	}
	want := received{"PUT", "/items/7", "key=s3cret-key", "Bearer s3cret-token", "abc", "application/json", "api.example", `{"name": "seven"}`}
	if r := <-got; r != want {
		t.Errorf("server received %+v, want %+v", r, want)
	}
	log := readLog(t, job)
	if strings.Contains(log, "s3cret") || strings.Contains(log, "abc") {
		t.Errorf("log shows a header value or the query's key: %q", log)
	}
	if !strings.Contains(log, "(headers: Authorization, Host, X-Trace)") || !strings.Contains(log, "key=REDACTED") {
		t.Errorf("log lacks the header names or the redacted query: %q", log)
	}

	// A Content-Type given is kept; a body that is not JSON gets none.
	srv2 := serve(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `"`+r.Header.Get("Content-Type")+`"`) })
	for body, want := range map[string]string{"a=1": `""`, `{}`: `"text/x"`} {
		spec := HTTPJob{Method: "POST", URL: srv2.URL, Body: []byte(body)}
		if body == "{}" {
			spec.Headers = map[string]string{"content-type": "text/x"}
		}
		if fin := runHTTP(t, newHTTPJob(t, spec)); string(fin.Output) != want {
			t.Errorf("body %q: server saw Content-Type %s, want %s", body, fin.Output, want)
		}
	}
}

func TestHTTPSyncOutputCap(t *testing.T) {
	t.Parallel()
	srv := serve(t, reply(200, `{"a": "0123456789"}`))
	job := newHTTPJob(t, HTTPJob{URL: srv.URL})
	job.MaxOutputBytes = 10
	expectHTTPFailed(t, runHTTP(t, job), "output larger than 10 bytes")
	job = newHTTPJob(t, HTTPJob{URL: srv.URL})
	job.MaxOutputBytes = 19
	if fin := runHTTP(t, job); !fin.OK {
		t.Errorf("Finished = %+v, want OK at exactly the cap", fin)
	}
}

func TestHTTPStartErrors(t *testing.T) {
	t.Parallel()
	async := func(a HTTPAsync) *HTTPJob {
		a.StatusField, a.Success = "state", []string{"DONE"}
		return &HTTPJob{URL: "http://x", Async: &a}
	}
	tests := []struct {
		name string
		spec *HTTPJob
		want string
	}{
		{"no http", nil, "no http task"},
		{"relative", &HTTPJob{URL: "/path"}, "not an absolute http or https URL"},
		{"scheme", &HTTPJob{URL: "ftp://host/x?token=abc"}, `url "ftp://host/x?token=REDACTED": not an absolute`},
		{"unparsable", &HTTPJob{URL: "http://[::1"}, "url: "},
		{"no status url", async(HTTPAsync{}), "exactly one of status_url and status_url_field"},
		{"both status urls", async(HTTPAsync{StatusURL: "http://x/{id}", IDField: "id", StatusURLField: "u"}), "exactly one of"},
		{"id without field", async(HTTPAsync{StatusURL: "http://x/{id}"}), "no id_field"},
		{"no status field", &HTTPJob{URL: "http://x", Async: &HTTPAsync{StatusURLField: "u", Success: []string{"x"}}}, "no status_field"},
		{"no success", &HTTPJob{URL: "http://x", Async: &HTTPAsync{StatusURLField: "u", StatusField: "s"}}, "no success values"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			job := newTestJob(t)
			job.HTTP = tt.spec
			var reported atomic.Int32
			h, err := NewHTTP(HTTPConfig{}).Start(job, func(Event) { reported.Add(1) })
			if err == nil || h != nil {
				t.Fatalf("Start = %v, %v; want an error", h, err)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), job.TaskID) {
				t.Errorf("error %q lacks %q or the task id", err, tt.want)
			}
			if n := reported.Load(); n != 0 {
				t.Errorf("%d events reported", n)
			}
		})
	}
}

// remoteJob is a fake asynchronous API: POST /jobs starts a job, GET
// /status/<id> answers from script, one entry per poll (the last one
// repeats). An entry is a status value, or one of the failure modes below.
type remoteJob struct {
	script []string
	polls  atomic.Int32
	// started, when set, receives a value when the start request arrives.
	started chan struct{}
}

// Poll failure modes of a remoteJob script.
const (
	poll503     = "!503"
	pollGarbage = "!garbage"
	pollHangUp  = "!hangup"
)

func (rj *remoteJob) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == "POST" && r.URL.Path == "/jobs" {
		if rj.started != nil {
			rj.started <- struct{}{}
		}
		io.WriteString(w, `{"execution": {"id": "exec-1"}, "links": {"status": "/status/exec-1"}}`)
		return
	}
	if r.URL.Path != "/status/exec-1" {
		http.NotFound(w, r)
		return
	}
	n := int(rj.polls.Add(1))
	step := rj.script[min(n, len(rj.script))-1]
	switch step {
	case poll503:
		http.Error(w, "try later", 503)
	case pollGarbage:
		io.WriteString(w, `{"state": "RUNN`)
	case pollHangUp: // mid-response (a hang-up before any byte is retried by net/http)
		conn, _, _ := w.(http.Hijacker).Hijack()
		io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{")
		conn.Close()
	default:
		fmt.Fprintf(w, `{"poll": %d, "result": {"state": %q}}`, n, step)
	}
}

// asyncJob returns a job starting a remoteJob at srv and polling it.
func asyncJob(t *testing.T, srv *httptest.Server) Job {
	t.Helper()
	return newHTTPJob(t, HTTPJob{
		Method: "POST", URL: srv.URL + "/jobs", Body: []byte(`{"job": "etl"}`),
		Headers: map[string]string{"Authorization": "Bearer tok"},
		Async: &HTTPAsync{
			StatusURL: srv.URL + "/status/{id}", IDField: "execution.id",
			StatusField: "result.state", Success: []string{"SUCCEEDED"}, Failure: []string{"FAILED", "CANCELLED"},
			PollInterval: testPollInterval,
		},
	})
}

// pollObserver counts an executor's polls and their failures.
type pollObserver struct {
	mu       sync.Mutex
	ok, fail int
	failures chan error // each failure, as it happens
}

// observe installs a pollObserver on e.
func observe(e *HTTP) *pollObserver {
	o := &pollObserver{failures: make(chan error, 1000)}
	e.observePoll = func(err error) {
		o.mu.Lock()
		defer o.mu.Unlock()
		if err != nil {
			o.fail++
			o.failures <- err
		} else {
			o.ok++
		}
	}
	return o
}

// counts returns the polls seen so far: successful and failed.
func (o *pollObserver) counts() (ok, failed int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ok, o.fail
}

// expectHeartbeats reads n Heartbeat events with status, then returns the
// next event.
func expectHeartbeats(t *testing.T, job Job, events <-chan Event, n int, status string) Event {
	t.Helper()
	for i := range n {
		ev := nextEvent(t, events)
		if ev.Kind != Heartbeat || ev.TaskID != job.TaskID || ev.Attempt != job.Attempt || ev.Status != status {
			t.Fatalf("event %d after Started = %+v, want Heartbeat %q", i+1, ev, status)
		}
	}
	return nextEvent(t, events)
}

func TestHTTPAsyncSucceeds(t *testing.T) {
	t.Parallel()
	rj := &remoteJob{script: []string{"PENDING", "RUNNING", "RUNNING", "SUCCEEDED"}}
	srv := serve(t, rj.ServeHTTP)
	job := asyncJob(t, srv)
	e := NewHTTP(HTTPConfig{})
	obs := observe(e)
	_, events := startHTTP(t, e, job)

	if started := expectStartedHTTP(t, job, events); started.RemoteID != "exec-1" {
		t.Errorf("Started.RemoteID = %q, want exec-1", started.RemoteID)
	}
	for _, status := range []string{"PENDING", "RUNNING", "RUNNING"} {
		if ev := nextEvent(t, events); ev.Kind != Heartbeat || ev.Status != status || ev.TaskID != job.TaskID {
			t.Fatalf("event = %+v, want Heartbeat %q", ev, status)
		}
	}
	fin := expectFinished(t, job, events)
	if !fin.OK || fin.ExitCode != 0 || !jsonEqual(t, fin.Output, `{"poll": 4, "result": {"state": "SUCCEEDED"}}`) {
		t.Errorf("Finished = %+v, want OK with the last poll's body", fin)
	}
	if ok, failed := obs.counts(); ok != 4 || failed != 0 || rj.polls.Load() != 4 {
		t.Errorf("%d polls ok, %d failed, server saw %d; want 4, 0, 4", ok, failed, rj.polls.Load())
	}
	log := readLog(t, job)
	for _, want := range []string{
		"orkwal http: POST " + srv.URL + "/jobs -> 200 OK", "(headers: Authorization)\n{\"execution\"",
		`poll 1: GET ` + srv.URL + `/status/exec-1 -> 200 OK`, `status "PENDING"`,
		`poll 4: GET`, "status \"SUCCEEDED\"\n{\"poll\": 4, ",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if strings.Count(log, `{"poll"`) != 1 {
		t.Errorf("log should hold the body of the final poll only:\n%s", log)
	}
}

func TestHTTPAsyncFails(t *testing.T) {
	t.Parallel()
	srv := serve(t, (&remoteJob{script: []string{"RUNNING", "CANCELLED"}}).ServeHTTP)
	job := asyncJob(t, srv)
	_, events := startHTTP(t, NewHTTP(HTTPConfig{}), job)
	expectStartedHTTP(t, job, events)
	if fin := expectHeartbeats(t, job, events, 1, "RUNNING"); fin.Kind != Finished || fin.OK ||
		fin.ExitCode != 1 || fin.Err != `remote status "CANCELLED"` || !strings.Contains(string(fin.Output), "CANCELLED") {
		t.Errorf("event = %+v, want Finished failed with the status", fin)
	}
}

func TestHTTPAsyncFailedPollsRetriedWithoutHeartbeat(t *testing.T) {
	t.Parallel()
	rj := &remoteJob{script: []string{poll503, pollGarbage, "RUNNING", pollHangUp, "SUCCEEDED"}}
	srv := serve(t, rj.ServeHTTP)
	job := asyncJob(t, srv)
	e := NewHTTP(HTTPConfig{})
	obs := observe(e)
	_, events := startHTTP(t, e, job)
	expectStartedHTTP(t, job, events)
	if fin := expectHeartbeats(t, job, events, 1, "RUNNING"); fin.Kind != Finished || !fin.OK {
		t.Errorf("event = %+v, want Finished OK after one heartbeat", fin)
	}
	if ok, failed := obs.counts(); ok != 2 || failed != 3 {
		t.Errorf("%d polls ok, %d failed; want 2 and 3", ok, failed)
	}
	log := readLog(t, job)
	for _, want := range []string{"poll 1: GET", "503 Service Unavailable", "failed: HTTP 503: try later",
		"poll 2: ", "failed: response is not JSON", "poll 4: ", "failed: GET " + srv.URL + "/status/exec-1: read response: unexpected EOF"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

func TestHTTPAsyncStatusURLField(t *testing.T) {
	t.Parallel()
	srv := serve(t, (&remoteJob{script: []string{"SUCCEEDED"}}).ServeHTTP)
	job := asyncJob(t, srv)
	job.HTTP.Async.StatusURL, job.HTTP.Async.IDField = "", ""
	job.HTTP.Async.StatusURLField = "links.status" // relative: resolved against the start URL
	_, events := startHTTP(t, NewHTTP(HTTPConfig{}), job)
	if started := expectStartedHTTP(t, job, events); started.RemoteID != srv.URL+"/status/exec-1" {
		t.Errorf("Started.RemoteID = %q, want the status URL", started.RemoteID)
	}
	if fin := expectFinished(t, job, events); !fin.OK {
		t.Errorf("Finished = %+v", fin)
	}
}

func TestHTTPAsyncBadStartResponse(t *testing.T) {
	t.Parallel()
	tests := []struct{ body, idField, want string }{
		{body: "<html>", idField: "id", want: "start response: response is not JSON"},
		{body: `{"other": 1}`, idField: "id", want: `start response: field "id" not found`},
		{body: `{"id": {"x": 1}}`, idField: "id", want: `field "id" is not a non-empty string or number`},
		{body: `{"items": [{"id": 42}]}`, idField: "items.1.id", want: `field "items.1.id" not found`},
	}
	for _, tt := range tests {
		srv := serve(t, reply(200, tt.body))
		job := newHTTPJob(t, HTTPJob{URL: srv.URL, Async: &HTTPAsync{
			StatusURL: srv.URL + "/{id}", IDField: tt.idField, StatusField: "s", Success: []string{"ok"},
		}})
		_, events := startHTTP(t, NewHTTP(HTTPConfig{}), job)
		// No Started: the work was never named.
		expectHTTPFailed(t, expectFinished(t, job, events), tt.want)
	}
}

func TestHTTPAsyncNumericID(t *testing.T) {
	t.Parallel()
	var polled atomic.Value
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" {
			io.WriteString(w, `{"items": [{"id": 12345678901234567890}]}`)
			return
		}
		polled.Store(r.URL.Path)
		io.WriteString(w, `{"done": true}`)
	})
	job := newHTTPJob(t, HTTPJob{Method: "POST", URL: srv.URL, Async: &HTTPAsync{
		StatusURL: srv.URL + "/runs/{id}", IDField: "items.0.id", StatusField: "done",
		Success: []string{"true"}, PollInterval: testPollInterval,
	}})
	_, events := startHTTP(t, NewHTTP(HTTPConfig{}), job)
	expectStartedHTTP(t, job, events)
	if fin := expectFinished(t, job, events); !fin.OK {
		t.Errorf("Finished = %+v", fin)
	}
	if got := polled.Load(); got != "/runs/12345678901234567890" {
		t.Errorf("polled %v, want the id as written", got)
	}
}

func TestHTTPStopDuringPolling(t *testing.T) {
	t.Parallel()
	rj := &remoteJob{script: []string{"RUNNING"}}
	job := asyncJob(t, serve(t, rj.ServeHTTP))
	h, events := startHTTP(t, NewHTTP(HTTPConfig{}), job)
	expectStartedHTTP(t, job, events)
	if ev := nextEvent(t, events); ev.Kind != Heartbeat {
		t.Fatalf("event = %+v, want a Heartbeat", ev)
	}
	h.Stop(time.Second, "heartbeat timeout (none for 1m0s)")
	h.Stop(0, "stopped by the test") // idempotent: the first reason counts
	for {
		ev := nextEvent(t, events)
		if ev.Kind == Heartbeat {
			continue // polls that finished before the Stop
		}
		if ev.Kind != Finished || ev.OK || ev.ExitCode != -1 || ev.Err != "stopped" {
			t.Fatalf("event = %+v, want Finished stopped", ev)
		}
		break
	}
	select {
	case ev := <-events:
		t.Errorf("event after Finished: %+v", ev)
	default:
	}
	h.Stop(0, "stopped by the test") // after the end: a no-op
	if log := readLog(t, job); !strings.HasSuffix(log, "\n[orkwal: heartbeat timeout (none for 1m0s)]\n") {
		t.Errorf("the log does not end with why it stopped:\n%s", log)
	}
}

func TestHTTPStopDuringRequest(t *testing.T) {
	t.Parallel()
	rj := &remoteJob{script: []string{"RUNNING"}, started: make(chan struct{}, 1)}
	hang := serve(t, func(w http.ResponseWriter, r *http.Request) {
		rj.started <- struct{}{}
		<-r.Context().Done()
	})
	job := newHTTPJob(t, HTTPJob{URL: hang.URL})
	h, events := startHTTP(t, NewHTTP(HTTPConfig{}), job)
	expectStartedHTTP(t, job, events)
	<-rj.started // the request is in flight
	h.Stop(0, "stopped by the test")
	if fin := expectFinished(t, job, events); fin.OK || fin.ExitCode != -1 || fin.Err != "stopped" {
		t.Errorf("Finished = %+v, want stopped", fin)
	}
}

func TestHTTPAsyncServerDisappears(t *testing.T) {
	t.Parallel()
	rj := &remoteJob{script: []string{"RUNNING"}}
	srv := httptest.NewServer(rj)
	defer srv.Close()
	job := asyncJob(t, srv)
	e := NewHTTP(HTTPConfig{})
	obs := observe(e)
	h, events := startHTTP(t, e, job)
	expectStartedHTTP(t, job, events)
	if ev := nextEvent(t, events); ev.Kind != Heartbeat {
		t.Fatalf("event = %+v, want a Heartbeat", ev)
	}
	srv.Close()
	// Polls fail from now on; wait for two failures in a row.
	for range 2 {
		select {
		case err := <-obs.failures:
			// Refused, or reset: a dial that reached the listener's
			// backlog just before it closed is reset.
			if msg := err.Error(); !strings.Contains(msg, "connection refused") && !strings.Contains(msg, "connection reset") {
				t.Errorf("poll failure %q, want connection refused or reset", err)
			}
		case <-time.After(guard):
			t.Fatal("no failed poll after the server closed")
		}
	}
	h.Stop(0, "stopped by the test")
	var beats int
	for {
		ev := nextEvent(t, events)
		if ev.Kind == Heartbeat {
			beats++ // at most polls answered before Close
			continue
		}
		if ev.Kind != Finished || ev.Err != "stopped" {
			t.Fatalf("event = %+v, want Finished stopped", ev)
		}
		break
	}
	if beats > int(rj.polls.Load()) {
		t.Errorf("%d heartbeats for %d answered polls", beats, rj.polls.Load())
	}
}

func TestLookupField(t *testing.T) {
	t.Parallel()
	doc, err := decodeJSON([]byte(`{"a": {"b": [10, {"c": "x"}], "n": null, "f": 1.50, "t": true}}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want string
		ok   bool
	}{
		{"a.b.0", "10", true}, {"a.b.1.c", "x", true}, {"a.f", "1.50", true}, {"a.t", "true", true},
		{"a.b.2", "", false}, {"a.b.x", "", false}, {"a.z", "", false}, {"a.b.1.c.d", "", false},
	}
	for _, tt := range tests {
		v, ok := lookupField(doc, tt.path)
		got, _ := scalarString(v)
		if ok != tt.ok || got != tt.want {
			t.Errorf("lookupField(%q) = %q, %v; want %q, %v", tt.path, got, ok, tt.want, tt.ok)
		}
	}
	if v, ok := lookupField(doc, "a.n"); !ok || v != nil {
		t.Errorf("a.n = %v, %v; want a present null", v, ok)
	}
	if _, err := decodeJSON([]byte(`{} {}`)); err == nil {
		t.Error("two documents decoded as one")
	}
}

// TestHTTPLogIsCapped: an http task's log is capped by Job.MaxLogBytes as
// a process's output is: the head and the tail are kept, with the marker
// between them, however large the logged response body.
func TestHTTPLogIsCapped(t *testing.T) {
	body := string(seqOutput(1, 3000))
	srv := serve(t, reply(200, body))
	job := newHTTPJob(t, HTTPJob{Method: "GET", URL: srv.URL})
	job.MaxLogBytes = 1024
	if fin := runHTTP(t, job); !fin.OK {
		t.Fatalf("Finished = %+v, want success", fin)
	}
	got, err := os.ReadFile(job.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	_, tail := splitCap(job.MaxLogBytes)
	if !strings.HasPrefix(string(got), "orkwal http: GET ") || !strings.Contains(string(got), "bytes of output omitted") ||
		!strings.HasSuffix(string(got), body[len(body)-int(tail):]) {
		t.Fatalf("log (%d bytes) does not keep the head, the marker and the body's last %d bytes:\n%s", len(got), tail, got)
	}
	if max := job.MaxLogBytes + int64(len(logMarker(1<<20, 1<<20, 1<<20))); int64(len(got)) > max {
		t.Fatalf("log is %d bytes, over the cap %d and its marker", len(got), job.MaxLogBytes)
	}
	if _, err := os.Stat(job.LogPath + tailSuffix); !os.IsNotExist(err) {
		t.Fatalf("the ring sidecar is left: %v", err)
	}
}

// TestHTTPLogBodyWaitsForTheLogFile: a response body is handed to a capped
// log in pieces, so that while the log file is being created the log keeps
// at most one piece past its early bound in memory, not the whole body.
func TestHTTPLogBodyWaitsForTheLogFile(t *testing.T) {
	c, path, release := delayedLog(t)
	l := httpLog{w: c, done: c.finish}
	body := seqOutput(1, 100000) // about 590 KB
	done := make(chan struct{})
	go func() { l.body(body); close(done) }()
	var early int
	for deadline := time.Now().Add(10 * time.Second); early == 0; runtime.Gosched() {
		early = c.earlyBytes()
		if time.Now().After(deadline) {
			t.Fatal("the body never reached the log")
		}
	}
	if early > maxEarly+copyBufSize {
		t.Fatalf("%d bytes of the body held in memory while the log is created, want at most %d", early, maxEarly+copyBufSize)
	}
	release()
	<-done
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	checkCappedLog(t, path, "", body, 1<<20)
}

package executors

import (
	"encoding/hex"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

var traceparentRE = regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`)

func TestTraceparentFormat(t *testing.T) {
	t.Parallel()
	const run = "0192f3a4-5b6c-7d8e-9f00-112233445566"
	tp := Traceparent(run, run+":build", 2)
	if !traceparentRE.MatchString(tp) {
		t.Fatalf("Traceparent = %q, not 00-<32 hex>-<16 hex>-01", tp)
	}
	if got, want := tp[3:35], strings.ReplaceAll(run, "-", ""); got != want {
		t.Errorf("trace id = %s, want the run id's bytes %s", got, want)
	}
	span := AttemptSpanID(run+":build", 2)
	if got := tp[36:52]; got != hex.EncodeToString(span[:]) {
		t.Errorf("span id = %s, want AttemptSpanID's %x", got, span)
	}
	if again := Traceparent(run, run+":build", 2); again != tp {
		t.Errorf("not deterministic: %q then %q", tp, again)
	}
	others := []string{Traceparent(run, run+":build", 1), Traceparent(run, run+":test", 2),
		"00-" + tp[3:35] + "-" + hex.EncodeToString(func() []byte { s := RunSpanID(run); return s[:] }()) + "-01"}
	for _, o := range others {
		if o[36:52] == tp[36:52] {
			t.Errorf("span id %s shared by %q and %q", tp[36:52], tp, o)
		}
	}
	// A run id that is not a UUID still gets a valid, stable trace id.
	for _, id := range []string{"nightly-42", "", "0192f3a4-5b6c-7d8e-9f00-1122334455667"} {
		tp := Traceparent(id, id+":t", 1)
		if !traceparentRE.MatchString(tp) || tp[3:35] == strings.Repeat("0", 32) {
			t.Errorf("Traceparent(%q) = %q, not valid", id, tp)
		}
		if TraceID(id) != TraceID(id) {
			t.Errorf("TraceID(%q) not deterministic", id)
		}
	}
}

func TestBuildEnvTraceparent(t *testing.T) {
	t.Parallel()
	job := Job{RunID: "0192f3a4-5b6c-7d8e-9f00-112233445566", TaskID: "0192f3a4-5b6c-7d8e-9f00-112233445566:a",
		Attempt: 3, ParallelCount: 1}
	values := func(env []string) []string {
		var out []string
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "TRACEPARENT="); ok {
				out = append(out, v)
			}
		}
		return out
	}
	base := []string{"TRACEPARENT=00-daemon", "A=1"}
	if got, want := values(buildEnv(base, job, attemptFiles{})), []string{traceparentOf(job)}; !slices.Equal(got, want) {
		t.Errorf("TRACEPARENT = %q, want only the attempt's %q (not the daemon's)", got, want)
	}
	job.Env = map[string]string{"TRACEPARENT": "00-own"}
	if got := values(buildEnv(base, job, attemptFiles{})); !slices.Equal(got, []string{"00-own"}) {
		t.Errorf("TRACEPARENT = %q, want only the task's own", got)
	}
}

func TestHTTPTraceparentHeader(t *testing.T) {
	t.Parallel()
	rj := &remoteJob{script: []string{"RUNNING", "SUCCEEDED"}}
	var mu sync.Mutex
	var seen []string
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.Header.Get("traceparent"))
		mu.Unlock()
		rj.ServeHTTP(w, r)
	})
	job := asyncJob(t, srv)
	_, events := startHTTP(t, NewHTTP(HTTPConfig{}), job)
	for ev := nextEvent(t, events); ev.Kind != Finished; ev = nextEvent(t, events) {
	}
	mu.Lock()
	got := slices.Clone(seen)
	mu.Unlock()
	tp := Traceparent(job.RunID, job.TaskID, job.Attempt)
	want := []string{"POST " + tp, "GET " + tp, "GET " + tp}
	if !slices.Equal(got, want) {
		t.Errorf("requests = %q, want the start and both polls with traceparent %q", got, want)
	}

	// A task that sets its own traceparent keeps it.
	mu.Lock()
	seen = nil
	mu.Unlock()
	job = asyncJob(t, srv)
	job.HTTP.Headers["Traceparent"] = "00-own"
	rj.polls.Store(1)
	_, events = startHTTP(t, NewHTTP(HTTPConfig{}), job)
	for ev := nextEvent(t, events); ev.Kind != Finished; ev = nextEvent(t, events) {
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Errorf("requests = %q, want a start and a poll", seen)
	}
	for _, s := range seen {
		if !strings.HasSuffix(s, " 00-own") {
			t.Errorf("request %q, want the task's own traceparent", s)
		}
	}
}

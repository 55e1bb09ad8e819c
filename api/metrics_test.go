package api

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/wal"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

var (
	sampleRE = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*\})? (\S+)$`)
	helpRE   = regexp.MustCompile(`^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) .+$`)
)

// scrape GETs /metrics, checks every line is of the text format, and returns
// the samples by their name and labels as written.
func (f *fixture) scrape() map[string]float64 {
	f.t.Helper()
	code, body := f.do("GET", "/metrics", "")
	if code != 200 {
		f.t.Fatalf("metrics: %d %s", code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	if _, err := parser.TextToMetricFamilies(strings.NewReader(body)); err != nil {
		f.t.Fatalf("the Prometheus text parser refuses /metrics: %v\n%s", err, body)
	}
	out := map[string]float64{}
	typed := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		if m := helpRE.FindStringSubmatch(line); m != nil {
			if m[1] == "TYPE" {
				typed[m[2]] = strings.Fields(line)[3]
			}
			continue
		}
		m := sampleRE.FindStringSubmatch(line)
		if m == nil {
			f.t.Fatalf("not a sample line: %q", line)
		}
		family := m[1]
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base := strings.TrimSuffix(family, suffix); base != family && (typed[base] == "histogram" || typed[base] == "summary") {
				family = base
			}
		}
		if typed[family] == "" {
			f.t.Fatalf("sample %q before its TYPE", line)
		}
		v, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			f.t.Fatalf("value of %q: %v", line, err)
		}
		key := m[1] + m[2]
		if _, dup := out[key]; dup {
			f.t.Fatalf("sample %s twice", key)
		}
		out[key] = v
	}
	return out
}

func TestMetrics(t *testing.T) {
	f := newFixture(t)
	marker := filepath.Join(t.TempDir(), "fixed")
	f.put("name: ok\ntasks:\n  a: {executor: noop}\n  b: {executor: noop, depends_on: [a]}\n")
	f.put("name: fix\ntasks:\n  a: {command: 'test -f " + marker + "'}\n  b: {executor: noop, depends_on: [a]}\n")
	f.waitRun(f.trigger("ok"))
	broken := f.trigger("fix")
	f.waitRun(broken)
	f.do("GET", "/runs/nope", "")
	f.do("PUT", "/runs", "")

	m := f.scrape()
	want := map[string]float64{
		`orkwal_runs{status="success"}`:  1,
		`orkwal_runs{status="failed"}`:   1,
		`orkwal_runs{status="running"}`:  0,
		`orkwal_tasks{status="success"}`: 2,
		`orkwal_tasks{status="failed"}`:  1,
		`orkwal_tasks{status="skipped"}`: 1,
		`orkwal_workflows`:               2,
		`orkwal_wal_failed`:              0,
		`orkwal_log_followers`:           0,
		`orkwal_http_requests_total{route="POST /workflows/{name}/runs",code="201"}`:                 2,
		`orkwal_http_requests_total{route="POST /workflows",code="201"}`:                             2,
		`orkwal_http_requests_total{route="GET /runs/{id}",code="400"}`:                              1,
		`orkwal_http_requests_total{route="unmatched",code="405"}`:                                   1,
		`orkwal_http_request_duration_seconds_count{route="POST /workflows/{name}/runs"}`:            2,
		`orkwal_http_request_duration_seconds_bucket{route="POST /workflows/{name}/runs",le="+Inf"}`: 2,
	}
	for k, v := range want {
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	// Buckets are cumulative.
	prev := 0.0
	for _, le := range durationBuckets {
		v := m[`orkwal_http_request_duration_seconds_bucket{route="POST /workflows/{name}/runs",le="`+formatFloat(le)+`"}`]
		if v < prev {
			t.Fatalf("bucket le=%v: %v < %v", le, v, prev)
		}
		prev = v
	}

	// A retried run's counts are taken again (the cache of finished runs).
	os.WriteFile(marker, nil, 0o644)
	if code, body := f.do("POST", "/runs/"+broken+"/retry", ""); code != 200 {
		t.Fatalf("retry: %d %s", code, body)
	}
	f.waitRun(broken)
	m = f.scrape()
	if m[`orkwal_runs{status="success"}`] != 2 || m[`orkwal_tasks{status="success"}`] != 4 || m[`orkwal_tasks{status="failed"}`] != 0 {
		t.Fatalf("after the retry: runs %v tasks success %v failed %v", m[`orkwal_runs{status="success"}`],
			m[`orkwal_tasks{status="success"}`], m[`orkwal_tasks{status="failed"}`])
	}
}

func TestMetricsWALFailed(t *testing.T) {
	var broken atomic.Bool
	eng, err := engine.Open(engine.Config{DataDir: t.TempDir(), Logger: quiet,
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
	a := New(eng, quiet, WithToken("t"))
	srv := httptest.NewServer(a)
	t.Cleanup(func() { srv.Close(); eng.Close() })
	f := &fixture{t: t, eng: eng, srv: srv, api: a, token: "t"}
	broken.Store(true)
	f.do("POST", "/workflows", dag)
	if m := f.scrape(); m["orkwal_wal_failed"] != 1 {
		t.Fatalf("orkwal_wal_failed %v, want 1", m["orkwal_wal_failed"])
	}
	// /healthz tells the reason to the holder of the token only.
	f.token = ""
	if code, body := f.do("GET", "/healthz", ""); code != 503 || strings.Contains(body, "injected") {
		t.Fatalf("healthz without the token: %d %s", code, body)
	}
	f.token = "t"
	if code, body := f.do("GET", "/healthz", ""); code != 503 || !strings.Contains(body, "injected I/O error") {
		t.Fatalf("healthz with the token: %d %s", code, body)
	}
}

// syncBuffer is a bytes.Buffer safe for the handler and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestAccessLogAtDebug(t *testing.T) {
	var buf syncBuffer
	f := newFixture(t)
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := httptest.NewServer(New(f.eng, logger))
	defer srv.Close()
	f.srv = srv
	f.do("GET", "/runs?limit=5", "")
	f.do("GET", "/runs/nope", "")
	log := buf.String()
	for _, want := range []string{`"msg":"http request"`, `"method":"GET"`, `"path":"/runs"`, `"route":"GET /runs"`,
		`"status":200`, `"route":"GET /runs/{id}"`, `"status":400`, `"duration_ms":`, `"remote":"127.0.0.1:`} {
		if !strings.Contains(log, want) {
			t.Errorf("access log lacks %s:\n%s", want, log)
		}
	}
	// At info, nothing.
	var quietBuf syncBuffer
	srv2 := httptest.NewServer(New(f.eng, slog.New(slog.NewJSONHandler(&quietBuf, nil))))
	defer srv2.Close()
	f.srv = srv2
	f.do("GET", "/runs", "")
	if quietBuf.String() != "" {
		t.Fatalf("access log at info: %s", quietBuf.String())
	}
}

// TestEngineMetrics: after a run, /metrics carries the engine's histograms
// and gauges with values that moved.
func TestEngineMetrics(t *testing.T) {
	f := newFixture(t)
	f.put(dag)
	f.waitRun(f.trigger("dag"))
	_, body := f.do("GET", "/metrics", "")
	for _, want := range []string{
		"orkwal_dispatch_latency_seconds_count 3",
		"orkwal_task_duration_seconds_count 3",
		"# TYPE orkwal_wal_fsync_seconds histogram",
		`orkwal_wal_fsync_seconds_bucket{le="+Inf"}`,
		"orkwal_compactions_total 0",
		"orkwal_tasks_in_flight 0",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(body, "orkwal_wal_bytes 0\n") {
		t.Error("orkwal_wal_bytes is 0 after writes")
	}
}

// TestProcessMetrics: /metrics has the process and Go runtime metrics every
// exporter has, under client_golang's names, with values that are this
// process's.
func TestProcessMetrics(t *testing.T) {
	f := newFixture(t)
	got := f.scrape()
	now := float64(time.Now().Unix())
	checks := []struct {
		name   string
		lo, hi float64
	}{
		{"process_resident_memory_bytes", 1 << 20, 1 << 40},
		{"process_virtual_memory_bytes", 1 << 20, 1 << 50},
		{"process_cpu_seconds_total", 1e-6, 1e6},
		{"process_open_fds", 3, got["process_max_fds"]},
		{"process_max_fds", 3, 1 << 40},
		{"process_start_time_seconds", now - 3600, now + 1},
		{"go_goroutines", 1, 1e6},
		{"go_threads", 1, 1e6},
		{"go_memstats_heap_alloc_bytes", 1, 1 << 40},
		{"go_memstats_sys_bytes", 1 << 20, 1 << 40},
		{"go_gc_duration_seconds_count", 0, 1e9},
		{`go_gc_duration_seconds{quantile="0.5"}`, 0, 60},
		{`go_info{version="` + runtime.Version() + `"}`, 1, 1},
	}
	for _, c := range checks {
		v, ok := got[c.name]
		if !ok || v < c.lo || v > c.hi {
			t.Errorf("%s = %v (present %v), want within [%v, %v]", c.name, v, ok, c.lo, c.hi)
		}
	}
}

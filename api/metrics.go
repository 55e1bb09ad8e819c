package api

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orkwal/orkwal/engine"
)

// GET /metrics: the Prometheus text exposition format (version 0.0.4),
// written by hand.
//
// The engine's and the WAL's own metrics (dispatch latency, task
// durations, WAL write and fsync latency, WAL and snapshot bytes,
// compactions, recoveries) come from engine.Stats.

// durationBuckets are the upper bounds of the request duration histogram.
var durationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

var taskStatuses = []string{"pending", "dispatched", "running", "success", "failed", "skipped", "cancelled"}

type reqKey struct {
	route string
	code  int
}

type histogram struct {
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	count  uint64
}

type metrics struct {
	mu        sync.Mutex
	requests  map[reqKey]uint64
	durations map[string]*histogram // by route
	followers atomic.Int64
}

// counter is a counter of the process that embeds the API, shown in
// /metrics (WithCounter).
type counter struct {
	name, help string
	read       func() int64
}

// WithCounter adds the counter name, read by read (which must be cheap and
// safe from any goroutine), to /metrics.
func WithCounter(name, help string, read func() int64) Option {
	return func(s *Server) { s.counters = append(s.counters, counter{name, help, read}) }
}

func newMetrics() *metrics {
	return &metrics{requests: map[reqKey]uint64{}, durations: map[string]*histogram{}}
}

func (m *metrics) request(route string, code int, d time.Duration) {
	secs := d.Seconds()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[reqKey{route, code}]++
	h := m.durations[route]
	if h == nil {
		h = &histogram{counts: make([]uint64, len(durationBuckets)+1)}
		m.durations[route] = h
	}
	i := sort.SearchFloat64s(durationBuckets, secs) // the first bound >= secs
	h.counts[i]++
	h.sum += secs
	h.count++
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriter(w)
	s.writeMetrics(bw)
	bw.Flush()
}

// writeMetrics costs O(1) in the number of runs and tasks: their counts
// are kept by the engine (engine.Stats).
func (s *Server) writeMetrics(w io.Writer) {
	st := s.eng.Stats()
	family(w, "orkwal_runs", "gauge", "Runs by status.")
	for _, status := range runStatuses {
		sample(w, "orkwal_runs", labels("status", status), float64(st.Runs[status]))
	}
	family(w, "orkwal_tasks", "gauge", "Tasks of all runs by status (a fan-out counts as itself and as each instance).")
	for _, status := range taskStatuses {
		sample(w, "orkwal_tasks", labels("status", status), float64(st.Tasks[status]))
	}
	family(w, "orkwal_workflows", "gauge", "Workflows recorded.")
	sample(w, "orkwal_workflows", "", float64(st.Workflows))
	walFailed := 0.0
	if s.eng.Err() != nil {
		walFailed = 1
	}
	family(w, "orkwal_wal_failed", "gauge", "1 once the write-ahead log failed and the daemon refuses writes (fail-stop), else 0.")
	sample(w, "orkwal_wal_failed", "", walFailed)
	writeFolderMetrics(w, s.eng)
	family(w, "orkwal_log_followers", "gauge", "Log streams (logs?follow=1) being served.")
	sample(w, "orkwal_log_followers", "", float64(s.metrics.followers.Load()))
	family(w, "orkwal_log_followers_max", "gauge", "The most log streams served at once; more answer 429.")
	sample(w, "orkwal_log_followers_max", "", float64(s.maxFollowers))
	writeProcessMetrics(w)
	writeEngineMetrics(w, st)
	for _, c := range s.counters {
		family(w, c.name, "counter", c.help)
		sample(w, c.name, "", float64(c.read()))
	}

	m := s.metrics
	m.mu.Lock()
	keys := make([]reqKey, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].route != keys[j].route {
			return keys[i].route < keys[j].route
		}
		return keys[i].code < keys[j].code
	})
	family(w, "orkwal_http_requests_total", "counter", "HTTP requests by route (the endpoint's pattern) and status code.")
	for _, k := range keys {
		sample(w, "orkwal_http_requests_total", labels("route", k.route, "code", strconv.Itoa(k.code)), float64(m.requests[k]))
	}
	routes := make([]string, 0, len(m.durations))
	for r := range m.durations {
		routes = append(routes, r)
	}
	sort.Strings(routes)
	family(w, "orkwal_http_request_duration_seconds", "histogram", "HTTP request durations by route (a log stream counts its whole length).")
	for _, route := range routes {
		h := m.durations[route]
		var cum uint64
		for i, c := range h.counts {
			cum += c
			le := "+Inf"
			if i < len(durationBuckets) {
				le = formatFloat(durationBuckets[i])
			}
			sample(w, "orkwal_http_request_duration_seconds_bucket", labels("route", route, "le", le), float64(cum))
		}
		sample(w, "orkwal_http_request_duration_seconds_sum", labels("route", route), h.sum)
		sample(w, "orkwal_http_request_duration_seconds_count", labels("route", route), float64(h.count))
	}
	m.mu.Unlock()
}

func family(w io.Writer, name, typ, help string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, escapeHelp(help), name, typ)
}

func sample(w io.Writer, name, labels string, v float64) {
	fmt.Fprintf(w, "%s%s %s\n", name, labels, formatFloat(v))
}

// labels formats {k1="v1",k2="v2"} from key, value pairs.
func labels(kv ...string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(kv[i])
		b.WriteString(`="`)
		b.WriteString(escapeLabel(kv[i+1]))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// writeEngineMetrics exports the engine's and the WAL's own metrics.
func writeEngineMetrics(w io.Writer, st engine.Stats) {
	writeHistogram(w, "orkwal_dispatch_latency_seconds", "From a task being due (dependencies done, not_before passed) to its dispatch.", st.DispatchLatency)
	writeHistogram(w, "orkwal_task_duration_seconds", "Task attempts, from dispatch to their end.", st.TaskDuration)
	writeHistogram(w, "orkwal_wal_write_seconds", "Handing a WAL frame to the file.", st.WALWrite)
	writeHistogram(w, "orkwal_wal_fsync_seconds", "fsync of a WAL segment (one per commit).", st.WALSync)
	gauges := []struct {
		name, typ, help string
		v               float64
	}{
		{"orkwal_wal_bytes", "gauge", "Bytes of the WAL's segment files.", float64(st.WALBytes)},
		{"orkwal_snapshot_bytes", "gauge", "Bytes of the newest snapshot.", float64(st.SnapshotBytes)},
		{"orkwal_snapshot_index", "gauge", "WAL index of the newest snapshot.", float64(st.SnapshotIndex)},
		{"orkwal_engine_turns_total", "counter", "Turns of the engine loop (each commits at most one WAL frame).", float64(st.Turns)},
		{"orkwal_compactions_total", "counter", "Snapshots written (and the log truncated) since boot.", float64(st.Compactions)},
		{"orkwal_disk_full_recoveries_total", "counter", "In-process recoveries of the WAL after a full disk.", float64(st.DiskRecoveries)},
		{"orkwal_boot_torn_tail_bytes", "gauge", "Bytes of torn WAL tail cut at boot (the trace of a crash during a write).", float64(st.BootCutBytes)},
		{"orkwal_tasks_in_flight", "gauge", "Task attempts dispatched or running.", float64(st.TasksInFlight)},
		{"orkwal_executor_slots_in_use", "gauge", "Executor slots held by running attempts (at most --max-concurrent).", float64(st.SlotsInUse)},
		{"orkwal_tasks_dispatched_ahead", "gauge", "Attempts dispatched ahead (durable, prepared), waiting for an executor slot.", float64(st.TasksAhead)},
		{"orkwal_tasks_ready", "gauge", "Pending tasks whose dependencies are done.", float64(st.TasksReady)},
		{"orkwal_alerts_raised_total", "counter", "Alerts raised since boot (a run's end, a retry, an SLA, a summary).", float64(st.AlertsRaised)},
		{"orkwal_alerts_sent_total", "counter", "Alert deliveries accepted by their target since boot.", float64(st.AlertsSent)},
		{"orkwal_alerts_failed_total", "counter", "Alert delivery attempts that failed since boot (each is retried until the give-up time).", float64(st.AlertsFailed)},
		{"orkwal_alerts_given_up_total", "counter", "Alert deliveries given up since boot.", float64(st.AlertsGivenUp)},
		{"orkwal_alerts_throttled_total", "counter", "Alert deliveries held back by a target's storm limit since boot (told in a summary).", float64(st.AlertsThrottled)},
		{"orkwal_pending_runs", "gauge", "Runs accepted and not finished (pending or running): what admission control bounds.", float64(st.PendingRuns)},
		{"orkwal_pending_runs_limit", "gauge", "The bound on pending runs (--max-pending-runs); a trigger beyond it answers 429.", float64(st.MaxPendingRuns)},
		{"orkwal_pending_runs_per_workflow_limit", "gauge", "The bound on one workflow's pending runs (--max-pending-runs-per-workflow).", float64(st.MaxPendingRunsPerWorkflow)},
		{"orkwal_runs_refused_total", "counter", "New runs refused by admission control: triggers and retries answered 429, cron fires skipped.", float64(st.RunsRefused)},
	}
	for _, g := range gauges {
		family(w, g.name, g.typ, g.help)
		sample(w, g.name, "", g.v)
	}
	family(w, "orkwal_workflow_pending_runs", "gauge", "Pending runs of each workflow that has any (bounded by --max-pending-runs-per-workflow).")
	for _, wf := range slices.Sorted(maps.Keys(st.PendingRunsByWorkflow)) {
		sample(w, "orkwal_workflow_pending_runs", labels("workflow", wf), float64(st.PendingRunsByWorkflow[wf]))
	}
}

func writeHistogram(w io.Writer, name, help string, h *engine.Histogram) {
	family(w, name, "histogram", help)
	cum, sum, count := h.Snapshot()
	for i, c := range cum {
		le := "+Inf"
		if i < len(engine.LatencyBuckets) {
			le = formatFloat(engine.LatencyBuckets[i])
		}
		sample(w, name+"_bucket", labels("le", le), float64(c))
	}
	sample(w, name+"_sum", "", sum)
	sample(w, name+"_count", "", float64(count))
}

// writeFolderMetrics says whether the --workflows folder's last load was
// recorded (absent without a folder).
func writeFolderMetrics(w io.Writer, eng *engine.Engine) {
	st, ok := eng.FolderStatus()
	if !ok {
		return
	}
	loaded := 0.0
	if st.OK {
		loaded = 1
	}
	family(w, "orkwal_workflows_folder_loaded", "gauge", "1 when the last load of the --workflows folder was recorded, 0 when a bad file kept the whole folder out (see /healthz).")
	sample(w, "orkwal_workflows_folder_loaded", "", loaded)
	family(w, "orkwal_workflows_folder_problems", "gauge", "Problems (bad files, names defined twice) of the last load of the --workflows folder.")
	sample(w, "orkwal_workflows_folder_problems", "", float64(len(st.Problems)))
}

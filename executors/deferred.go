package executors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Deferred tracks the jobs a task handed to the scheduler (Ork's
// deferrables): a python task whose output is a JSON object with a
// non-empty "deferred" list of job descriptors ends its process, and the
// engine starts a Deferred job for the same attempt with that output. It
// polls every descriptor until all are done, then reports Finished with
// the output; the first job that fails fails the attempt. No process runs
// meanwhile: one goroutine per deferring attempt, asleep between rounds.
//
// A descriptor is a JSON object with a "service_type" (docs/format.md,
// "Deferred jobs"): "custom_http" (Ork's CustomHttp: url, method, headers,
// status_field, success_value, failure_value; the mock://success… and
// mock://failed… URLs of Ork's examples end at once), "bigquery",
// "cloudrun" or "dataproc" (see deferred_gcp.go).
type Deferred struct {
	cfg DeferredConfig
}

// DeferredConfig configures Deferred.
type DeferredConfig struct {
	// PollInterval is the wait between two rounds of polls (default
	// DefaultDeferredPoll, Ork's triggerer's).
	PollInterval time.Duration
	// Client makes the polls (default: a client with a 30 s timeout).
	Client *http.Client
	// Google is how the bigquery, cloudrun and dataproc jobs are polled.
	Google GoogleConfig
	Logger *slog.Logger
}

// DefaultDeferredPoll is the default wait between two rounds of polls.
const DefaultDeferredPoll = 10 * time.Second

// maxPollErrors in a row on one job fail the attempt: a poll that cannot
// be made or read (refused, not JSON, no status field) is retried at the
// next round until then.
const maxPollErrors = 5

// DeferredJob is set for a deferring attempt's Job.
type DeferredJob struct {
	// Output is what the task returned: reported as the attempt's output
	// once every job is done, its "deferred" list included (Ork's
	// example declares it in the task's output_type).
	Output []byte
	// Owned: the attempt started these jobs itself (executor cloudrun),
	// so a stop other than a shutdown (StopShutdown) cancels them, and
	// its success has no output (as Ork's cloudrun executor).
	Owned bool
}

// NewDeferred returns a Deferred with cfg's defaults filled.
func NewDeferred(cfg DeferredConfig) *Deferred {
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultDeferredPoll
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Google = cfg.Google.withDefaults(cfg.Client)
	return &Deferred{cfg: cfg}
}

// DefersWork reports whether output hands work to the scheduler: a JSON
// object whose "deferred" is a non-empty list.
func DefersWork(output []byte) bool {
	if !bytes.Contains(output, []byte(`"deferred"`)) {
		return false // the common case costs no decoding
	}
	var doc deferringOutput
	return json.Unmarshal(output, &doc) == nil && len(doc.Deferred) > 0
}

// deferringOutput is what a deferring task's output holds for Deferred.
type deferringOutput struct {
	Deferred []json.RawMessage `json:"deferred"`
}

// jobStatus is what one poll learned of a deferred job.
type jobStatus uint8

const (
	jobRunning jobStatus = iota
	jobDone
	jobFailed
)

// tracker polls one kind of deferred job.
type tracker interface {
	// poll asks for the job's status; msg says why it failed. An error is
	// a poll that could not be made or read, tried again next round.
	poll(ctx context.Context) (status jobStatus, msg string, err error)
	// String names the job in the log and in errors.
	String() string
}

// Start validates job's descriptors and starts polling them.
func (d *Deferred) Start(job Job, report func(Event)) (Handle, error) {
	if job.Deferred == nil {
		return nil, errors.New("deferred: no output to track")
	}
	jobs, err := d.trackers(job.Deferred.Output)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &deferredRun{d: d, job: job, report: report, jobs: jobs, ctx: ctx, cancel: cancel}
	go r.run()
	return r, nil
}

// trackers reads every descriptor of output; a bad one is an error naming
// its position.
func (d *Deferred) trackers(output []byte) ([]tracker, error) {
	var doc deferringOutput
	if err := json.Unmarshal(output, &doc); err != nil {
		return nil, fmt.Errorf("deferred: the output is not an object with a deferred list: %w", err)
	}
	jobs := make([]tracker, 0, len(doc.Deferred))
	for i, raw := range doc.Deferred {
		t, err := d.tracker(raw)
		if err != nil {
			return nil, fmt.Errorf("deferred[%d]: %w", i, err)
		}
		jobs = append(jobs, t)
	}
	return jobs, nil
}

// descriptor is the union of the fields of Ork's deferrables' JSON.
type descriptor struct {
	Service      string         `json:"service_type"`
	JobID        string         `json:"job_id"`
	URL          string         `json:"url"`
	Method       string         `json:"method"`
	Headers      map[string]any `json:"headers"`
	StatusField  string         `json:"status_field"`
	SuccessValue string         `json:"success_value"`
	FailureValue *string        `json:"failure_value"`
	Project      string         `json:"project"`
	Location     string         `json:"location"`
	Region       string         `json:"region"`
	JobName      string         `json:"job_name"`
	ExecutionID  string         `json:"execution_id"`
	ClusterName  string         `json:"cluster_name"`
}

func (d *Deferred) tracker(raw json.RawMessage) (tracker, error) {
	var desc descriptor
	if err := json.Unmarshal(raw, &desc); err != nil {
		return nil, fmt.Errorf("not a deferrable descriptor (a JSON object): %w", err)
	}
	switch desc.Service {
	case "custom_http":
		return newHTTPTracker(d.cfg.Client, &desc)
	case "bigquery", "cloudrun", "dataproc":
		return newGoogleTracker(d.cfg.Client, d.cfg.Google, &desc)
	case "":
		return nil, errors.New("service_type missing (custom_http, bigquery, cloudrun or dataproc)")
	}
	return nil, fmt.Errorf("service_type %q: not one of custom_http, bigquery, cloudrun, dataproc", desc.Service)
}

// deferredRun is one attempt's polling.
type deferredRun struct {
	d      *Deferred
	job    Job
	report func(Event)
	jobs   []tracker
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	reason string // the first Stop's
}

func (r *deferredRun) Stop(_ time.Duration, reason string) {
	r.mu.Lock()
	if r.reason == "" {
		r.reason = reason
	}
	r.mu.Unlock()
	r.cancel()
}

// run polls every pending job each round until all are done, one fails,
// or the attempt is stopped; then reports Finished.
func (r *deferredRun) run() {
	pending := r.jobs
	errs := make([]int, len(pending))
	tick := time.NewTimer(0)
	defer tick.Stop()
	for len(pending) > 0 {
		select {
		case <-r.ctx.Done():
			reason := r.stopReason()
			if r.job.Deferred.Owned && reason != StopShutdown {
				cancelJobs(pending, r.logf)
			}
			r.finish(false, reason)
			return
		case <-tick.C:
		}
		var failed string
		pending, errs, failed = r.round(pending, errs)
		if failed != "" {
			r.finish(false, failed)
			return
		}
		if len(pending) > 0 {
			r.report(Event{Kind: Heartbeat, TaskID: r.job.TaskID, Attempt: r.job.Attempt, At: time.Now(), Status: "deferred"})
			tick.Reset(r.d.cfg.PollInterval)
		}
	}
	r.finish(true, "")
}

// round polls each pending job once and returns those still pending (and
// their errors in a row), or why the attempt fails.
func (r *deferredRun) round(pending []tracker, errs []int) ([]tracker, []int, string) {
	var left []tracker
	var leftErrs []int
	for i, j := range pending {
		status, msg, err := j.poll(r.ctx)
		switch {
		case r.ctx.Err() != nil:
			return pending, errs, ""
		case err != nil:
			errs[i]++
			r.logf("deferred job %s: poll %d of %d failed: %v", j, errs[i], maxPollErrors, err)
			if errs[i] >= maxPollErrors {
				return nil, nil, fmt.Sprintf("deferred job %s: %d polls in a row failed: %v", j, errs[i], err)
			}
		case status == jobFailed:
			r.logf("deferred job %s failed: %s", j, msg)
			return nil, nil, fmt.Sprintf("deferred job %s failed: %s", j, msg)
		case status == jobDone:
			r.logf("deferred job %s done", j)
			continue
		default:
			errs[i] = 0
		}
		left, leftErrs = append(left, j), append(leftErrs, errs[i])
	}
	return left, leftErrs, ""
}

func (r *deferredRun) stopReason() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reason
}

func (r *deferredRun) finish(ok bool, reason string) {
	ev := Event{Kind: Finished, TaskID: r.job.TaskID, Attempt: r.job.Attempt, At: time.Now(), OK: ok}
	if ok && !r.job.Deferred.Owned {
		ev.Output = r.job.Deferred.Output
	} else if !ok {
		ev.ExitCode, ev.Err = -1, reason
		r.logf("[orkwal: %s]", reason)
	}
	r.report(ev)
}

func (r *deferredRun) logf(format string, args ...any) {
	appendLog(r.job.LogPath, r.d.cfg.Logger, format, args...)
}

// appendLog appends a line to an attempt's log at path (best effort: the
// log says what the polling of remote work saw, the outcome is in the
// Finished event).
func appendLog(path string, logger *slog.Logger, format string, args ...any) {
	if path == "" {
		return
	}
	os.MkdirAll(filepath.Dir(path), 0o755)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		logger.Warn("could not write the attempt's log", "log", path, "err", err)
		return
	}
	defer f.Close()
	fmt.Fprintf(f, format+"\n", args...)
}

// canceller is a tracker whose job can be cancelled.
type canceller interface {
	cancel(ctx context.Context) error
}

// cancelTimeout bounds the cancel of one job.
const cancelTimeout = 30 * time.Second

// cancelJobs asks each job that can be cancelled to end, saying in the
// log (logf) whether it was.
func cancelJobs(jobs []tracker, logf func(string, ...any)) {
	for _, j := range jobs {
		c, ok := j.(canceller)
		if !ok {
			continue
		}
		ctx, done := context.WithTimeout(context.Background(), cancelTimeout)
		if err := c.cancel(ctx); err != nil {
			logf("could not cancel %s (it may still run): %v", j, err)
		} else {
			logf("cancelled %s", j)
		}
		done()
	}
}

// httpTracker is Ork's custom_http: a request whose JSON answer has a
// status field; success_value ends the job, failure_value fails it, a
// non-2xx answer fails it too.
type httpTracker struct {
	client  *http.Client
	url     string
	method  string
	headers map[string]string
	field   string
	success string
	failure *string
}

func newHTTPTracker(client *http.Client, d *descriptor) (tracker, error) {
	if d.URL == "" {
		return nil, errors.New("custom_http: url missing")
	}
	t := &httpTracker{client: client, url: d.URL, method: strings.ToUpper(d.Method), headers: map[string]string{},
		field: d.StatusField, success: d.SuccessValue, failure: d.FailureValue}
	if t.method == "" {
		t.method = http.MethodGet
	}
	switch t.method {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete:
	default:
		return nil, fmt.Errorf("custom_http: method %q: use GET, POST, PUT or DELETE", d.Method)
	}
	if t.field == "" {
		t.field = "status"
	}
	if t.success == "" {
		t.success = "success"
	}
	for k, v := range d.Headers {
		if s, ok := v.(string); ok {
			t.headers[k] = s
		}
	}
	if strings.HasPrefix(t.url, "mock://") {
		return t, nil
	}
	if _, err := parseHTTPURL(t.url); err != nil {
		return nil, fmt.Errorf("custom_http: %w", err)
	}
	return t, nil
}

func (t *httpTracker) String() string { return "custom_http " + t.url }

func (t *httpTracker) poll(ctx context.Context) (jobStatus, string, error) {
	if state, ok := strings.CutPrefix(t.url, "mock://"); ok {
		switch {
		case strings.HasPrefix(state, "success"):
			return jobDone, "", nil
		case strings.HasPrefix(state, "failed"):
			return jobFailed, "mock job failed", nil
		}
		return jobRunning, "", nil // as Ork: any other mock job runs for good
	}
	req, err := http.NewRequestWithContext(ctx, t.method, t.url, nil)
	if err != nil {
		return 0, "", err
	}
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	var doc map[string]any
	code, err := doJSON(t.client, req, &doc)
	if err != nil {
		return 0, "", err
	}
	if code/100 != 2 {
		msg, _ := doc["error"].(string)
		return jobFailed, fmt.Sprintf("status %d: %s", code, msg), nil
	}
	value, ok := doc[t.field].(string)
	switch {
	case !ok:
		return 0, "", fmt.Errorf("the answer has no string field %q", t.field)
	case value == t.success:
		return jobDone, "", nil
	case t.failure != nil && value == *t.failure:
		return jobFailed, fmt.Sprintf("%s is %q", t.field, value), nil
	}
	return jobRunning, "", nil
}

// doJSON makes req and decodes its JSON answer (at most 1 MiB) into v; it
// returns the answer's status code.
func doJSON(client *http.Client, req *http.Request, v any) (int, error) {
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, fmt.Errorf("read the answer: %w", err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return resp.StatusCode, fmt.Errorf("the answer (status %d) is not JSON: %w", resp.StatusCode, err)
	}
	return resp.StatusCode, nil
}

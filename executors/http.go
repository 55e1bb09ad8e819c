package executors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// HTTPJob is an HTTP request to make (executor: http). Synchronous by
// default: the task is the one request. With Async, the request starts
// remote work whose status is then polled until it ends.
type HTTPJob struct {
	Method string // "" = GET
	URL    string // http or https
	// Headers are sent with the request and with every status poll. Their
	// values are never logged (they may hold credentials); their names are.
	// A redirect to another host (not the URL's host or a subdomain of
	// it), or from https to http, drops them.
	// A Body that is valid JSON gets Content-Type: application/json unless
	// Headers set one.
	Headers map[string]string
	Body    []byte // already templated by the engine; nil = none
	// Timeout bounds the whole request, from connecting to reading the
	// body; 0 = DefaultHTTPTimeout.
	Timeout time.Duration
	Async   *HTTPAsync // nil = synchronous
}

// HTTPAsync says how to follow remote work started by an HTTPJob. The start
// response names the work: either IDField gives its id, put into StatusURL
// in place of "{id}" (as is: it is not escaped), or StatusURLField gives the
// status URL itself (a relative one is resolved against the start URL). A
// status URL from the response must be on the start URL's host or a
// subdomain of it, and not leave https: the polls carry the job's headers.
// Fields are dotted paths into a JSON document ("name", "execution.id",
// "conditions.0.state": numbers index arrays).
type HTTPAsync struct {
	StatusURL      string
	IDField        string
	StatusURLField string
	// StatusField is the path of the status in a poll response. Its value
	// (a string, or a number or boolean in JSON notation) is compared to
	// Success and Failure; a missing or null status is "" (still running).
	StatusField string
	Success     []string // terminal values: the task succeeded
	Failure     []string // terminal values: the task failed
	// PollInterval is the time between polls (GET StatusURL, with
	// Headers); 0 = DefaultPollInterval.
	PollInterval time.Duration
	// PollTimeout bounds each poll request; 0 = HTTPJob.Timeout.
	PollTimeout time.Duration
}

// Defaults of HTTPJob and HTTPAsync.
const (
	DefaultHTTPTimeout  = 30 * time.Second
	DefaultPollInterval = 2 * time.Second
)

const (
	// defaultMaxBody caps the response bodies read when Job.MaxOutputBytes
	// is 0.
	defaultMaxBody = 16 << 20
	// errBodyBytes is how much of a non-2xx body goes into Finished.Err.
	errBodyBytes = 200
)

// errStopped is the reason of a job ended by Handle.Stop.
var errStopped = errors.New("stopped")

// HTTPConfig configures an HTTP executor. The zero value is usable.
type HTTPConfig struct {
	// Client makes the requests; nil = a client on http.DefaultTransport.
	// Its own Timeout, if any, applies on top of the job's.
	Client *http.Client
	// Logger gets a warning when a task's log could not be completed
	// (default slog.Default()).
	Logger *slog.Logger
}

// HTTP runs HTTPJobs. Each job runs in a goroutine of its own:
//
//   - Synchronous: Started (PID 0) as the request is sent; Finished OK for a
//     2xx response, whose body is the Output (as is when it is JSON, else as
//     a JSON string; an empty body gives no output). A non-2xx response
//     fails with Err "HTTP <code>: <start of the body>"; a network error or
//     timeout fails with its reason.
//   - Async: the start request as above, then Started (RemoteID = the id or
//     status URL) once its 2xx response named the work, then a poll of the
//     status URL every PollInterval. A poll whose status is in Success ends
//     the job OK (Output = the poll's body), one in Failure ends it failed;
//     any other status reports a Heartbeat (Status = the value). A poll
//     that fails (network error, non-2xx, not JSON) is logged and retried
//     at the next tick, without a Heartbeat: the engine judges staleness.
//
// Every request is logged to Job.LogPath as one line (method, URL with query
// values redacted, header names, status, size, time) followed by the
// response body; polls log one line each, and their body only when it ends
// the job. The log is capped by Job.MaxLogBytes as a process's output is
// (see cappedLog). Finished.ExitCode is 0 on success, 1 on failure and -1 when
// stopped. Handle.Stop cancels the request or poll in flight and ends the job
// with Finished{OK: false, Err: "stopped"}; it ignores its grace.
type HTTP struct {
	client *http.Client
	logger *slog.Logger
	// observePoll, when set (by tests), is called after each poll with
	// its failure (nil for a successful poll).
	observePoll func(error)
}

// NewHTTP returns an HTTP executor, filling the defaults of cfg.
func NewHTTP(cfg HTTPConfig) *HTTP {
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &HTTP{client: cfg.Client, logger: cfg.Logger}
}

// Start checks job.HTTP and opens the log, then runs the job in a goroutine
// that reports its events. Start itself reports nothing.
func (e *HTTP) Start(job Job, report func(Event)) (Handle, error) {
	target, err := checkHTTPJob(job.HTTP)
	if err != nil {
		return nil, fmt.Errorf("start task %s: %w", job.TaskID, err)
	}
	log, err := openHTTPLog(job)
	if err != nil {
		return nil, fmt.Errorf("start task %s: %w", job.TaskID, prepFailed(err))
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &httpHandle{cancel: cancel}
	r := &httpRun{
		exec: e, job: job, spec: job.HTTP, target: target, ctx: ctx,
		handle: h, report: report, log: log,
	}
	r.client = r.newClient()
	go r.run()
	return h, nil
}

// checkHTTPJob validates spec and returns its parsed URL.
func checkHTTPJob(spec *HTTPJob) (*url.URL, error) {
	if spec == nil {
		return nil, errors.New("no http task (Job.HTTP is nil)")
	}
	u, err := parseHTTPURL(spec.URL)
	if err != nil {
		return nil, err
	}
	if spec.Async != nil {
		if err := checkAsync(spec.Async); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// parseHTTPURL parses an absolute http or https URL.
func parseHTTPURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("url %q: not an absolute http or https URL", redactURL(u))
	}
	return u, nil
}

// checkAsync validates the async settings.
func checkAsync(a *HTTPAsync) error {
	switch {
	case (a.StatusURL == "") == (a.StatusURLField == ""):
		return errors.New("async: set exactly one of status_url and status_url_field")
	case strings.Contains(a.StatusURL, "{id}") && a.IDField == "":
		return errors.New("async: status_url has {id} but no id_field is set")
	case a.StatusField == "":
		return errors.New("async: no status_field")
	case len(a.Success) == 0:
		return errors.New("async: no success values")
	}
	return nil
}

// httpHandle is the Handle of an HTTP job.
type httpHandle struct {
	cancel  context.CancelFunc
	stopped atomic.Bool
	reason  atomic.Pointer[string] // of the first Stop
}

// Stop cancels what is in flight; the job then finishes as stopped.
func (h *httpHandle) Stop(_ time.Duration, reason string) {
	h.reason.CompareAndSwap(nil, &reason)
	h.stopped.Store(true)
	h.cancel()
}

// httpRun is one HTTP job in progress. Only its goroutine uses it.
type httpRun struct {
	exec   *HTTP
	job    Job
	spec   *HTTPJob
	target *url.URL
	ctx    context.Context // cancelled by Stop
	handle *httpHandle
	report func(Event)
	log    httpLog
	client *http.Client // the executor's, with the job's redirect rule: see newClient
}

// run performs the job and reports its Finished event, last.
func (r *httpRun) run() {
	var err error
	var out []byte
	if r.spec.Async == nil {
		out, err = r.sync()
	} else {
		out, err = r.async()
	}
	if err != nil && r.handle.stopped.Load() {
		out, err = nil, errStopped
		if reason := r.handle.reason.Load(); reason != nil {
			r.log.note(stopNote(*reason, false))
		}
	}
	if lerr := r.log.close(); lerr != nil {
		r.exec.logger.Warn("task log incomplete", "task", r.job.TaskID, "attempt", r.job.Attempt, "log", r.job.LogPath, "err", lerr)
	}
	r.finish(out, err)
	r.handle.cancel() // release the context; Stop from now on does nothing
}

// finish reports Finished: OK when err is nil.
func (r *httpRun) finish(out []byte, err error) {
	ev := r.event(Finished)
	ev.Output = out
	switch {
	case err == nil:
		ev.OK = true
	case errors.Is(err, errStopped):
		ev.ExitCode, ev.Err = -1, err.Error()
	default:
		ev.ExitCode, ev.Err = 1, err.Error()
	}
	r.report(ev)
}

// event returns an event of kind about the job, stamped now.
func (r *httpRun) event(kind EventKind) Event {
	return Event{Kind: kind, TaskID: r.job.TaskID, Attempt: r.job.Attempt, At: time.Now()}
}

// sync makes the one request and returns its output.
func (r *httpRun) sync() ([]byte, error) {
	r.report(r.event(Started))
	x := r.start()
	if err := x.failure(); err != nil {
		return nil, err
	}
	return bodyOutput(x.body, r.job.MaxOutputBytes)
}

// start makes the job's request and logs it with its response body.
func (r *httpRun) start() *exchange {
	method := r.spec.Method
	if method == "" {
		method = http.MethodGet
	}
	x := r.do(method, r.target, r.spec.Body, orDefault(r.spec.Timeout, DefaultHTTPTimeout))
	r.log.line("%s%s", x.summary(), headerNames(r.spec.Headers))
	r.log.body(x.body)
	return x
}

// bodyOutput turns a 2xx body into the job's output: the body if it is
// JSON, else the body as a JSON string; nil for an empty body.
func bodyOutput(body []byte, maxBytes int64) ([]byte, error) {
	out := bytes.TrimSpace(body)
	if len(out) == 0 {
		return nil, nil
	}
	if !json.Valid(out) {
		out = jsonString(body)
	}
	if maxBytes > 0 && int64(len(out)) > maxBytes {
		return nil, fmt.Errorf("output larger than %d bytes", maxBytes)
	}
	return out, nil
}

// orDefault returns d, or def when d is not positive.
func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// maxBody is the cap on the response bodies read for the job.
func (r *httpRun) maxBody() int64 {
	if r.job.MaxOutputBytes > 0 {
		return r.job.MaxOutputBytes
	}
	return defaultMaxBody
}

// do makes one request bounded by timeout (and by Stop) and reads its
// response body, at most maxBody bytes of it.
func (r *httpRun) do(method string, u *url.URL, body []byte, timeout time.Duration) *exchange {
	x := &exchange{method: method, url: redactURL(u)}
	ctx, cancel := context.WithTimeout(r.ctx, timeout)
	defer cancel()
	began := time.Now()
	defer func() { x.elapsed = time.Since(began) }()
	req, err := r.newRequest(ctx, method, u, body)
	if err != nil {
		x.err = err
		return x
	}
	resp, err := r.client.Do(req)
	if err != nil {
		x.err = r.transportError(ctx, err, timeout)
		return x
	}
	defer resp.Body.Close()
	x.code, x.status = resp.StatusCode, resp.Status
	x.body, x.tooLarge, err = readLimited(resp.Body, r.maxBody())
	if err != nil {
		x.err = fmt.Errorf("read response: %w", r.transportError(ctx, err, timeout))
	}
	return x
}

// newClient is the executor's client, except that a redirect to a host the
// job's headers may not go to (see headersMayGo) drops them: they may
// hold credentials (an X-Api-Key), and net/http drops only Authorization
// and cookies on its own.
func (r *httpRun) newClient() *http.Client {
	c := *r.exec.client
	next := c.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if next != nil {
			if err := next(req, via); err != nil {
				return err
			}
		} else if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		if !headersMayGo(via[0].URL, req.URL) {
			for k := range r.spec.Headers {
				req.Header.Del(k)
			}
		}
		return nil
	}
	return &c
}

// headersMayGo reports whether the job's headers, given for a request to
// from, may be sent to to: its host is from's or a subdomain of it (the
// rule net/http applies to Authorization on a redirect), and it does not
// leave https for http.
func headersMayGo(from, to *url.URL) bool {
	if from.Scheme == "https" && to.Scheme != "https" {
		return false
	}
	parent, sub := strings.ToLower(from.Hostname()), strings.ToLower(to.Hostname())
	if sub == parent {
		return true
	}
	if net.ParseIP(sub) != nil || net.ParseIP(parent) != nil {
		return false
	}
	return strings.HasSuffix(sub, "."+parent)
}

// newRequest builds a request with the job's headers.
func (r *httpRun) newRequest(ctx context.Context, method string, u *url.URL, body []byte) (*http.Request, error) {
	var rd io.Reader
	if len(body) > 0 {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	for k, v := range r.spec.Headers {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if req.Header.Get(TraceparentHeader) == "" {
		req.Header.Set(TraceparentHeader, traceparentOf(r.job))
	}
	if len(body) > 0 && req.Header.Get("Content-Type") == "" && json.Valid(body) {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// transportError turns an error of a request (or of reading its body) into
// a reason: stopped, a timeout, or the cause without the URL (which may
// hold secrets in its query; the exchange names the URL redacted).
func (r *httpRun) transportError(ctx context.Context, err error, timeout time.Duration) error {
	if r.ctx.Err() != nil {
		return errStopped
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("timed out after %v", timeout)
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return urlErr.Err
	}
	return err
}

// readLimited reads r to its end, keeping at most max bytes; tooLarge
// reports that there was more.
func readLimited(r io.Reader, max int64) (data []byte, tooLarge bool, err error) {
	data, err = io.ReadAll(io.LimitReader(r, max+1))
	if int64(len(data)) > max {
		return data[:max], true, err
	}
	return data, false, err
}

package executors

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// CloudRun runs a task as an execution of a Cloud Run job (Ork's
// executor cloudrun), through the Cloud Run Admin API v2 with the
// Application Default Credentials (google.go). Start makes one call,
// jobs.run (POST /v2/projects/P/locations/R/jobs/J:run), whose answer, a
// long-running Operation, names the execution it started in its
// metadata. The attempt then ends deferring its work: its Finished event
// is OK with an output whose "deferred" list holds one cloudrun
// descriptor naming that execution, which the engine records
// (task_deferred) before Deferred polls the execution (executions.get)
// until it ends. From there on the wait is the deferrables' (see
// Deferred): no goroutine of this executor is left, a restart resumes
// the polling of the same execution, and a stop other than a shutdown
// (StopShutdown) cancels it (executions.cancel), since the attempt's job
// is marked Owned.
//
// A crash after jobs.run answered and before task_deferred is durable
// loses the execution's name: the attempt runs again and starts another
// execution (at-least-once, as every task; the execution's environment
// carries the task's id and attempt so that a job can tell).
type CloudRun struct {
	cfg CloudRunConfig
}

// CloudRunConfig configures CloudRun.
type CloudRunConfig struct {
	// Project and Region are those of a task whose job is a name alone
	// and that names none (Ork takes them from the workflow's creation).
	Project, Region string
	// Google is how the API is reached (BaseURL: tests).
	Google GoogleConfig
	// Client makes the calls (default: a client with a 30 s timeout).
	Client *http.Client
	Logger *slog.Logger
}

// CloudRunJob is set for a cloudrun task's Job: its job's project, region
// and name ("" project or region: the executor's).
type CloudRunJob struct {
	Project, Region, Job string
}

// NewCloudRun returns a CloudRun with cfg's defaults filled.
func NewCloudRun(cfg CloudRunConfig) *CloudRun {
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Google = cfg.Google.withDefaults(cfg.Client)
	return &CloudRun{cfg: cfg}
}

// Start checks the job's names and starts its execution.
func (c *CloudRun) Start(job Job, report func(Event)) (Handle, error) {
	if job.CloudRun == nil {
		return nil, errors.New("cloudrun: no job")
	}
	j := *job.CloudRun
	j.Project, j.Region = cmp.Or(j.Project, c.cfg.Project), cmp.Or(j.Region, c.cfg.Region)
	switch {
	case j.Project == "":
		return nil, fmt.Errorf("cloudrun: job %s has no project: set the task's project, or the daemon's --cloudrun-project", j.Job)
	case j.Region == "":
		return nil, fmt.Errorf("cloudrun: job %s has no region: set the task's region, or the daemon's --cloudrun-region", j.Job)
	}
	body, err := json.Marshal(runJobRequest(job))
	if err != nil {
		return nil, fmt.Errorf("cloudrun: %w", err)
	}
	s := &cloudRunStart{c: c, job: job, report: report, body: body,
		name: "projects/" + j.Project + "/locations/" + j.Region + "/jobs/" + j.Job}
	go s.run()
	return s, nil
}

// cloudRunStart is one attempt's jobs.run call.
type cloudRunStart struct {
	c      *CloudRun
	job    Job
	report func(Event)
	body   []byte
	name   string // the job's full name

	mu     sync.Mutex
	reason string // the first Stop's
}

// Stop does not abort the call: the execution it may start must be known
// to be cancelled. Once it is, a stop other than a shutdown cancels it.
func (s *cloudRunStart) Stop(_ time.Duration, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reason == "" {
		s.reason = reason
	}
}

func (s *cloudRunStart) stopReason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

func (s *cloudRunStart) run() {
	exec, err := s.start(context.Background())
	if err != nil {
		s.fail(err.Error())
		return
	}
	s.logf("cloudrun: started execution %s", exec)
	s.report(Event{Kind: Started, TaskID: s.job.TaskID, Attempt: s.job.Attempt, At: time.Now(), RemoteID: exec})
	if reason := s.stopReason(); reason != "" && reason != StopShutdown {
		t := s.tracker(exec)
		cancelJobs([]tracker{t}, s.logf)
		s.fail(reason)
		return
	}
	s.report(Event{Kind: Finished, TaskID: s.job.TaskID, Attempt: s.job.Attempt, At: time.Now(), OK: true,
		Output: deferredExecution(exec)})
}

// start calls jobs.run and returns the name of the execution started.
func (s *cloudRunStart) start(ctx context.Context) (string, error) {
	base := cmp.Or(s.c.cfg.Google.BaseURL, "https://run.googleapis.com")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v2/"+escapeName(s.name)+":run", bytes.NewReader(s.body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if err := s.c.cfg.Google.Tokens.authorize(req); err != nil {
		return "", fmt.Errorf("cloudrun: run %s: %w", s.name, err)
	}
	var op operation
	code, err := doJSON(s.c.cfg.Client, req, &op)
	switch {
	case err != nil:
		return "", fmt.Errorf("cloudrun: run %s: %w", s.name, err)
	case code/100 != 2:
		return "", fmt.Errorf("cloudrun: run %s: status %d: %s", s.name, code, op.Error.Message)
	case op.Done && op.Error.Message != "":
		return "", fmt.Errorf("cloudrun: run %s: %s", s.name, op.Error.Message)
	case !strings.HasPrefix(op.Metadata.Name, s.name+"/executions/"):
		return "", fmt.Errorf("cloudrun: run %s: the answer (operation %q) names no execution of the job", s.name, op.Name)
	}
	return op.Metadata.Name, nil
}

// operation is what jobs.run answers: a long-running Operation whose
// metadata is the Execution started (or Google's error body, whose
// "error" has the same shape as a failed Operation's).
type operation struct {
	Name     string `json:"name"`
	Done     bool   `json:"done"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// tracker polls (and cancels) the execution named exec.
func (s *cloudRunStart) tracker(exec string) tracker {
	d := executionDescriptor(exec)
	t, _ := newGoogleTracker(s.c.cfg.Client, s.c.cfg.Google, &d)
	return t
}

func (s *cloudRunStart) fail(reason string) {
	s.logf("[orkwal: %s]", reason)
	s.report(Event{Kind: Finished, TaskID: s.job.TaskID, Attempt: s.job.Attempt, At: time.Now(), ExitCode: -1, Err: reason})
}

func (s *cloudRunStart) logf(format string, args ...any) {
	appendLog(s.job.LogPath, s.c.cfg.Logger, format, args...)
}

// runJobRequest is jobs.run's body: Ork's overrides, one task with the
// task contract's variables (as a process task has them, but for the
// paths of ORKWAL_INPUT and ORKWAL_OUTPUT, which name local files), then
// the task's env, as the container's environment.
func runJobRequest(job Job) map[string]any {
	var env []map[string]string
	seen := map[string]int{}
	add := func(name, value string) {
		if i, ok := seen[name]; ok {
			env[i]["value"] = value // a later layer wins
			return
		}
		seen[name] = len(env)
		env = append(env, map[string]string{"name": name, "value": value})
	}
	for _, kv := range contractEnv(job, "", "") {
		name, value, _ := strings.Cut(kv, "=")
		if name != "ORKWAL_INPUT" && name != "ORKWAL_OUTPUT" {
			add(name, value)
		}
	}
	add("TRACEPARENT", traceparentOf(job))
	for _, k := range sortedKeys(job.Env) {
		add(k, job.Env[k])
	}
	return map[string]any{"overrides": map[string]any{
		"containerOverrides": []any{map[string]any{"env": env}},
		"taskCount":          1,
	}}
}

// executionDescriptor is the deferred job of an execution's full name,
// projects/P/locations/R/jobs/J/executions/E.
func executionDescriptor(exec string) descriptor {
	p := strings.Split(exec, "/")
	d := descriptor{Service: "cloudrun"}
	if len(p) == 8 {
		d.Project, d.Region, d.JobName, d.ExecutionID = p[1], p[3], p[5], p[7]
	}
	return d
}

// deferredExecution is the output of an attempt that started exec: a
// deferred list of one cloudrun descriptor.
func deferredExecution(exec string) []byte {
	d := executionDescriptor(exec)
	b, _ := json.Marshal(map[string]any{"deferred": []any{map[string]string{"service_type": "cloudrun",
		"project": d.Project, "region": d.Region, "job_name": d.JobName, "execution_id": d.ExecutionID}}})
	return b
}

// escapeName escapes each segment of a resource name.
func escapeName(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// Package workflow is the workflow file format: the Spec types that a run pins,
// and Parse, which turns a YAML file into a validated Spec.
//
// Invariants:
//   - A Spec returned by Parse is runnable: every dependency names a task of
//     the same workflow, the dependency graph has no cycle, every command is
//     non-empty, every name uses the safe charset.
//   - Parse never panics and rejects what it cannot run, naming the file, the
//     key and the reason. Unknown keys are errors, never ignored.
//   - Spec values are immutable once parsed: runs share them by pointer.
package workflow

import (
	"encoding/json"
	"strings"
	"time"
)

// Spec is one version of a workflow, as parsed from its file.
type Spec struct {
	Name        string            `msgpack:"name" json:"name"`
	Description string            `msgpack:"description,omitempty" json:"description,omitempty"`
	Params      map[string]string `msgpack:"params,omitempty" json:"params,omitempty"` // defaults, overridable at trigger time
	// Tasks in a deterministic order: topological, ties broken by the order
	// in which they appear in the file. Task creation order follows it.
	Tasks []*Task `msgpack:"tasks" json:"tasks"`
	// Dir is the folder of the workflow file, used to resolve relative paths
	// (workdir). Empty when the workflow came through the API.
	Dir string `msgpack:"dir,omitempty" json:"dir,omitempty"`
	// MaxActiveRuns caps this workflow's runs in progress at once; later
	// runs stay pending, in creation order. 0 = no cap.
	MaxActiveRuns int `msgpack:"max_active_runs,omitempty" json:"max_active_runs,omitempty"`
	// Schedule, when set, runs the workflow on a cron.
	Schedule *Schedule `msgpack:"schedule,omitempty" json:"schedule,omitempty"`
	// Python is the default interpreter of python tasks ("" = python3).
	Python string `msgpack:"python,omitempty" json:"python,omitempty"`
	// Types are named types for python tasks' input_type/output_type, each
	// a JSON type description (see executors/python_types.go).
	Types map[string][]byte `msgpack:"types,omitempty" json:"types,omitempty"`
	// Alerts are told about this workflow's runs (alerts.go); the daemon's
	// default targets are told too.
	Alerts []*Alert `msgpack:"alerts,omitempty" json:"alerts,omitempty"`
	// SLA: a run still not finished this long after it was created raises
	// one sla alert. 0 = none.
	SLA time.Duration `msgpack:"sla,omitempty" json:"sla,omitempty"`
}

// Canonical is the spec's canonical encoding, the same for equal specs:
// JSON, whose encoder sorts the keys of every map. (msgpack's
// SetSortMapKeys sorts only maps of strings and of interfaces: inputs and
// types came out in Go's random map order.)
func (s *Spec) Canonical() ([]byte, error) { return json.Marshal(s) }

// Task is one node of the DAG.
type Task struct {
	Name     string `msgpack:"name" json:"name"`
	Executor string `msgpack:"executor" json:"executor"` // "process" (default) or "noop"
	// Command is the argv. A YAML string becomes ["sh", "-c", string].
	Command   []string          `msgpack:"command,omitempty" json:"command,omitempty"`
	Env       map[string]string `msgpack:"env,omitempty" json:"env,omitempty"`
	Workdir   string            `msgpack:"workdir,omitempty" json:"workdir,omitempty"` // absolute after Parse when Dir is set
	DependsOn []string          `msgpack:"depends_on,omitempty" json:"depends_on,omitempty"`

	// Failure handling.
	Retries          int           `msgpack:"retries,omitempty" json:"retries,omitempty"`             // extra attempts after a failure
	RetryBackoff     *Backoff      `msgpack:"retry_backoff,omitempty" json:"retry_backoff,omitempty"` // nil = DefaultBackoff
	Timeout          time.Duration `msgpack:"timeout,omitempty" json:"timeout,omitempty"`             // 0 = none
	HeartbeatTimeout time.Duration `msgpack:"heartbeat_timeout,omitempty" json:"heartbeat_timeout,omitempty"`
	StartTimeout     time.Duration `msgpack:"start_timeout,omitempty" json:"start_timeout,omitempty"`
	OnFailure        string        `msgpack:"on_failure,omitempty" json:"on_failure,omitempty"`     // "" (skip) or "run"
	OnInterrupt      string        `msgpack:"on_interrupt,omitempty" json:"on_interrupt,omitempty"` // "" (rerun) or "fail"

	// Inputs are resolved when the task is dispatched and given to it in
	// ORKWAL_INPUT under "inputs".
	Inputs map[string]Input `msgpack:"inputs,omitempty" json:"inputs,omitempty"`

	// Fan-out: at most one of Parallel, ParallelFrom and Foreach is set.
	Parallel     int    `msgpack:"parallel,omitempty" json:"parallel,omitempty"`           // a fixed number of instances
	ParallelFrom string `msgpack:"parallel_from,omitempty" json:"parallel_from,omitempty"` // "task.field": a count in an upstream output
	Foreach      string `msgpack:"foreach,omitempty" json:"foreach,omitempty"`             // "task.field": one instance per item
	Concurrency  int    `msgpack:"concurrency,omitempty" json:"concurrency,omitempty"`     // instances in flight at once; 0 = no cap

	// Python executor (Ork-compatible): a function of a file (absolute after
	// Parse when the workflow has a folder) or a module.
	File       string `msgpack:"file,omitempty" json:"file,omitempty"`
	Module     string `msgpack:"module,omitempty" json:"module,omitempty"`
	Function   string `msgpack:"function,omitempty" json:"function,omitempty"`
	Python     string `msgpack:"python,omitempty" json:"python,omitempty"`           // interpreter; "" = the workflow's, or python3
	InputType  []byte `msgpack:"input_type,omitempty" json:"input_type,omitempty"`   // a JSON type description
	OutputType []byte `msgpack:"output_type,omitempty" json:"output_type,omitempty"` // a JSON type description
	// CheckTypes: the values are checked against InputType and OutputType
	// while the task runs (python and library tasks), and a mismatch fails
	// it; otherwise a mismatch is a warning line in the task's log. The
	// task's check_types, or the workflow's; default false (Ork checks
	// types only when the file loads).
	CheckTypes bool `msgpack:"check_types,omitempty" json:"check_types,omitempty"`

	// HTTP executor.
	HTTP *HTTPSpec `msgpack:"http,omitempty" json:"http,omitempty"`
	// Cloud Run executor (Ork's cloudrun).
	CloudRun *CloudRunSpec `msgpack:"cloudrun,omitempty" json:"cloudrun,omitempty"`

	// Gates.
	Mutex    string        `msgpack:"mutex,omitempty" json:"mutex,omitempty"` // key template, e.g. "db-{{params.db}}"
	Priority int           `msgpack:"priority,omitempty" json:"priority,omitempty"`
	Delay    time.Duration `msgpack:"delay,omitempty" json:"delay,omitempty"` // wait this long after becoming ready
}

// HTTPSpec is an http task. URL, header values and Body are templates:
// {{params.NAME}}, {{inputs.NAME}} and ${env:NAME} are filled at dispatch
// (env values are never stored or logged).
type HTTPSpec struct {
	Method         string            `msgpack:"method,omitempty" json:"method,omitempty"`
	URL            string            `msgpack:"url" json:"url"`
	Headers        map[string]string `msgpack:"headers,omitempty" json:"headers,omitempty"`
	Body           string            `msgpack:"body,omitempty" json:"body,omitempty"`
	RequestTimeout time.Duration     `msgpack:"request_timeout,omitempty" json:"request_timeout,omitempty"`
	Async          *HTTPAsyncSpec    `msgpack:"async,omitempty" json:"async,omitempty"`
}

// CloudRunSpec is a cloudrun task: an execution of a Cloud Run job. Job
// is Ork's job (a name, or projects/P/locations/L/jobs/J); Project and
// Region are orkwal's, for a job given by name ("" = the daemon's).
type CloudRunSpec struct {
	Job     string `msgpack:"job" json:"job"`
	Project string `msgpack:"project,omitempty" json:"project,omitempty"`
	Region  string `msgpack:"region,omitempty" json:"region,omitempty"`
}

// HTTPAsyncSpec follows remote work started by an http task until its
// status field reaches a terminal value.
type HTTPAsyncSpec struct {
	StatusURL      string        `msgpack:"status_url,omitempty" json:"status_url,omitempty"` // template; "{id}" is the started work's id
	IDField        string        `msgpack:"id_field,omitempty" json:"id_field,omitempty"`
	StatusURLField string        `msgpack:"status_url_field,omitempty" json:"status_url_field,omitempty"`
	StatusField    string        `msgpack:"status_field" json:"status_field"`
	Success        []string      `msgpack:"success" json:"success"`
	Failure        []string      `msgpack:"failure,omitempty" json:"failure,omitempty"`
	PollInterval   time.Duration `msgpack:"poll_interval,omitempty" json:"poll_interval,omitempty"`
	PollTimeout    time.Duration `msgpack:"poll_timeout,omitempty" json:"poll_timeout,omitempty"`
}

// Backoff is the wait before retry n (from 1): Initial × Factor^(n-1),
// capped at Max.
type Backoff struct {
	Initial time.Duration `msgpack:"initial" json:"initial"`
	Max     time.Duration `msgpack:"max" json:"max"`
	Factor  float64       `msgpack:"factor" json:"factor"`
}

// DefaultBackoff: exponential from 1 s, doubling, capped at 5 min.
var DefaultBackoff = Backoff{Initial: time.Second, Max: 5 * time.Minute, Factor: 2}

// Delay returns the wait before retry n (n ≥ 1).
func (b Backoff) Delay(n int) time.Duration {
	d := float64(b.Initial)
	for i := 1; i < n && d < float64(b.Max); i++ {
		d *= b.Factor
	}
	return time.Duration(min(d, float64(b.Max)))
}

// Jittered returns Delay(n) × (1 − jitter). A jitter outside [0, 1) (a
// corrupt or hostile record) leaves the delay whole.
func (b Backoff) Jittered(n int, jitter float64) time.Duration {
	d := b.Delay(n)
	if !(jitter > 0 && jitter < 1) {
		return d
	}
	return time.Duration(float64(d) * (1 - jitter))
}

// Input is one named input: a constant, or a reference to an upstream
// task's output (Ref "tasks.<name>.output" or a field path below it).
type Input struct {
	Const []byte `msgpack:"const,omitempty" json:"const,omitempty"` // a JSON value
	Ref   string `msgpack:"ref,omitempty" json:"ref,omitempty"`
}

// RefTask returns the task an input refers to and the field path below its
// output ("tasks.up.output.a.b" gives "up", ["a", "b"]).
func (in Input) RefTask() (string, []string) {
	parts := strings.Split(in.Ref, ".")
	if len(parts) < 3 {
		return "", nil
	}
	return parts[1], parts[3:]
}

// FanOutSource returns the upstream task and output field a dynamic fan-out
// reads ("discover.files" gives "discover", "files").
func (t *Task) FanOutSource() (task, field string) {
	src := t.ParallelFrom
	if src == "" {
		src = t.Foreach
	}
	task, field, _ = strings.Cut(src, ".")
	return task, field
}

// FansOut reports whether the task runs as several instances.
func (t *Task) FansOut() bool { return t.Parallel > 0 || t.ParallelFrom != "" || t.Foreach != "" }

// Lookup returns the task named name, or nil.
func (s *Spec) Lookup(name string) *Task {
	for _, t := range s.Tasks {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Schedule runs a workflow on a cron (robfig/cron/v3 syntax: five fields,
// descriptors such as @hourly or @every 30s, an optional CRON_TZ= prefix).
type Schedule struct {
	Cron    string `msgpack:"cron" json:"cron"`
	Catchup string `msgpack:"catchup,omitempty" json:"catchup,omitempty"` // none, latest (default), all
	Overlap string `msgpack:"overlap,omitempty" json:"overlap,omitempty"` // skip (default), allow, queue
}

package executors

import (
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// buildEnv returns the child's environment: base (the daemon's, less its
// TRACEPARENT), PWD when the task has its own workdir, the contract
// variables, TRACEPARENT (unless job.Env sets it), then job.Env in key
// order. exec.Cmd keeps the last value of a duplicated key, so each layer
// overrides the previous one and job.Env wins.
func buildEnv(base []string, job Job, files attemptFiles) []string {
	env := make([]string, 0, len(base)+contractVars+2+len(job.Env))
	for _, kv := range base {
		// The daemon's own trace context is not the task's.
		if !strings.HasPrefix(kv, "TRACEPARENT=") {
			env = append(env, kv)
		}
	}
	if job.Workdir != "" {
		// What exec.Cmd does by itself when Env is nil: keep PWD truthful.
		if wd, err := filepath.Abs(job.Workdir); err == nil {
			env = append(env, "PWD="+wd)
		}
	}
	env = appendContractEnv(env, job, files.input, files.output)
	if _, own := job.Env["TRACEPARENT"]; !own {
		env = append(env, "TRACEPARENT="+traceparentOf(job))
	}
	for _, k := range sortedKeys(job.Env) {
		env = append(env, k+"="+job.Env[k])
	}
	return env
}

// contractVars is the most variables appendContractEnv adds.
const contractVars = 26

// contractEnv returns the task-contract variables as KEY=VALUE: each under
// the ORKWAL_ prefix, the same again under ORK_ but for INPUT and OUTPUT
// (Ork has no such variables: its output is a line of stdout), then Ork's
// own (see appendOrkEnv).
func contractEnv(job Job, inputPath, outputPath string) []string {
	return appendContractEnv(nil, job, inputPath, outputPath)
}

// appendContractEnv appends contractEnv's variables to env, written into
// one buffer (one allocation for all of them, where a string each made
// about 26 per task start).
func appendContractEnv(env []string, job Job, inputPath, outputPath string) []string {
	vars := [...]struct {
		suffix, value string
		n             int  // the value, when isInt
		isInt, orkwal bool // orkwal: no ORK_ twin (Ork has no such variable)
	}{
		{suffix: "RUN_ID", value: job.RunID},
		{suffix: "TASK_ID", value: job.TaskID},
		{suffix: "TASK_NAME", value: job.TaskName},
		{suffix: "WORKFLOW", value: job.Workflow},
		{suffix: "ATTEMPT", n: job.Attempt, isInt: true},
		{suffix: "PARALLEL_INDEX", n: job.ParallelIndex, isInt: true},
		{suffix: "PARALLEL_COUNT", n: job.ParallelCount, isInt: true},
		{suffix: "INPUT", value: inputPath, orkwal: true},
		{suffix: "OUTPUT", value: outputPath, orkwal: true},
	}
	size := 256 + 2*(len(job.RunID)+len(job.TaskID)+len(job.TaskName)+len(job.Workflow)) + len(inputPath) + len(outputPath) +
		len(job.Ork.Inputs) + len(job.Ork.Command)
	b := envBuilder{buf: make([]byte, 0, size), env: env}
	for _, prefix := range [...]string{"ORKWAL_", "ORK_"} {
		for _, v := range vars {
			switch {
			case prefix == "ORK_" && v.orkwal:
			case v.isInt:
				b.addInt(prefix, v.suffix, int64(v.n))
			default:
				b.add(prefix, v.suffix, v.value)
			}
		}
	}
	appendOrkEnv(&b, job)
	return b.done()
}

// maxInputJSONEnv bounds ORK_INPUT_JSON: Linux refuses to start a program
// with one variable longer than 128 KiB (MAX_ARG_STRLEN). Larger inputs
// are read from ORKWAL_INPUT.
const maxInputJSONEnv = 128<<10 - len("ORK_INPUT_JSON=") - 1

// appendOrkEnv adds the variables Ork gives a task: ORK_WORKFLOW_NAME,
// ORK_INPUT_JSON (the resolved inputs), EXECUTION_ID (the attempt's
// identity) and the task's parameters under their own names.
func appendOrkEnv(b *envBuilder, job Job) {
	inputs := job.Ork.Inputs
	if len(inputs) == 0 {
		inputs = []byte("{}")
	}
	b.add("", "ORK_WORKFLOW_NAME", job.Workflow)
	if len(inputs) <= maxInputJSONEnv {
		b.start("", "ORK_INPUT_JSON")
		b.buf = append(b.buf, inputs...)
		b.end()
	}
	b.start("", "EXECUTION_ID")
	b.buf = strconv.AppendInt(append(append(b.buf, job.TaskID...), ':'), int64(job.Attempt), 10)
	b.end()
	b.addInt("", "task_index", int64(job.Ork.TaskIndex))
	b.add("", "task_name", job.TaskName)
	b.add("", "workflow_name", job.Workflow)
	b.add("", "run_id", job.RunID)
	b.addInt("", "max_retries", int64(job.Ork.MaxRetries))
	b.addInt("", "timeout_seconds", int64(job.Ork.Timeout/time.Second))
	if job.Ork.Command != "" {
		b.add("", "command", job.Ork.Command)
	}
}

// envBuilder writes KEY=VALUE variables into one buffer and makes them
// strings of it once done: the buffer is never written again, so the
// strings may share it.
type envBuilder struct {
	buf  []byte
	ends []int    // where each variable ends in buf; the next begins there
	env  []string // what done appends to
}

// start begins variable prefix+key; end closes it.
func (b *envBuilder) start(prefix, key string) {
	b.buf = append(append(append(b.buf, prefix...), key...), '=')
}

func (b *envBuilder) end() { b.ends = append(b.ends, len(b.buf)) }

func (b *envBuilder) add(prefix, key, value string) {
	b.start(prefix, key)
	b.buf = append(b.buf, value...)
	b.end()
}

func (b *envBuilder) addInt(prefix, key string, n int64) {
	b.start(prefix, key)
	b.buf = strconv.AppendInt(b.buf, n, 10)
	b.end()
}

// done appends the variables to the env it was given and returns it.
func (b *envBuilder) done() []string {
	if len(b.buf) == 0 {
		return b.env
	}
	all := unsafe.String(unsafe.SliceData(b.buf), len(b.buf))
	from := 0
	for _, to := range b.ends {
		b.env = append(b.env, all[from:to])
		from = to
	}
	return b.env
}

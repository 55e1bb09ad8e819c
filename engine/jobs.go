package engine

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
)

// taskInput is the JSON document a task reads from ORKWAL_INPUT.
type taskInput struct {
	Params   map[string]string          `json:"params"`
	Inputs   map[string]json.RawMessage `json:"inputs"`
	Upstream map[string]json.RawMessage `json:"upstream"`
	Item     json.RawMessage            `json:"item,omitempty"`
}

// emptyInput is the input document of a task without params, inputs,
// upstream tasks or item. Such jobs share it (Job.Input is read only):
// clipped, so that an append to it cannot write into it.
var emptyInput = slices.Clip([]byte(`{"params":{},"inputs":{},"upstream":{}}`))

// emptyObject is {}: the Ork inputs of a task without inputs, shared
// like emptyInput.
var emptyObject = slices.Clip([]byte(`{}`))

// noParams are the params of a run triggered without any: read only.
var noParams = map[string]string{}

// jobShared is what the jobs of many tasks share instead of a copy each
// (issue 27: the jobs of a large dispatch wait for the launcher, all
// prepared at once): the environment of the tasks placed in a folder
// (placeInFolder) with no env of their own (and emptyInput). Loop owned;
// what it hands out is read only.
type jobShared struct {
	folderEnvs map[string]map[string]string // folder → {PYTHONPATH: folder}
}

// folderEnv is the environment {PYTHONPATH: dir}, one map per folder.
func (j *jobShared) folderEnv(dir string) map[string]string {
	env, ok := j.folderEnvs[dir]
	if !ok {
		if j.folderEnvs == nil {
			j.folderEnvs = map[string]map[string]string{}
		}
		env = map[string]string{"PYTHONPATH": dir}
		j.folderEnvs[dir] = env
	}
	return env
}

// encode writes the input document. Outputs and items are JSON values
// validated when they were recorded, so they are copied as they are: a
// large upstream output given to many fan-out instances is not re-parsed
// for each (encoding/json would validate and compact every RawMessage).
func (in *taskInput) encode() []byte {
	if len(in.Params) == 0 && len(in.Inputs) == 0 && len(in.Upstream) == 0 && len(in.Item) == 0 {
		return emptyInput // most tasks' (issue 27: 3 allocations a dispatch)
	}
	b := make([]byte, 0, 256)
	b = append(b, `{"params":`...)
	if len(in.Params) == 0 {
		b = append(b, "{}"...)
	} else {
		params, _ := json.Marshal(in.Params) // a map of strings cannot fail
		b = append(b, params...)
	}
	b = appendRawMap(append(b, `,"inputs":`...), in.Inputs)
	b = appendRawMap(append(b, `,"upstream":`...), in.Upstream)
	if len(in.Item) > 0 {
		b = append(append(b, `,"item":`...), in.Item...)
	}
	return append(b, '}')
}

// appendRawMap appends {"key": raw, ...} with the keys sorted.
func appendRawMap(b []byte, m map[string]json.RawMessage) []byte {
	return appendObject(b, m, func(b []byte, raw json.RawMessage) []byte { return append(b, raw...) })
}

// prepare builds the executor job for a task just dispatched (under the
// lock). On the loop, at every dispatch: what a plain task's job shares
// with others (its input, its environment, its command) is not made again
// (issue 27).
func (e *Engine) prepare(t *replay.Task, now int64) *start {
	spec := t.Spec()
	run := t.Run
	key := t.Key()
	job := executors.Job{
		RunID: run.ID, TaskID: t.ID(), TaskName: t.Name, Workflow: run.Workflow,
		Attempt: t.Attempt, ParallelIndex: t.Instance, ParallelCount: t.Count,
		Command: spec.Command, Workdir: spec.Workdir,
		LogPath:        e.dirs.log(run.ID, key, t.Attempt),
		Scratch:        e.dirs.scratch(run.ID, key, t.Attempt),
		MaxOutputBytes: e.cfg.MaxOutputBytes,
		MaxLogBytes:    max(e.cfg.MaxLogBytes, 0),
	}
	err := e.jobs.fill(&job, t) // an empty input is emptyInput (taskInput.encode)
	return &start{
		att: &attempt{ref: replay.TaskRef{Run: run.ID, Task: t.Index}, taskID: job.TaskID, number: t.Attempt,
			spec: spec, hasScratch: spec.Executor != "noop" && spec.Executor != "cloudrun", dispatchedAt: now}, // they write no files
		ex:  e.cfg.Executors[spec.Executor],
		job: job,
		err: err,
	}
}

// fill resolves the task's input, its environment and its executor's
// part of the job. An error fails the attempt with that reason.
func (j *jobShared) fill(job *executors.Job, t *replay.Task) error {
	in, err := inputFor(t)
	if err != nil {
		return err
	}
	spec := t.Spec()
	if spec.Executor != "noop" { // noop never reads its input
		job.Input = in.encode()
		job.Ork = orkTask(spec, t.SpecIndex, in)
	}
	if job.Env, err = renderMap(spec.Env, in); err != nil {
		return fmt.Errorf("env %w", err)
	}
	job.Command = workflow.ExpandCommand(spec.Command, in.placeholder)
	j.placeInFolder(job, spec, t.Run.Spec.Dir)
	switch spec.Executor {
	case "python":
		job.Python = pythonJob(t)
	case "library":
		job.Python = libraryJob(t)
	case "http":
		job.HTTP, err = httpJob(spec.HTTP, in)
	case "cloudrun":
		project, region, name := spec.CloudRun.Parts()
		job.CloudRun = &executors.CloudRunJob{Project: project, Region: region, Job: name}
	}
	return err
}

// orkTask is the attempt in Ork's terms: the variables Ork's tasks read.
func orkTask(spec *workflow.Task, index int, in *taskInput) executors.OrkTask {
	ork := executors.OrkTask{Inputs: emptyObject, TaskIndex: index, MaxRetries: spec.Retries, Timeout: spec.Timeout}
	if len(in.Inputs) > 0 {
		ork.Inputs = appendRawMap(nil, in.Inputs)
	}
	if spec.Executor == "process" {
		ork.Command = commandText(spec.Command)
	}
	return ork
}

// commandText is a command as written: the string of `sh -c`, or the argv
// joined by spaces.
func commandText(argv []string) string {
	if len(argv) == 3 && argv[0] == "sh" && argv[1] == "-c" {
		return argv[2]
	}
	return strings.Join(argv, " ")
}

func pythonJob(t *replay.Task) *executors.PythonJob {
	spec, wf := t.Spec(), t.Run.Spec
	p := &executors.PythonJob{File: spec.File, Module: spec.Module, Function: spec.Function,
		Interpreter: spec.Python, InputType: spec.InputType, OutputType: spec.OutputType, CheckTypes: spec.CheckTypes}
	if p.Interpreter == "" {
		p.Interpreter = wf.Python
	}
	if wf.Dir != "" {
		p.SysPath = []string{wf.Dir}
		p.Project = wf.Dir
	}
	if len(wf.Types) > 0 {
		p.Types = make(map[string]json.RawMessage, len(wf.Types))
		for k, v := range wf.Types {
			p.Types[k] = v
		}
	}
	return p
}

// libraryJob runs a library task's ork_task_run through the python
// runner (see executors.PythonJob.Library), with the workflow's Python.
func libraryJob(t *replay.Task) *executors.PythonJob {
	p := pythonJob(t)
	p.Library, p.File, p.Function, p.SysPath, p.Project = p.File, "", "", nil, ""
	return p
}

func httpJob(h *workflow.HTTPSpec, in *taskInput) (*executors.HTTPJob, error) {
	url, err := renderURL(h.URL, in)
	if err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	headers, err := renderMap(h.Headers, in)
	if err != nil {
		return nil, fmt.Errorf("header %w", err)
	}
	job := &executors.HTTPJob{Method: h.Method, URL: url, Headers: headers, Timeout: h.RequestTimeout}
	if h.Body != "" {
		body, err := render(h.Body, in)
		if err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
		job.Body = []byte(body)
	}
	if a := h.Async; a != nil {
		status, err := renderURL(a.StatusURL, in)
		if err != nil {
			return nil, fmt.Errorf("async.status_url: %w", err)
		}
		job.Async = &executors.HTTPAsync{StatusURL: status, IDField: a.IDField, StatusURLField: a.StatusURLField,
			StatusField: a.StatusField, Success: a.Success, Failure: a.Failure,
			PollInterval: a.PollInterval, PollTimeout: a.PollTimeout}
	}
	return job, nil
}

// inputFor is the task's ORKWAL_INPUT: the run's params, its resolved
// inputs, the outputs of its direct upstream tasks by name, and its foreach
// item.
//
// Its maps are made only for what the task has: nil ones read as empty
// (encode writes {}; resolveInput finds no upstream task in a nil map).
// Params is the run's own map, or noParams: read only.
func inputFor(t *replay.Task) (*taskInput, error) {
	in := &taskInput{Params: t.Run.Params, Item: json.RawMessage(t.Item)}
	if in.Params == nil {
		in.Params = noParams
	}
	base := t
	if t.Parent >= 0 {
		base = t.Run.Tasks[t.Parent] // dependencies belong to the fan-out node
	}
	if deps := base.Deps(); len(deps) > 0 {
		in.Upstream = make(map[string]json.RawMessage, len(deps))
		for _, d := range deps {
			up := t.Run.Tasks[d]
			in.Upstream[up.Name] = orNull(up.Output)
		}
	}
	if inputs := t.Spec().Inputs; len(inputs) > 0 {
		in.Inputs = make(map[string]json.RawMessage, len(inputs))
	}
	for name, def := range t.Spec().Inputs {
		v, err := resolveInput(def.Const, def.Ref, in.Upstream)
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", name, err)
		}
		in.Inputs[name] = v
	}
	return in, nil
}

// resolveInput returns a constant, or the field an output reference names.
func resolveInput(constant []byte, ref string, upstream map[string]json.RawMessage) (json.RawMessage, error) {
	if ref == "" {
		return orNull(constant), nil
	}
	task, path := splitRef(ref)
	v, ok := upstream[task]
	if !ok {
		return nil, fmt.Errorf("%s: task %s is not upstream", ref, task)
	}
	for _, field := range path {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(v, &obj); err != nil {
			return nil, fmt.Errorf("%s: the output of %s is not an object at %q", ref, task, field)
		}
		if v, ok = obj[field]; !ok {
			return nil, fmt.Errorf("%s: the output of %s has no field %q", ref, task, field)
		}
	}
	return v, nil
}

func splitRef(ref string) (string, []string) {
	var parts []string
	start := 0
	for i := 0; i <= len(ref); i++ {
		if i == len(ref) || ref[i] == '.' {
			parts = append(parts, ref[start:i])
			start = i + 1
		}
	}
	return parts[1], parts[3:] // tasks.<name>.output[.field...]
}

func orNull(b []byte) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return json.RawMessage(b)
}

// placeInFolder runs a process or python task of a workflow loaded from a
// file (dir, the file's folder) as Ork does: in that folder unless it has
// its own workdir (already resolved against the folder), with PYTHONPATH
// set to the folder unless its env sets it, and a relative program path
// such as ./load.sh taken from the working folder (it was looked up from
// the daemon's). A workflow without a folder (posted through the API with
// no file) runs in the daemon's working folder, as before.
func (j *jobShared) placeInFolder(job *executors.Job, spec *workflow.Task, dir string) {
	if spec.Executor != "process" && spec.Executor != "python" {
		return
	}
	if job.Workdir == "" {
		job.Workdir = dir
	}
	if job.Workdir != "" && len(job.Command) > 0 && relativePath(job.Command[0]) {
		job.Command = append([]string{filepath.Join(job.Workdir, job.Command[0])}, job.Command[1:]...)
	}
	if dir != "" && len(job.Env) == 0 {
		job.Env = j.folderEnv(dir)
	} else if _, set := job.Env["PYTHONPATH"]; dir != "" && !set {
		env := make(map[string]string, len(job.Env)+1)
		for k, v := range job.Env {
			env[k] = v
		}
		env["PYTHONPATH"] = dir
		job.Env = env
	}
}

// relativePath reports whether a program name is a relative path (holds a
// slash, so it is not looked up in PATH, and does not start with one).
func relativePath(name string) bool {
	return strings.Contains(name, "/") && !filepath.IsAbs(name)
}

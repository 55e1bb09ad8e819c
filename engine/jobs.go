package engine

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay"
)

// LogPath is where an attempt's stdout and stderr go, inside the data folder.
// task is the task's key within its run ("process" or "process[3]").
func LogPath(dataDir, runID, task string, attempt int) string {
	return filepath.Join(dataDir, "logs", runID, task, strconv.Itoa(attempt)+".log")
}

func scratchDir(dataDir, runID, task string, attempt int) string {
	return filepath.Join(dataDir, "work", runID, task, strconv.Itoa(attempt))
}

// taskInput is the JSON document a task reads from ORKWAL_INPUT.
type taskInput struct {
	Params   map[string]string          `json:"params"`
	Inputs   map[string]json.RawMessage `json:"inputs"`
	Upstream map[string]json.RawMessage `json:"upstream"`
	Item     json.RawMessage            `json:"item,omitempty"`
}

// prepare builds the executor job for a task just dispatched (under the lock).
func (e *Engine) prepare(t *replay.Task, now int64) *start {
	spec := t.Spec()
	run := t.Run
	job := executors.Job{
		RunID: run.ID, TaskID: t.ID(), TaskName: t.Name, Workflow: run.Workflow,
		Attempt: t.Attempt, ParallelIndex: t.Instance, ParallelCount: t.Count,
		Command: spec.Command, Env: spec.Env, Workdir: spec.Workdir,
		LogPath:        LogPath(e.cfg.DataDir, run.ID, t.Key(), t.Attempt),
		ScratchDir:     scratchDir(e.cfg.DataDir, run.ID, t.Key(), t.Attempt),
		MaxOutputBytes: e.cfg.MaxOutputBytes,
	}
	input, err := inputFor(t)
	job.Input = input
	return &start{
		att: &attempt{ref: replay.TaskRef{Run: run.ID, Task: t.Index}, taskID: job.TaskID, number: t.Attempt,
			spec: spec, scratch: job.ScratchDir, dispatchedAt: now},
		ex:  e.cfg.Executors[spec.Executor],
		job: job,
		err: err,
	}
}

// inputFor is the task's ORKWAL_INPUT: the run's params, its resolved
// inputs, the outputs of its direct upstream tasks by name, and its foreach
// item.
func inputFor(t *replay.Task) ([]byte, error) {
	in := taskInput{Params: t.Run.Params, Inputs: map[string]json.RawMessage{},
		Upstream: map[string]json.RawMessage{}, Item: json.RawMessage(t.Item)}
	if in.Params == nil {
		in.Params = map[string]string{}
	}
	base := t
	if t.Parent >= 0 {
		base = t.Run.Tasks[t.Parent] // dependencies belong to the fan-out node
	}
	for _, d := range base.Deps {
		up := t.Run.Tasks[d]
		in.Upstream[up.Name] = orNull(up.Output)
	}
	for name, def := range t.Spec().Inputs {
		v, err := resolveInput(def.Const, def.Ref, in.Upstream)
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", name, err)
		}
		in.Inputs[name] = v
	}
	b, err := json.Marshal(in)
	return b, err
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

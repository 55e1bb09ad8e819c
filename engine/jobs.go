package engine

import (
	"encoding/json"
	"path/filepath"
	"strconv"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay"
)

// LogPath is where an attempt's stdout and stderr go, inside the data folder.
func LogPath(dataDir, runID, task string, attempt int) string {
	return filepath.Join(dataDir, "logs", runID, task, strconv.Itoa(attempt)+".log")
}

func scratchDir(dataDir, runID, task string, attempt int) string {
	return filepath.Join(dataDir, "work", runID, task, strconv.Itoa(attempt))
}

// taskInput is the JSON document a task reads from ORKWAL_INPUT.
type taskInput struct {
	Params   map[string]string          `json:"params"`
	Upstream map[string]json.RawMessage `json:"upstream"`
}

// prepare builds the executor job for a task just dispatched (under the lock).
func (e *Engine) prepare(t *replay.Task) *start {
	spec := t.Spec()
	run := t.Run
	job := executors.Job{
		RunID: run.ID, TaskID: t.ID(), TaskName: t.Name, Workflow: run.Workflow,
		Attempt: t.Attempt, ParallelIndex: 0, ParallelCount: 1,
		Command: spec.Command, Env: spec.Env, Workdir: spec.Workdir,
		LogPath:        LogPath(e.cfg.DataDir, run.ID, t.Name, t.Attempt),
		ScratchDir:     scratchDir(e.cfg.DataDir, run.ID, t.Name, t.Attempt),
		MaxOutputBytes: e.cfg.MaxOutputBytes,
		Input:          inputFor(t),
	}
	return &start{
		att: &attempt{ref: replay.TaskRef{Run: run.ID, Task: t.Index}, number: t.Attempt, scratch: job.ScratchDir},
		ex:  e.cfg.Executors[spec.Executor],
		job: job,
	}
}

// inputFor is the task's ORKWAL_INPUT: the run's params and the outputs of
// its direct upstream tasks, by name.
func inputFor(t *replay.Task) []byte {
	in := taskInput{Params: t.Run.Params, Upstream: map[string]json.RawMessage{}}
	if in.Params == nil {
		in.Params = map[string]string{}
	}
	for _, d := range t.Deps {
		up := t.Run.Tasks[d]
		if len(up.Output) > 0 {
			in.Upstream[up.Name] = up.Output
		} else {
			in.Upstream[up.Name] = json.RawMessage("null")
		}
	}
	b, _ := json.Marshal(in) // maps of strings and valid JSON cannot fail
	return b
}

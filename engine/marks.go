package engine

import (
	"fmt"

	"github.com/orkwal/orkwal/replay"
)

// RetryFrom reruns a finished run from the task named from: it and every
// task downstream of it run again, whatever their outcome (a run that
// succeeded too); other tasks keep their outcome and output.
func (e *Engine) RetryFrom(id, from string) (RunView, error) {
	_, err := e.do(func(st *replay.State, now int64) (replay.Record, any, error) {
		run, err := endedRun(st, id)
		if err != nil {
			return nil, nil, err
		}
		if err := e.admit(st, run.Workflow); err != nil {
			return nil, nil, err
		}
		return &replay.RunRetried{ID: id, Expand: true, From: from, At: now}, nil, nil
	})
	if err != nil {
		return RunView{}, err
	}
	return e.Run(id)
}

// endedRun is the run id, which must have ended.
func endedRun(st *replay.State, id string) (*replay.Run, error) {
	run, ok := st.Runs[id]
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: run %q", ErrNotFound, id)
	case !run.Status.Finished():
		return nil, fmt.Errorf("%w: run %s is still %s; cancel it or wait for it to finish", ErrConflict, id, run.Status)
	}
	return run, nil
}

// RetryLatest reruns a finished run on its workflow's current version: a
// new run with the same params, triggered "retry"; it returns the new run.
func (e *Engine) RetryLatest(id string) (RunView, error) {
	old, err := e.Run(id)
	if err != nil {
		return RunView{}, err
	}
	if !finishedStatus(old.Status) {
		return RunView{}, fmt.Errorf("%w: run %s is still %s; cancel it or wait for it to finish", ErrConflict, id, old.Status)
	}
	newID, err := e.Trigger(old.Workflow, old.Params, "retry")
	if err != nil {
		return RunView{}, err
	}
	return e.Run(newID)
}

func finishedStatus(s string) bool {
	return replay.RunStatus(s).Finished()
}

// MarkTask sets a task's outcome by hand (replay.TaskMarked): ok marks it
// success, else failed. The record says what may be marked; what may not
// is an ErrConflict naming why.
func (e *Engine) MarkTask(id, task string, ok bool) (RunView, error) {
	_, err := e.do(func(st *replay.State, now int64) (replay.Record, any, error) {
		run, found := st.Runs[id]
		if !found {
			return nil, nil, fmt.Errorf("%w: run %q", ErrNotFound, id)
		}
		t := taskByKey(run, task)
		if t == nil {
			return nil, nil, fmt.Errorf("%w: run %s has no task %q", ErrNotFound, id, task)
		}
		if run.Status.Finished() && ok {
			if err := e.admit(st, run.Workflow); err != nil { // the run is pending again
				return nil, nil, err
			}
		}
		return &replay.TaskMarked{TaskRef: replay.TaskRef{Run: id, Task: t.Index}, OK: ok, At: now}, nil, nil
	})
	if err != nil {
		return RunView{}, err
	}
	return e.Run(id)
}

package engine

import (
	"fmt"

	"github.com/orkwal/orkwal/replay"
)

// PauseRun pauses (paused) or resumes a run, or, when task is not "", one
// task of it (replay.RunPaused): a paused run dispatches nothing new and
// its running attempts finish; a paused task is not dispatched. Both are
// idempotent. An ended run, or a task that ended, is an ErrConflict; so
// is pausing a task whose attempt is in flight (as Ork: only a pending
// task is paused), a fan-out or an instance.
func (e *Engine) PauseRun(id, task string, paused bool) (RunView, error) {
	_, err := e.do(func(st *replay.State, now int64) (replay.Record, any, error) {
		run, ok := st.Runs[id]
		if !ok {
			return nil, nil, fmt.Errorf("%w: run %q", ErrNotFound, id)
		}
		if run.Status.Finished() {
			return nil, nil, fmt.Errorf("%w: run %s has ended %s", ErrConflict, id, run.Status)
		}
		if task == "" {
			if run.Paused == paused {
				return nil, nil, nil
			}
			return &replay.RunPaused{Run: id, Task: -1, Paused: paused, At: now}, nil, nil
		}
		t := taskByKey(run, task)
		switch {
		case t == nil:
			return nil, nil, fmt.Errorf("%w: run %s has no task %q", ErrNotFound, id, task)
		case t.Paused == paused:
			return nil, nil, nil
		case t.IsNode() || t.Parent >= 0:
			return nil, nil, fmt.Errorf("%w: task %s is a fan-out or one of its instances: pause the run", ErrConflict, task)
		case paused && t.Status != replay.Pending:
			return nil, nil, fmt.Errorf("%w: task %s is %s: only a pending task can be paused", ErrConflict, task, t.Status)
		}
		return &replay.RunPaused{Run: id, Task: t.Index, Paused: paused, At: now}, nil, nil
	})
	if err != nil {
		return RunView{}, err
	}
	return e.Run(id)
}

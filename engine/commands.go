package engine

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
)

// PutWorkflow stores spec, which came through the API, as the workflow's
// next version, unless it is the same as the current one (then nothing is
// written and changed is false). A workflow managed by a file of the
// --workflows folder is refused (ErrConflict naming the file).
func (e *Engine) PutWorkflow(spec *workflow.Spec, source string) (w WorkflowView, changed bool, err error) {
	if err := validateExecutors(spec, "workflow "+spec.Name); err != nil {
		return WorkflowView{}, false, err
	}
	v, err := e.do(func(st *replay.State, now int64) (replay.Record, any, error) {
		if err := e.refuseManaged(st, spec.Name, "replace"); err != nil {
			return nil, nil, err
		}
		if rec := putRecord(st, spec, source, "", now); rec != nil {
			return rec, true, nil
		}
		return nil, false, nil
	})
	if err != nil {
		return WorkflowView{}, false, err
	}
	w, _ = e.Workflow(spec.Name)
	return w, v.(bool), nil
}

// putRecord is the record that stores spec (from source, managed by file,
// "" for none) as its workflow's next version: a version above any the
// name ever had. nil when the current version is the same spec from the
// same source and file.
func putRecord(st *replay.State, spec *workflow.Spec, source, file string, now int64) *replay.WorkflowPut {
	if cur, ok := st.Workflows[spec.Name]; ok && cur.Source == source && cur.File == file && sameSpec(cur.Spec, spec) {
		return nil
	}
	return &replay.WorkflowPut{Spec: spec, Source: source, Version: st.LastVersion(spec.Name) + 1, File: file, At: now}
}

// DeleteWorkflow removes a workflow. It is refused while runs of it are not
// finished.
func (e *Engine) DeleteWorkflow(name string) error {
	_, err := e.do(func(st *replay.State, now int64) (replay.Record, any, error) {
		if _, ok := st.Workflows[name]; !ok {
			return nil, nil, fmt.Errorf("%w: workflow %q", ErrNotFound, name)
		}
		if err := e.refuseManaged(st, name, "delete"); err != nil {
			return nil, nil, err
		}
		if id := e.activeRun(name); id != "" {
			return nil, nil, fmt.Errorf("%w: workflow %q has active run %s", ErrConflict, name, id)
		}
		return &replay.WorkflowDeleted{Name: name, At: now}, nil, nil
	})
	return err
}

// Trigger accepts a run of the workflow's current version and returns its
// id once the run is durable. params override the workflow's defaults; a
// param the workflow does not declare is an error.
func (e *Engine) Trigger(name string, params map[string]string, trigger string) (string, error) {
	id, _, err := e.TriggerIdempotent(name, params, trigger, "")
	return id, err
}

// TriggerIdempotent is Trigger with an idempotency key: while a run made
// with the same key is retained, the trigger returns that run's id and
// created is false (nothing is written). The key is recorded with the run,
// so this holds across restarts.
func (e *Engine) TriggerIdempotent(name string, params map[string]string, trigger, key string) (id string, created bool, err error) {
	type outcome struct {
		id      string
		created bool
	}
	v, err := e.do(func(st *replay.State, now int64) (replay.Record, any, error) {
		if key != "" {
			if r := st.RunByKey(key); r != nil {
				if r.Workflow != name {
					return nil, nil, fmt.Errorf("%w: idempotency key %q was used for a run of %s", ErrConflict, key, r.Workflow)
				}
				return nil, outcome{r.ID, false}, nil
			}
		}
		w, ok := st.Workflows[name]
		if !ok {
			return nil, nil, fmt.Errorf("%w: workflow %q", ErrNotFound, name)
		}
		merged, err := mergeParams(w.Spec, params)
		if err != nil {
			return nil, nil, err
		}
		if err := e.admit(st, name); err != nil {
			return nil, nil, err
		}
		// The id is made in the loop: ids made in time order come in
		// creation order, and the run list is then the index of ids
		// (replay's runIndex).
		uid, err := uuid.NewV7()
		if err != nil {
			return nil, nil, fmt.Errorf("engine: new run id: %w", err)
		}
		id := uid.String()
		return &replay.RunCreated{ID: id, Workflow: name, Version: w.Version, Params: merged,
			Trigger: trigger, IdempotencyKey: key, At: now}, outcome{id, true}, nil
	})
	if err != nil {
		return "", false, err
	}
	o := v.(outcome)
	return o.id, o.created, nil
}

func mergeParams(spec *workflow.Spec, given map[string]string) (map[string]string, error) {
	var unknown []string
	for k, v := range given {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return nil, fmt.Errorf("%w: params.%s: not valid UTF-8", ErrInvalid, strings.ToValidUTF8(k, "\uFFFD"))
		}
		if _, ok := spec.Params[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		declared := make([]string, 0, len(spec.Params))
		for k := range spec.Params {
			declared = append(declared, k)
		}
		sort.Strings(declared)
		return nil, fmt.Errorf("%w: params: unknown %s (workflow %s declares: %s)", ErrInvalid,
			strings.Join(unknown, ", "), spec.Name, orNone(declared))
	}
	if len(spec.Params) == 0 {
		return nil, nil
	}
	merged := make(map[string]string, len(spec.Params))
	for k, v := range spec.Params {
		merged[k] = v
	}
	for k, v := range given {
		merged[k] = v
	}
	return merged, nil
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// Ping returns once the loop has taken a turn, writing nothing: proof that
// it is not stuck (the systemd watchdog asks it).
func (e *Engine) Ping() error {
	_, err := e.do(func(*replay.State, int64) (replay.Record, any, error) { return nil, nil, nil })
	return err
}

// CancelRun cancels a run: pending tasks are cancelled at once, running
// attempts get SIGTERM then SIGKILL, and the run ends cancelled. Cancelling
// a run that is being or was cancelled changes nothing (idempotent); a run
// that ended success or failed is a conflict.
func (e *Engine) CancelRun(id string) (RunView, error) {
	_, err := e.do(func(st *replay.State, now int64) (replay.Record, any, error) {
		run, ok := st.Runs[id]
		switch {
		case !ok:
			return nil, nil, fmt.Errorf("%w: run %q", ErrNotFound, id)
		case run.CancelRequested || run.Status == replay.RunCancelled:
			return nil, nil, nil // idempotent
		case run.Status.Finished():
			return nil, nil, fmt.Errorf("%w: run %s already ended %s", ErrConflict, id, run.Status)
		}
		return &replay.RunCancelRequested{ID: id, At: now}, nil, nil
	})
	if err != nil {
		return RunView{}, err
	}
	return e.Run(id)
}

// RetryRun reruns a finished run that did not succeed: its failed, skipped
// and cancelled tasks go back to pending; successes and outputs are kept.
func (e *Engine) RetryRun(id string) (RunView, error) {
	_, err := e.do(func(st *replay.State, now int64) (replay.Record, any, error) {
		run, err := endedRun(st, id)
		switch {
		case err != nil:
			return nil, nil, err
		case run.Status == replay.RunSuccess:
			return nil, nil, fmt.Errorf("%w: run %s succeeded: nothing to retry", ErrConflict, id)
		case !run.Resettable():
			return nil, nil, fmt.Errorf("%w: run %s ended %s, but every task of it succeeded: nothing to retry", ErrConflict, id, run.Status)
		}
		if err := e.admit(st, run.Workflow); err != nil { // a rerun is pending again
			return nil, nil, err
		}
		return &replay.RunRetried{ID: id, Expand: true, At: now}, nil, nil
	})
	if err != nil {
		return RunView{}, err
	}
	return e.Run(id)
}

package engine

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/orkwal/orkwal/replay"
)

// A big run's view is the API's biggest answer, and monitors poll it. So
// AppendRun writes a run's JSON straight from the state into the caller's
// buffer: no TaskView per task kept, no reflection for a task's fields.
// The bytes are those of json.Marshal(RunView) (TestAppendRunIsMarshal).

// AppendRun appends the compact JSON of run id's view with its tasks, as
// json.Marshal writes it, to dst. It holds the read lock while it does:
// the caller writes the bytes to the network afterwards.
func (e *Engine) AppendRun(dst []byte, id string) ([]byte, error) {
	return e.appendRun(dst, id, false)
}

// appendRun is AppendRun, or AppendRunSummary when summary.
func (e *Engine) appendRun(dst []byte, id string, summary bool) ([]byte, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	r, ok := e.state.Runs[id]
	if !ok {
		return dst, fmt.Errorf("%w: run %q", ErrNotFound, id)
	}
	return e.appendRunLocked(dst, r, summary)
}

// appendRunLocked is AppendRun under the read lock; summary: with its
// fan-outs summarised (AppendRunSummary).
func (e *Engine) appendRunLocked(dst []byte, r *replay.Run, summary bool) ([]byte, error) {
	head, err := json.Marshal(e.viewRun(r, false))
	if err != nil {
		return dst, fmt.Errorf("run %s: %w", r.ID, err)
	}
	dst = append(dst, head[:len(head)-1]...) // without its closing brace
	tasks := r.Tasks
	if summary {
		tasks = specTasks(r)
	}
	if len(tasks) > 0 {
		if dst, err = e.appendTasks(append(dst, `,"tasks":`...), r, tasks, summary); err != nil {
			return dst, err
		}
	}
	if alerts := viewAlerts(e.state.AlertsOf(r.ID)); len(alerts) > 0 {
		b, err := json.Marshal(alerts)
		if err != nil {
			return dst, fmt.Errorf("run %s: alerts: %w", r.ID, err)
		}
		dst = append(append(dst, `,"alerts":`...), b...)
	}
	return append(dst, '}'), nil
}

// AppendTasks appends the compact JSON of run id's tasks (an array, as
// json.Marshal(RunView.Tasks) writes it) to dst.
func (e *Engine) AppendTasks(dst []byte, id string) ([]byte, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	r, ok := e.state.Runs[id]
	if !ok {
		return dst, fmt.Errorf("%w: run %q", ErrNotFound, id)
	}
	if len(r.Tasks) == 0 {
		return append(dst, "[]"...), nil
	}
	return e.appendTasks(dst, r, r.Tasks, false)
}

// appendTasks appends tasks of r as a JSON array, one view filled at a
// time; summary: a fan-out without its output (its instances' outputs).
func (e *Engine) appendTasks(dst []byte, r *replay.Run, tasks []*replay.Task, summary bool) ([]byte, error) {
	g := newGate(e, e.cfg.Clock.Now().UnixNano())
	var v TaskView
	var sc taskScratch
	var err error
	dst = append(dst, '[')
	for i, t := range tasks {
		if i > 0 {
			dst = append(dst, ',')
		}
		e.fillTask(&v, t, g, &sc)
		if summary && t.Expanded {
			v.Output = nil
		}
		if dst, err = appendTaskJSON(dst, &v, t); err != nil {
			return dst, fmt.Errorf("run %s: task %s: %w", r.ID, t.Key(), err)
		}
	}
	return append(dst, ']'), nil
}

// appendTaskJSON appends json.Marshal(v)'s bytes to dst, v's ID and Name
// being t's (written from t, not made); its rare fields (item, output,
// inputs) go through json.Marshal itself.
func appendTaskJSON(dst []byte, v *TaskView, t *replay.Task) ([]byte, error) {
	var err error
	if plainJSON(t.Run.ID) && plainJSON(t.Name) { // always: a UUID, a valid name
		dst = t.AppendKey(append(append(append(dst, `{"id":"`...), t.Run.ID...), ':'))
		dst = append(t.AppendKey(append(dst, `","name":"`...)), '"')
	} else {
		dst = appendJSONString(append(dst, `{"id":`...), t.ID())
		dst = appendJSONString(append(dst, `,"name":`...), t.Key())
	}
	dst = appendJSONString(append(dst, `,"task":`...), v.Task)
	dst = appendJSONString(append(dst, `,"status":`...), v.Status)
	dst = strconv.AppendInt(append(dst, `,"attempt":`...), int64(v.Attempt), 10)
	dst = appendInt(dst, `,"retries":`, v.Retries)
	dst = appendInt(dst, `,"failures":`, v.Failures)
	dst = appendStrings(dst, `,"depends_on":`, v.DependsOn)
	if v.Instance != nil {
		dst = strconv.AppendInt(append(dst, `,"instance":`...), int64(*v.Instance), 10)
	}
	dst = appendInt(dst, `,"instances":`, v.Instances)
	if dst, err = appendMarshal(dst, `,"instance_counts":`, len(v.InstanceCounts) > 0, v.InstanceCounts); err != nil {
		return dst, err
	}
	dst = appendTime(dst, `,"instances_started_at":`, v.InstancesStartedAt)
	if dst, err = appendMarshal(dst, `,"item":`, len(v.Item) > 0, v.Item); err != nil {
		return dst, err
	}
	dst = appendTime(dst, `,"not_before":`, v.NotBefore)
	dst = appendStrings(dst, `,"waiting_on":`, v.WaitingOn)
	dst = appendInt(dst, `,"interruptions":`, v.Interruptions)
	if v.Paused {
		dst = append(dst, `,"paused":true`...)
	}
	if v.Ahead {
		dst = append(dst, `,"ahead":true`...)
	}
	if v.Ready {
		dst = append(dst, `,"ready":true`...)
	}
	dst = appendInt(dst, `,"pid":`, v.PID)
	if v.ExitCode != nil {
		dst = strconv.AppendInt(append(dst, `,"exit_code":`...), int64(*v.ExitCode), 10)
	}
	dst = appendJSONField(dst, `,"error":`, v.Error)
	if dst, err = appendMarshal(dst, `,"output":`, len(v.Output) > 0, v.Output); err != nil {
		return dst, err
	}
	if dst, err = appendMarshal(dst, `,"inputs":`, len(v.Inputs) > 0, v.Inputs); err != nil {
		return dst, err
	}
	dst = appendTime(dst, `,"dispatched_at":`, v.DispatchedAt)
	dst = appendTime(dst, `,"started_at":`, v.StartedAt)
	dst = appendTime(dst, `,"finished_at":`, v.FinishedAt)
	if len(v.AttemptHistory) > 0 {
		dst = append(dst, `,"attempts":[`...)
		for i := range v.AttemptHistory {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendAttemptJSON(dst, &v.AttemptHistory[i])
		}
		dst = append(dst, ']')
	}
	return append(dst, '}'), nil
}

// plainJSON reports whether s is written as is between quotes in JSON.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if !plainByte[s[i]] {
			return false
		}
	}
	return true
}

// plainByte[c]: c is printable ASCII but for " \ < > & (a table: every
// event and view string is looked at byte by byte).
var plainByte = func() (t [256]bool) {
	for c := 0x20; c <= 0x7e; c++ {
		t[c] = strings.IndexByte(`"\<>&`, byte(c)) < 0
	}
	return t
}()

func appendAttemptJSON(dst []byte, a *AttemptView) []byte {
	dst = strconv.AppendInt(append(dst, `{"attempt":`...), int64(a.Attempt), 10)
	dst = appendJSONString(append(dst, `,"status":`...), a.Status)
	dst = strconv.AppendInt(append(dst, `,"exit_code":`...), int64(a.ExitCode), 10)
	dst = appendJSONField(dst, `,"error":`, a.Error)
	dst = appendTime(dst, `,"started_at":`, &a.StartedAt)
	dst = appendTime(dst, `,"finished_at":`, &a.FinishedAt)
	return append(dst, '}')
}

// appendInt appends key and n unless n is 0 (omitempty).
func appendInt(dst []byte, key string, n int) []byte {
	if n == 0 {
		return dst
	}
	return strconv.AppendInt(append(dst, key...), int64(n), 10)
}

// appendStrings appends key and ss unless ss is empty (omitempty).
func appendStrings(dst []byte, key string, ss []string) []byte {
	if len(ss) == 0 {
		return dst
	}
	dst = append(append(dst, key...), '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, s)
	}
	return append(dst, ']')
}

// appendTime appends key and *t as time.Time.MarshalJSON does (RFC 3339
// with nanoseconds; a view's times are UTC and within years 0 to 9999)
// unless t is nil.
func appendTime(dst []byte, key string, t *time.Time) []byte {
	if t == nil {
		return dst
	}
	dst = append(append(dst, key...), '"')
	return append(t.AppendFormat(dst, time.RFC3339Nano), '"')
}

// appendMarshal appends key and json.Marshal(v) when present.
func appendMarshal(dst []byte, key string, present bool, v any) ([]byte, error) {
	if !present {
		return dst, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return dst, fmt.Errorf("%s %w", key[2:len(key)-2], err)
	}
	return append(append(dst, key...), b...), nil
}

package engine

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
)

// Views are copies of the state taken under the read lock: callers may keep
// and encode them freely. Their JSON is the API's.

// WorkflowView is a workflow's current version.
type WorkflowView struct {
	Name        string            `json:"name"`
	Version     int               `json:"version"`
	Description string            `json:"description,omitempty"`
	Params      map[string]string `json:"params,omitempty"`
	Tasks       []*workflow.Task  `json:"tasks"`
	Source      string            `json:"source,omitempty"`
	// File is the --workflows file this version was loaded from ("" when
	// it came through the API); ManagedBy is that file while it manages
	// the workflow (the API refuses to replace or delete it).
	File      string        `json:"file,omitempty"`
	ManagedBy string        `json:"managed_by,omitempty"`
	CreatedAt time.Time     `json:"created_at"`
	UpdatedAt time.Time     `json:"updated_at"`
	Schedule  *ScheduleView `json:"schedule,omitempty"`
}

// ScheduleView is a workflow's cron schedule and its recent fires.
type ScheduleView struct {
	Cron     string     `json:"cron"`
	Catchup  string     `json:"catchup"`
	Overlap  string     `json:"overlap"`
	Paused   bool       `json:"paused"`
	NextFire *time.Time `json:"next_fire,omitempty"` // absent while paused
	LastFire *time.Time `json:"last_fire,omitempty"`
	Fires    []FireView `json:"fires,omitempty"` // the latest, oldest first
}

// FireView is one fire: the run it created, or why it created none.
type FireView struct {
	ScheduledAt time.Time `json:"scheduled_at"`
	RunID       string    `json:"run_id,omitempty"`
	Skipped     string    `json:"skipped,omitempty"`
}

// RunView is a run and, when asked for, its tasks.
type RunView struct {
	ID          string            `json:"id"`
	Workflow    string            `json:"workflow"`
	Version     int               `json:"version"`
	Status      string            `json:"status"`
	Trigger     string            `json:"trigger,omitempty"`      // api, cli or cron
	ScheduledAt *time.Time        `json:"scheduled_at,omitempty"` // a cron run's fire time
	Params      map[string]string `json:"params,omitempty"`
	CreatedAt   time.Time         `json:"created_at"`
	StartedAt   *time.Time        `json:"started_at,omitempty"`
	FinishedAt  *time.Time        `json:"finished_at,omitempty"`
	// CancelRequested: a cancel was accepted and the run has not ended yet:
	// its attempts are being stopped. False once the run has ended (its
	// status is then final, whatever ended it).
	CancelRequested bool `json:"cancel_requested,omitempty"`
	// Paused: the run dispatches nothing new until resumed (orkwal pause).
	Paused bool       `json:"paused,omitempty"`
	Tasks  []TaskView `json:"tasks,omitempty"`
	// Alerts raised about the run, with their deliveries (with the tasks).
	Alerts []AlertView `json:"alerts,omitempty"`
}

// TaskView is one task of a run. A fan-out task is listed once as itself
// (running while its instances run) and once per instance ("process[3]").
type TaskView struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"` // the task's key in the run: "process" or "process[3]"
	Task      string   `json:"task"` // the workflow task it instantiates: "process"
	Status    string   `json:"status"`
	Attempt   int      `json:"attempt"`
	Retries   int      `json:"retries,omitempty"`  // retries allowed
	Failures  int      `json:"failures,omitempty"` // failed attempts so far
	DependsOn []string `json:"depends_on,omitempty"`
	Instance  *int     `json:"instance,omitempty"`  // an instance's index
	Instances int      `json:"instances,omitempty"` // a fan-out's number of instances
	// InstanceCounts are a fan-out's instances by status (zeros left out)
	// and InstancesStartedAt the earliest dispatch of any of them: kept by
	// the state (replay.Task.InstanceCounts), read in O(1) per fan-out.
	InstanceCounts     map[string]int  `json:"instance_counts,omitempty"`
	InstancesStartedAt *time.Time      `json:"instances_started_at,omitempty"`
	Item               json.RawMessage `json:"item,omitempty"` // a foreach instance's item
	NotBefore          *time.Time      `json:"not_before,omitempty"`
	WaitingOn          []string        `json:"waiting_on,omitempty"` // why a pending task is not running (seed 004's waiting causes)
	Interruptions      int             `json:"interruptions,omitempty"`
	Paused             bool            `json:"paused,omitempty"` // not dispatched until resumed (orkwal pause RUN TASK)
	Ahead              bool            `json:"ahead,omitempty"`  // dispatched ahead: its attempt waits for an executor slot (slots.go)
	Ready              bool            `json:"ready,omitempty"`  // pending, held by nothing: dispatched on the engine's next turn (waitingReady)
	PID                int             `json:"pid,omitempty"`
	ExitCode           *int            `json:"exit_code,omitempty"`
	Error              string          `json:"error,omitempty"`
	Output             json.RawMessage `json:"output,omitempty"`
	// Inputs are the task's declared inputs as its attempts receive them
	// (constants, and the fields of upstream outputs they name), once it
	// has been dispatched.
	Inputs       map[string]json.RawMessage `json:"inputs,omitempty"`
	DispatchedAt *time.Time                 `json:"dispatched_at,omitempty"`
	StartedAt    *time.Time                 `json:"started_at,omitempty"`
	FinishedAt   *time.Time                 `json:"finished_at,omitempty"`
	// AttemptHistory is how each ended attempt ended, oldest first (the
	// latest replay.MaxAttemptsKept).
	AttemptHistory []AttemptView `json:"attempts,omitempty"`
}

// AttemptView is how one attempt of a task ended.
type AttemptView struct {
	Attempt    int       `json:"attempt"`
	Status     string    `json:"status"` // success, failed, cancelled or interrupted
	ExitCode   int       `json:"exit_code"`
	Error      string    `json:"error,omitempty"`
	StartedAt  time.Time `json:"started_at"` // its start, or its dispatch when it never started
	FinishedAt time.Time `json:"finished_at"`
}

func appendAttempts(out []AttemptView, ends []replay.AttemptEnd) []AttemptView {
	for _, a := range ends {
		out = append(out, AttemptView{Attempt: a.Attempt, Status: a.Status, ExitCode: a.ExitCode, Error: a.Error,
			StartedAt: ts(a.StartedAt), FinishedAt: ts(a.FinishedAt)})
	}
	return out
}

func ts(ns int64) time.Time { return time.Unix(0, ns).UTC() }

func tsp(ns int64) *time.Time {
	if ns == 0 {
		return nil
	}
	t := ts(ns)
	return &t
}

func (e *Engine) viewWorkflow(w *replay.Workflow) WorkflowView {
	v := WorkflowView{Name: w.Name, Version: w.Version, Description: w.Spec.Description,
		Params: w.Spec.Params, Tasks: w.Spec.Tasks, Source: w.Source,
		File: w.File, ManagedBy: e.managedBy(e.state, w.Name), CreatedAt: ts(w.CreatedAt), UpdatedAt: ts(w.UpdatedAt)}
	if sc := e.state.Schedules[w.Name]; sc != nil && w.Spec.Schedule != nil {
		v.Schedule = e.viewSchedule(sc, w.Spec.Schedule)
	}
	return v
}

func (e *Engine) viewSchedule(sc *replay.Schedule, spec *workflow.Schedule) *ScheduleView {
	v := &ScheduleView{Cron: sc.Cron, Catchup: spec.CatchupPolicy(), Overlap: spec.OverlapPolicy(),
		Paused: sc.Paused, LastFire: tsp(sc.LastFire)}
	if !sc.Paused {
		if s, err := workflow.ParseCron(sc.Cron); err == nil {
			if at := nextAfter(s, max(sc.Since, sc.LastFire)); at != 0 {
				next := time.Unix(0, at).UTC()
				v.NextFire = &next
			}
		}
	}
	for _, f := range sc.Fires {
		v.Fires = append(v.Fires, FireView{ScheduledAt: ts(f.ScheduledAt), RunID: f.RunID, Skipped: f.Skipped})
	}
	return v
}

func (e *Engine) viewRun(r *replay.Run, withTasks bool) RunView {
	v := RunView{ID: r.ID, Workflow: r.Workflow, Version: r.Version, Status: string(r.Status),
		Trigger: r.Trigger, ScheduledAt: tsp(r.ScheduledAt), Params: r.Params, CreatedAt: ts(r.CreatedAt),
		StartedAt: tsp(r.StartedAt), FinishedAt: tsp(r.FinishedAt), CancelRequested: r.CancelRequested && !r.Status.Finished(),
		Paused: r.Paused}
	if withTasks {
		g := newGate(e, e.cfg.Clock.Now().UnixNano())
		v.Tasks = make([]TaskView, len(r.Tasks))
		for i, t := range r.Tasks {
			v.Tasks[i] = e.viewTask(t, g)
		}
		v.Alerts = viewAlerts(e.state.AlertsOf(r.ID))
	}
	return v
}

func (e *Engine) viewTask(t *replay.Task, g *gate) TaskView {
	var v TaskView
	e.fillTask(&v, t, g, new(taskScratch))
	v.ID, v.Name = t.ID(), t.Key()
	return v
}

// taskScratch holds what a TaskView points to, so that a run's views can
// be filled one after the other in one place (AppendRun) without a heap
// object per time or number.
type taskScratch struct {
	notBefore, dispatched, started, finished time.Time
	instStart                                time.Time
	instance, exitCode                       int
	attempts                                 []AttemptView
}

// fillTask sets v to t's view but for its ID and Name (strings made for
// the view: AppendRun writes them from t); v's pointers and attempts point
// into sc, valid until sc's next use.
func (e *Engine) fillTask(v *TaskView, t *replay.Task, g *gate, sc *taskScratch) {
	spec := t.Spec()
	waiting := e.waitingOn(t, g) // for a dispatched task, only while it waits for a slot (waitingAhead)
	*v = TaskView{Task: t.Name, Status: string(t.Status), Attempt: t.Attempt,
		Retries: spec.Retries, Failures: t.Failures, DependsOn: spec.DependsOn, Interruptions: t.Interruptions,
		Error: t.Error, DispatchedAt: sc.at(&sc.dispatched, t.DispatchedAt), StartedAt: sc.at(&sc.started, t.StartedAt),
		FinishedAt: sc.at(&sc.finished, t.FinishedAt), NotBefore: sc.at(&sc.notBefore, t.NotBefore), WaitingOn: waiting,
		Paused: t.Paused, Ahead: t.Status == replay.Dispatched && waiting != nil,
		Ready: t.Status == replay.Pending && len(waiting) == 1 && waiting[0] == waitingReady}
	sc.attempts = appendAttempts(sc.attempts[:0], t.Attempts)
	if len(sc.attempts) > 0 {
		v.AttemptHistory = sc.attempts
	}
	if t.Parent >= 0 {
		sc.instance = t.Instance
		v.Instance, v.DependsOn = &sc.instance, nil
		v.Item = json.RawMessage(t.Item)
	}
	if t.Expanded {
		v.Instances = len(t.Instances)
		t.InstanceCounts(func(st replay.TaskStatus, n int) {
			if v.InstanceCounts == nil {
				v.InstanceCounts = map[string]int{}
			}
			v.InstanceCounts[string(st)] = n
		})
		v.InstancesStartedAt = sc.at(&sc.instStart, t.InstancesStartedAt())
	}
	if t.Status == replay.Success || t.Status == replay.Failed {
		sc.exitCode = t.ExitCode
		v.ExitCode = &sc.exitCode
	}
	if len(t.Output) > 0 {
		v.Output = json.RawMessage(t.Output)
	}
	v.Inputs = resolvedInputs(t)
	if t.AttemptInFlight() {
		v.PID = t.PID
	}
}

// at is tsp with its time kept in *slot.
func (sc *taskScratch) at(slot *time.Time, ns int64) *time.Time {
	if ns == 0 {
		return nil
	}
	*slot = ts(ns)
	return slot
}

// Workflows lists the current workflows by name.
func (e *Engine) Workflows() []WorkflowView {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make([]WorkflowView, 0, len(e.state.Workflows))
	for _, w := range e.state.Workflows {
		out = append(out, e.viewWorkflow(w))
	}
	sortWorkflows(out)
	return out
}

// Workflow returns one workflow's current version.
func (e *Engine) Workflow(name string) (WorkflowView, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	w, ok := e.state.Workflows[name]
	if !ok {
		return WorkflowView{}, fmt.Errorf("%w: workflow %q", ErrNotFound, name)
	}
	return e.viewWorkflow(w), nil
}

// RunFilter selects runs; zero fields match everything.
type RunFilter struct {
	Workflow string
	Limit    int // newest first; 0 = no limit
}

// Runs lists runs newest first, without their tasks: O(Limit) (see RunPage).
func (e *Engine) Runs(f RunFilter) []RunView {
	page, _ := e.RunPage(RunQuery{Workflow: f.Workflow, Limit: f.Limit})
	return page
}

// RunQuery selects a page of runs, newest first: those of Workflow and of
// Status ("" = any) created at or after Since (0 = any) and after the run
// AfterID, or, when that run is gone, after the runs created at or after
// AfterAt; at most Limit (0 = no limit).
type RunQuery struct {
	Workflow string
	Status   string
	Since    int64
	AfterID  string
	AfterAt  int64
	Limit    int
	// Offset skips that many runs first: O(Offset) more (Ork's API pages
	// so; the cursor does not grow with the depth).
	Offset int
}

// RunPage returns a page of runs, without their tasks, and whether more
// follow. It reads the state's run order (creation order per workflow and
// status): O(log n + Limit), however many runs there are.
func (e *Engine) RunPage(q RunQuery) (page []RunView, more bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	bound := ^uint64(0)
	if q.AfterID != "" {
		if r, ok := e.state.Runs[q.AfterID]; ok {
			bound = r.Seq
		} else {
			bound = e.state.RunBound(q.AfterAt)
		}
	}
	page = []RunView{}
	skip := q.Offset
	e.state.EachRunBefore(q.Workflow, replay.RunStatus(q.Status), bound, func(r *replay.Run) bool {
		switch {
		case r.CreatedAt < q.Since: // and so are all older ones
			return false
		case skip > 0:
			skip--
			return true
		case q.Limit > 0 && len(page) == q.Limit:
			more = true
			return false
		}
		page = append(page, e.viewRun(r, false))
		return true
	})
	return page, more
}

// RunCount is the number of runs of workflow ("" = any) with status
// ("" = any): O(1).
func (e *Engine) RunCount(workflow, status string) int {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.state.RunCount(workflow, replay.RunStatus(status))
}

// RunsWithPrefix lists, by id, up to limit runs whose id starts with
// prefix, without their tasks: O(log n + limit) in the runs kept.
func (e *Engine) RunsWithPrefix(prefix string, limit int) []RunView {
	e.mu.RLock()
	defer e.mu.RUnlock()
	runs := e.state.RunsWithPrefix(prefix, limit)
	out := make([]RunView, len(runs))
	for i, r := range runs {
		out[i] = e.viewRun(r, false)
	}
	return out
}

// RunStatus returns a run's status without building its view.
func (e *Engine) RunStatus(id string) (string, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	r, ok := e.state.Runs[id]
	if !ok {
		return "", fmt.Errorf("%w: run %q", ErrNotFound, id)
	}
	return string(r.Status), nil
}

// Run returns a run with its tasks.
func (e *Engine) Run(id string) (RunView, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	r, ok := e.state.Runs[id]
	if !ok {
		return RunView{}, fmt.Errorf("%w: run %q", ErrNotFound, id)
	}
	return e.viewRun(r, true), nil
}

// Task returns one task of a run, by its key in the run ("process" or
// "process[3]"), and the run's status: O(tasks of the run) to find it, one
// view made (a log follower asks at every commit). Its waiting_on is read
// as if it were the run's only pending task.
func (e *Engine) Task(runID, key string) (TaskView, string, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	r, ok := e.state.Runs[runID]
	if !ok {
		return TaskView{}, "", fmt.Errorf("%w: run %q", ErrNotFound, runID)
	}
	var buf [160]byte
	for _, t := range r.Tasks {
		if string(t.AppendKey(buf[:0])) == key { // compared without a string made
			return e.viewTask(t, newGate(e, e.cfg.Clock.Now().UnixNano())), string(r.Status), nil
		}
	}
	return TaskView{}, "", fmt.Errorf("%w: run %s has no task %q", ErrNotFound, runID, key)
}

// TaskLog returns the log file path of a task's attempt (0 = the latest).
// task is the task's key in the run ("process" or "process[3]").
func (e *Engine) TaskLog(runID, task string, attempt int) (string, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	r, ok := e.state.Runs[runID]
	if !ok {
		return "", fmt.Errorf("%w: run %q", ErrNotFound, runID)
	}
	t := taskByKey(r, task)
	switch {
	case t == nil:
		return "", fmt.Errorf("%w: run %s has no task %q", ErrNotFound, runID, task)
	case t.IsNode():
		return "", fmt.Errorf("%w: %s %w; its logs are per instance (%s[0], ...)", ErrNotFound, task, ErrFansOut, task)
	}
	if attempt == 0 {
		attempt = t.Attempt
	}
	if attempt < 1 || attempt > t.Attempt {
		return "", fmt.Errorf("%w: task %s of run %s has no attempt %d (attempts so far: %d)", ErrNotFound, task, runID, attempt, t.Attempt)
	}
	return Layout(e.cfg.DataDir).AttemptLog(runID, task, attempt), nil
}

// taskByKey is run's task of key ("process" or "process[3]"), or nil.
func taskByKey(run *replay.Run, key string) *replay.Task {
	for _, t := range run.Tasks {
		if t.Key() == key {
			return t
		}
	}
	return nil
}

func sortWorkflows(ws []WorkflowView) {
	sort.Slice(ws, func(i, j int) bool { return ws[i].Name < ws[j].Name })
}

// resolvedInputs are the inputs t's attempts receive (ORKWAL_INPUT's
// inputs), or nil before its first dispatch or when it declares none. Its
// cost is that of preparing the task: its declared inputs, read from its
// upstream outputs.
func resolvedInputs(t *replay.Task) map[string]json.RawMessage {
	if t.Attempt == 0 || len(t.Spec().Inputs) == 0 {
		return nil
	}
	in, err := inputFor(t)
	if err != nil {
		return nil // the attempt could not be prepared either: its error says why
	}
	return in.Inputs
}

package replay

import (
	"fmt"

	"github.com/orkwal/orkwal/replay/workflow"
)

// RunStatus is a run's state: pending → running → success | failed.
type RunStatus string

const (
	RunPending RunStatus = "pending"
	RunRunning RunStatus = "running"
	RunSuccess RunStatus = "success"
	RunFailed  RunStatus = "failed"
)

// Finished reports whether the run reached a terminal state.
func (s RunStatus) Finished() bool { return s == RunSuccess || s == RunFailed }

// TaskStatus is a task's state:
// pending → dispatched → running → success | failed, or pending → skipped.
type TaskStatus string

const (
	Pending    TaskStatus = "pending"
	Dispatched TaskStatus = "dispatched"
	Running    TaskStatus = "running"
	Success    TaskStatus = "success"
	Failed     TaskStatus = "failed"
	Skipped    TaskStatus = "skipped"
)

// Terminal reports whether the task can no longer change.
func (s TaskStatus) Terminal() bool {
	return s == Success || s == Failed || s == Skipped
}

// InFlight reports whether an attempt was handed to an executor and has not
// ended: what a crash interrupts.
func (s TaskStatus) InFlight() bool { return s == Dispatched || s == Running }

// MaxInterruptions is how many times a task may be interrupted by crashes
// before it fails instead of running again (a crash loop).
const MaxInterruptions = 3

// State is everything orkwal knows, rebuilt by applying the log in order.
type State struct {
	Workflows map[string]*Workflow // current version of each live workflow
	Runs      map[string]*Run
	RunList   []*Run // in creation order
	NextSeq   uint64 // creation sequence of the next task

	ready readyQueue // derived: pending tasks whose dependencies succeeded
}

// New returns an empty state.
func New() *State {
	return &State{Workflows: map[string]*Workflow{}, Runs: map[string]*Run{}}
}

// Workflow is the current version of a workflow.
type Workflow struct {
	Name      string
	Version   int
	Spec      *workflow.Spec
	Source    string
	CreatedAt int64 // first version
	UpdatedAt int64 // this version
}

// Run is one execution of a pinned workflow version.
type Run struct {
	ID         string
	Seq        uint64 // creation order among runs
	Workflow   string
	Version    int
	Spec       *workflow.Spec // the pinned version, shared and immutable
	Params     map[string]string
	Trigger    string
	Status     RunStatus
	CreatedAt  int64
	StartedAt  int64
	FinishedAt int64
	Tasks      []*Task // in creation order

	active int // derived: tasks not terminal
	failed int // derived: failed tasks
}

// Task is one task instance of a run.
type Task struct {
	Run           *Run
	Index         int // position in Run.Tasks
	Name          string
	Seq           uint64 // creation order across all runs
	Status        TaskStatus
	Attempt       int // attempts dispatched so far
	Interruptions int // attempts lost to crashes
	PID           int
	StartTime     uint64
	ExitCode      int
	Error         string
	Output        []byte
	DispatchedAt  int64
	StartedAt     int64
	FinishedAt    int64

	Deps       []int // indexes of upstream tasks in Run.Tasks
	Downstream []int // derived: indexes of tasks that depend on this one
	waiting    int   // derived: upstream tasks not yet succeeded
	queued     bool  // derived: in the ready queue
}

// ID is the task's stable identity, given to executors and the API.
func (t *Task) ID() string { return t.Run.ID + ":" + t.Name }

// Spec returns the task's definition in the pinned workflow.
func (t *Task) Spec() *workflow.Task { return t.Run.Spec.Tasks[t.Index] }

// Task resolves a reference, or returns an error naming it.
func (s *State) Task(ref TaskRef) (*Task, error) {
	run, ok := s.Runs[ref.Run]
	if !ok {
		return nil, fmt.Errorf("replay: unknown run %q", ref.Run)
	}
	if ref.Task < 0 || ref.Task >= len(run.Tasks) {
		return nil, fmt.Errorf("replay: run %s has no task %d", ref.Run, ref.Task)
	}
	return run.Tasks[ref.Task], nil
}

package replay

import (
	"fmt"
	"strconv"

	"github.com/orkwal/orkwal/replay/workflow"
)

// RunStatus is a run's state: pending → running → success | failed.
type RunStatus string

const (
	RunPending   RunStatus = "pending"
	RunRunning   RunStatus = "running"
	RunSuccess   RunStatus = "success"
	RunFailed    RunStatus = "failed"
	RunCancelled RunStatus = "cancelled"
)

// Finished reports whether the run reached a terminal state.
func (s RunStatus) Finished() bool { return s == RunSuccess || s == RunFailed || s == RunCancelled }

// TaskStatus is a task's state:
// pending → dispatched → running → success | failed | cancelled, or
// pending → skipped | cancelled; failed attempts with retries left go back
// to pending. A fan-out task is running while its instances run.
type TaskStatus string

const (
	Pending    TaskStatus = "pending"
	Dispatched TaskStatus = "dispatched"
	Running    TaskStatus = "running"
	Success    TaskStatus = "success"
	Failed     TaskStatus = "failed"
	Skipped    TaskStatus = "skipped"
	Cancelled  TaskStatus = "cancelled"
)

// Terminal reports whether the task can no longer change (until a rerun).
func (s TaskStatus) Terminal() bool {
	return s == Success || s == Failed || s == Skipped || s == Cancelled
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
	// Retired is the last version of each deleted workflow name (until it
	// is put again): versions only grow for a name.
	Retired    map[string]int
	Schedules  map[string]*Schedule // by workflow, for workflows with a schedule
	Runs       map[string]*Run
	RunList    []*Run // in creation order
	NextSeq    uint64 // creation sequence of the next task
	NextRunSeq uint64 // creation sequence of the next run

	ready      readyQueue           // derived: pending tasks whose dependencies succeeded
	mutexes    map[string][]*Task   // derived: per mutex key, its unfinished tasks in creation order
	mutexHeld  map[string]*Task     // derived: per mutex key, its task with an attempt in flight
	idem       map[string]*Run      // derived: idempotency key → run
	activeRuns map[string]int       // derived: running runs per workflow
	counts     counts               // derived: runs and tasks by status (counts.go)
	runIDs     runIndex             // derived: the runs, sorted by id (runindex.go)
	runOrder   runOrder             // derived: the runs in creation order, by workflow and status (runorder.go)
	links      map[string]specLinks // derived: the task links of the latest version of each workflow that made runs (links.go)

	alerts alerts // raised alerts and their deliveries (alerts.go)

	// Incremental snapshots (cow.go): the generation of the latest
	// BeginSnapshot, and the snapshot being copied, if any.
	snapGen uint32
	pend    *pending
}

// New returns an empty state.
func New() *State {
	s := &State{Workflows: map[string]*Workflow{}, Retired: map[string]int{}, Runs: map[string]*Run{}, Schedules: map[string]*Schedule{},
		mutexes: map[string][]*Task{}, mutexHeld: map[string]*Task{}, activeRuns: map[string]int{}, idem: map[string]*Run{},
		links: map[string]specLinks{}}
	s.ready.init()
	s.runOrder = runOrder{}
	s.counts.init()
	return s
}

// Schedule is the state of a workflow's cron schedule.
type Schedule struct {
	Workflow string
	Cron     string // the expression it follows
	Since    int64  // fires are due after max(Since, LastFire): when this expression took effect, or the resume
	LastFire int64  // scheduled time of the last fire, run or skipped
	Paused   bool
	Fires    []Fire // the latest fires, oldest first (at most MaxFires)
}

// Fire is one fire of a schedule.
type Fire struct {
	ScheduledAt int64
	RunID       string // the run it created, or ""
	Skipped     string // why it created no run
	At          int64
}

// MaxFires is how many recent fires a schedule keeps.
const MaxFires = 20

// Workflow is the current version of a workflow, and its earlier versions
// kept (versions.go).
type Workflow struct {
	Name      string
	Version   int
	Spec      *workflow.Spec
	Source    string
	File      string    // the --workflows file this version was loaded from ("" = the API)
	CreatedAt int64     // first version
	UpdatedAt int64     // this version
	Past      []Version // earlier versions kept, oldest first; never mutated in place (a snapshot may share it)
}

// Run is one execution of a pinned workflow version.
type Run struct {
	ID        string
	Workflow  string
	Status    RunStatus
	Spec      *workflow.Spec // the pinned version, shared and immutable
	Params    map[string]string
	Seq       uint64 // creation order among runs
	Version   int
	CreatedAt int64
	Tasks     []*Task // in creation order: the spec's tasks, then fan-out instances
	Queued    bool    // a cron run with overlap: queue waits until no other run of its workflow is active
	// CancelRequested: a cancel was accepted; the run ends cancelled once
	// its attempts in flight have stopped.
	CancelRequested bool
	// Paused: the run dispatches nothing new (run_paused).
	Paused bool

	// snapGen is the generation of the snapshot that holds this run's
	// value (cow.go), snapIdx where; any write to a persisted field of a
	// run goes after s.touchRun(run).
	snapGen uint32
	active  int32 // derived: tasks not terminal
	failed  int32 // derived: failed tasks
	snapIdx int32
	// parkedGen is the queue generation of parkedAt's entry.
	parkedGen uint32
	parkedAt  *Task    // derived: its first task parked behind its workflow (ready.go), nil when none is
	one       [1]*Task // Tasks' array for a run of one task: no allocation of its own

	// *runMore is shared by the runs not started, triggered without a key
	// and not by cron, of each usual trigger: most waiting runs (issue 27).
	// Every write to it goes after s.touchRun(run), which gives the run
	// its own.
	*runMore
}

// runMore is a run's trigger and what only some runs have: from their
// trigger, or once they started. Its fields are promoted: read them as
// the run's.
type runMore struct {
	Trigger     string // api, cli, cron
	IdemKey     string // the trigger's Idempotency-Key, if any
	ScheduledAt int64  // the fire time of a cron run
	StartedAt   int64
	FinishedAt  int64
	shared      bool // one of sharedRunMore: never written (checkNoEnd)
}

// sharedTriggers are the usual triggers; sharedMores the runMores of the
// runs that have nothing more than one of them, one for each, and
// sharedRunMore the same by trigger.
var (
	sharedTriggers = [...]string{"", "api", "cli", "cron", "retry", "test", "bench", "ork"}
	sharedMores    [len(sharedTriggers)]runMore
	sharedRunMore  = map[string]*runMore{}
)

func init() {
	for i, tr := range sharedTriggers {
		sharedMores[i] = runMore{Trigger: tr, shared: true}
		sharedRunMore[tr] = &sharedMores[i]
	}
}

// newRunMore returns the shared runMore equal to m, if there is one, else
// a new one.
func newRunMore(m runMore) *runMore {
	if m.IdemKey == "" && m.ScheduledAt == 0 && m.StartedAt == 0 && m.FinishedAt == 0 {
		if p := sharedRunMore[m.Trigger]; p != nil {
			return p
		}
	}
	own := new(runMore) // not &m: m would go to the heap for every run
	*own = m
	return own
}

// newTasks returns an empty Tasks of capacity n for run.
func (run *Run) newTasks(n int) []*Task {
	if n == 1 {
		return run.one[:0]
	}
	return make([]*Task, 0, n)
}

// Task is one task of a run: a spec task, or one instance of a fan-out.
// What its attempts and its fan-out leave (TaskEnd) is apart: a task that
// has not run points at a shared zero TaskEnd, so a waiting task costs
// only what it needs to wait (issue 27).
type Task struct {
	Run       *Run
	Name      string
	Status    TaskStatus
	Seq       uint64 // creation order across all runs
	NotBefore int64  // not dispatched before this time (retry backoff, delay)
	Index     int    // position in Run.Tasks
	SpecIndex int    // position of its definition in Run.Spec.Tasks
	Attempt   int    // attempts dispatched so far

	// Fan-out. A node (the spec task) expands into instances once ready.
	Parent   int  // index of the node of an instance; -1 otherwise
	Count    int  // the node's number of instances (1 for a plain task)
	Paused   bool // not dispatched while set (run_paused)
	Deferred bool // a running attempt whose process ended deferring its work (task_deferred); Output holds its descriptors

	queued   bool   // derived: in the ready queue
	released Gate   // derived: the gate it was last released from (ready.go)
	queueGen uint32 // derived: bumped at every push, see readyQueue
	snapGen  uint32 // the snapshot generation that holds its value; any write to a persisted field goes after s.touch(t) (cow.go)
	waiting  int32  // derived: upstream tasks not yet done

	links *taskLinks // its dependencies (links.go): shared by its workflow version's runs; nil for an instance

	// *taskEnd is &noEnd until the task's first write to it: every write
	// goes after s.own(t), which gives the task its own (cow.go).
	*taskEnd
}

// taskEnd is the part of a task that its attempts and its fan-out write:
// zero for a task that has not run. Its fields are promoted: read them as
// the task's.
type taskEnd struct {
	Failures      int // failed attempts since the last rerun (retries spent + 1)
	Interruptions int // attempts lost to crashes
	PID           int
	StartTime     uint64
	ExitCode      int
	Error         string
	Output        []byte
	DispatchedAt  int64
	StartedAt     int64
	FinishedAt    int64
	Attempts      []AttemptEnd // the latest ended attempts, oldest first (at most MaxAttemptsKept)
	MutexKey      string       // its mutex, rendered with its run's params
	Expanded      bool         // a node that expanded (possibly into zero instances)
	Instance      int          // an instance's index, from 0
	Item          []byte       // the foreach item of an instance, a JSON value
	Instances     []int        // a node's instances, once expanded
	instActive    int          // derived, nodes: instances not terminal
	instFailed    int          // derived, nodes: instances failed or cancelled
	instFlight    int          // derived, nodes: instances dispatched or running
	inst          *instStats   // derived, nodes: instances by status, their first dispatch (instcounts.go)
}

// noEnd is the taskEnd of every task that has not written one: never
// written itself (checkNoEnd).
var noEnd taskEnd

// Key is the task's name within its run: its name, and for an instance of
// a fan-out its index in brackets ("process[3]").
func (t *Task) Key() string {
	if t.Parent < 0 {
		return t.Name
	}
	var b [64]byte // one allocation, the string's: an instance's key is asked per event
	return string(t.AppendKey(b[:0]))
}

// AppendKey appends Key() to dst.
func (t *Task) AppendKey(dst []byte) []byte {
	dst = append(dst, t.Name...)
	if t.Parent < 0 {
		return dst
	}
	return append(strconv.AppendInt(append(dst, '['), int64(t.Instance), 10), ']')
}

// ID is the task's stable identity, given to executors and the API: one
// allocation, as it is asked for per dispatch and per task of a run's view.
func (t *Task) ID() string {
	var b [128]byte
	return string(t.AppendKey(append(append(b[:0], t.Run.ID...), ':')))
}

// Priority is its definition's priority: higher is dispatched first.
func (t *Task) Priority() int { return t.Spec().Priority }

// Spec returns the task's definition in the pinned workflow.
func (t *Task) Spec() *workflow.Task { return t.Run.Spec.Tasks[t.SpecIndex] }

// IsNode reports a fan-out task, which runs through its instances and is
// never dispatched itself.
func (t *Task) IsNode() bool { return t.Parent < 0 && t.Spec().FansOut() }

// AttemptInFlight reports whether the task has an attempt handed to an
// executor whose outcome is not recorded: what a crash interrupts. A
// fan-out node is running while its instances run, but is never an attempt.
func (t *Task) AttemptInFlight() bool { return t.Status.InFlight() && !t.IsNode() }

// Resettable: the run has a failed, skipped or cancelled task, which a
// rerun resets. A cancel whose attempts all succeeded before they were
// stopped ends a run cancelled with none: a rerun of it would reset
// nothing, and the run would wait for good for a dispatch to start it.
func (r *Run) Resettable() bool {
	for _, t := range r.Tasks {
		if t.Status == Failed || t.Status == Skipped || t.Status == Cancelled {
			return true
		}
	}
	return false
}

// stuckNode: a fan-out whose expansion failed, put back to running by an
// earlier version's rerun (see reset): no instance will ever end it, so a
// cancel of its run does.
func (t *Task) stuckNode() bool {
	return t.Expanded && t.Status == Running && len(t.Instances) == 0 && t.IsNode()
}

// Waiting is the number of upstream tasks not yet done: a pending task's,
// or a fan-out's that runs again after a rerun (its instances wait for it).
func (t *Task) Waiting() int { return int(t.waiting) }

// InFlightInstances is how many of a node's instances are in flight.
func (t *Task) InFlightInstances() int { return t.instFlight }

// MutexHolder returns the task that holds key: the one with an attempt in
// flight, else the earliest-created task with that key that is not
// finished. Only it may run. (A rerun task is created before tasks that
// took the key meanwhile: it waits for the one in flight.)
func (s *State) MutexHolder(key string) *Task {
	if t := s.mutexHeld[key]; t != nil {
		return t
	}
	if q := s.mutexes[key]; len(q) > 0 {
		return q[0]
	}
	return nil
}

// RunByKey returns the run a trigger with this idempotency key created.
func (s *State) RunByKey(key string) *Run { return s.idem[key] }

// ActiveRuns is the number of running runs of a workflow.
func (s *State) ActiveRuns(workflow string) int { return s.activeRuns[workflow] }

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

// LastVersion is the highest version the workflow name ever had (its
// current one, or its last before it was deleted), 0 if none: the next put
// records a version above it.
func (s *State) LastVersion(name string) int {
	if w, ok := s.Workflows[name]; ok {
		return max(w.Version, s.Retired[name])
	}
	return s.Retired[name]
}

package replay

import (
	"bytes"
	"fmt"

	"github.com/orkwal/orkwal/replay/workflow"
	"github.com/vmihailenco/msgpack/v5"
)

// Kind identifies a record type. It is the first byte of every record
// payload and part of the on-disk format (docs/format.md): never renumber.
type Kind uint8

const (
	KindWorkflowPut     Kind = 1
	KindWorkflowDeleted Kind = 2
	KindRunCreated      Kind = 3
	KindTaskDispatched  Kind = 4
	KindTaskStarted     Kind = 5
	KindTaskFinished    Kind = 6
	KindTaskInterrupted Kind = 7
	KindRunCancel       Kind = 8
	KindRunRetried      Kind = 9
	KindCronFired       Kind = 10
	KindSchedulePaused  Kind = 11
	KindRunsPruned      Kind = 12
	KindAlertRaised     Kind = 13
	KindAlertDelivered  Kind = 14
	KindTaskMarked      Kind = 15
	KindTaskDeferred    Kind = 16
	KindRunPaused       Kind = 17
)

var kindNames = map[Kind]string{
	KindWorkflowPut:     "workflow_put",
	KindWorkflowDeleted: "workflow_deleted",
	KindRunCreated:      "run_created",
	KindTaskDispatched:  "task_dispatched",
	KindTaskStarted:     "task_started",
	KindTaskFinished:    "task_finished",
	KindTaskInterrupted: "task_interrupted",
	KindRunCancel:       "run_cancel_requested",
	KindRunRetried:      "run_retried",
	KindCronFired:       "cron_fired",
	KindSchedulePaused:  "schedule_paused",
	KindRunsPruned:      "runs_pruned",
	KindAlertRaised:     "alert_raised",
	KindAlertDelivered:  "alert_delivered",
	KindTaskMarked:      "task_marked",
	KindTaskDeferred:    "task_deferred",
	KindRunPaused:       "run_paused",
}

func (k Kind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Record is one state transition. At is unix nanoseconds, read from the
// engine's clock when the transition was decided.
type Record interface {
	Kind() Kind
}

// WorkflowPut stores a new version of a workflow.
type WorkflowPut struct {
	Spec   *workflow.Spec `msgpack:"spec"`
	Source string         `msgpack:"src,omitempty"` // the YAML as given, for display
	// Version is the version this put records: above every version the
	// name ever had, deleted ones included, so a version names one
	// workflow for good. 0 in records written before it existed: then
	// previous + 1, or 1 (which restarted at 1 after a delete).
	Version int `msgpack:"ver,omitempty"`
	// File is the workflow file of a --workflows folder this version was
	// loaded from: the file manages the workflow. "" when it came through
	// the API.
	File string `msgpack:"file,omitempty"`
	At   int64  `msgpack:"at"`
}

// WorkflowDeleted removes a workflow. Runs that pinned it keep their version.
type WorkflowDeleted struct {
	Name string `msgpack:"name"`
	At   int64  `msgpack:"at"`
}

// RunCreated accepts a run of the workflow's current version. Apply creates
// its tasks, pending, in the spec's order.
type RunCreated struct {
	ID       string            `msgpack:"id"`
	Workflow string            `msgpack:"wf"`
	Version  int               `msgpack:"ver"` // must equal the current version
	Params   map[string]string `msgpack:"params,omitempty"`
	Trigger  string            `msgpack:"trigger,omitempty"` // "api", "cli", ...
	// IdempotencyKey, when set, names the trigger request: a second trigger
	// with the same key gets this run (while it is retained).
	IdempotencyKey string `msgpack:"idem,omitempty"`
	At             int64  `msgpack:"at"`
}

// TaskRef names a task of a run by its position in Run.Tasks.
type TaskRef struct {
	Run  string `msgpack:"run"`
	Task int    `msgpack:"t"`
}

// TaskDispatched hands a ready task to its executor as attempt Attempt
// (previous attempt + 1). The first dispatch of a run starts the run.
type TaskDispatched struct {
	TaskRef
	Attempt int   `msgpack:"attempt"`
	At      int64 `msgpack:"at"`
}

// TaskStarted: the executor launched the attempt.
type TaskStarted struct {
	TaskRef
	Attempt   int    `msgpack:"attempt"`
	PID       int    `msgpack:"pid,omitempty"`
	StartTime uint64 `msgpack:"st,omitempty"` // /proc start time of PID
	At        int64  `msgpack:"at"`
}

// TaskFinished: the attempt ended. OK false fails the task, skips its
// downstream tasks and, with the last task, ends the run.
type TaskFinished struct {
	TaskRef
	Attempt  int    `msgpack:"attempt"`
	OK       bool   `msgpack:"ok"`
	ExitCode int    `msgpack:"exit,omitempty"`
	Error    string `msgpack:"err,omitempty"`
	Output   []byte `msgpack:"out,omitempty"` // a JSON value
	// Jitter is the fraction, in [0, MaxJitter), taken off the retry
	// backoff of a failed attempt: drawn by the engine, recorded so that
	// Apply stays deterministic. Absent (0) in records of earlier versions.
	Jitter float64 `msgpack:"jit,omitempty"`
	At     int64   `msgpack:"at"`
}

// TaskDeferred: the attempt's process ended with an output that hands its
// work to the scheduler (Ork's deferrables: a JSON object whose "deferred"
// is a non-empty list of job descriptors). The task stays running, with no
// process, its output kept, until a task_finished of the same attempt
// says how the deferred jobs ended; after a crash the polling resumes.
type TaskDeferred struct {
	TaskRef
	Attempt int    `msgpack:"attempt"`
	Output  []byte `msgpack:"out"` // the JSON object the task returned, descriptors included
	At      int64  `msgpack:"at"`
}

// MaxJitter bounds TaskFinished.Jitter: a retry waits between 80% and 100%
// of its backoff, so that boxes failing together do not retry in lockstep.
const MaxJitter = 0.2

// TaskInterrupted: the attempt ended without an outcome: found in flight at
// boot (a crash), or stopped by a clean shutdown (Clean). The task goes back
// to pending to run again as a new attempt. Crash interruptions of attempts
// that started count: at MaxInterruptions the task fails instead (a crash
// loop). Clean ones do not, nor do those of attempts whose start was never
// recorded (Unstarted).
type TaskInterrupted struct {
	TaskRef
	Attempt int  `msgpack:"attempt"`
	Clean   bool `msgpack:"clean,omitempty"`
	// Unstarted: the crash found the attempt dispatched, its task_started
	// not durable: it never ran, or (its start waits up to 10 ms for a
	// frame to ride) ran for a moment, and it does not count toward the
	// crash loop. Only a task dispatched may be recorded so. Records of
	// versions before it lack the key and count as they did.
	Unstarted bool `msgpack:"unstarted,omitempty"`
	// NotRun: the daemon could not prepare the attempt (its input file,
	// its log, the resources of its spawn: a full disk, too many open
	// files), so nothing of it ran. Not the task's failure: it spends no
	// retry, counts no interruption, ignores on_interrupt: fail, and runs
	// again as the next attempt from NotBefore (the engine's backoff);
	// Reason says why, shown as the task's error while it waits.
	NotRun    bool   `msgpack:"notrun,omitempty"`
	Reason    string `msgpack:"why,omitempty"`
	NotBefore int64  `msgpack:"nb,omitempty"`
	At        int64  `msgpack:"at"`
}

// RunCancelRequested cancels a run: its pending tasks become cancelled at
// once; its attempts in flight are stopped by the engine and end cancelled
// (or succeeded, if they did before the stop reached them); then the run
// ends cancelled.
type RunCancelRequested struct {
	ID string `msgpack:"id"`
	At int64  `msgpack:"at"`
}

// RunRetried reruns a finished run that did not succeed: its failed,
// skipped and cancelled tasks go back to pending with a fresh retry budget;
// tasks that succeeded keep their outcome and output. The run is pending
// until its next dispatch.
type RunRetried struct {
	ID string `msgpack:"id"`
	// Expand: a fan-out whose expansion failed goes back to pending, to
	// expand again (see reset). Every rerun sets it; a record without it
	// was written by an earlier version, whose rerun put such a node back
	// to running with no instance to end it: it replays so, or the
	// records that version wrote after it (a cancel of the run above all)
	// would not apply to a run the new rule had ended. A record with it
	// also resets a task (see Run.Resettable): earlier versions' did not
	// always, and their run stays unfinished until a cancel.
	Expand bool `msgpack:"expand,omitempty"`
	// From, when set, names a task: it and every task downstream of it
	// run again, whatever their outcome; other tasks keep theirs (retry
	// --from). A fan-out may not be among them. A run that succeeded
	// may be rerun so.
	From string `msgpack:"from,omitempty"`
	At   int64  `msgpack:"at"`
}

// CronFired is one fire of a workflow's schedule, recorded together with the
// run it creates (RunID set) or the reason it created none (Skipped): one
// record, so that a fire time can never create two runs. ScheduledAt must be
// after the schedule's last fire.
type CronFired struct {
	Workflow    string `msgpack:"wf"`
	ScheduledAt int64  `msgpack:"sched"`
	RunID       string `msgpack:"run,omitempty"`
	Version     int    `msgpack:"ver,omitempty"`    // with RunID: the version the run pins
	Queued      bool   `msgpack:"queued,omitempty"` // overlap: queue: the run waits for the active ones
	Skipped     string `msgpack:"skipped,omitempty"`
	At          int64  `msgpack:"at"`
}

// SchedulePaused pauses (Paused) or resumes a workflow's schedule. Fires
// due while it was paused are not caught up: a resume restarts it from At.
type SchedulePaused struct {
	Workflow string `msgpack:"wf"`
	Paused   bool   `msgpack:"paused,omitempty"`
	At       int64  `msgpack:"at"`
}

// RunsPruned drops finished runs from the state (retention). Recorded
// before the snapshot that leaves them out, so live and replayed state
// agree; their log folders are removed once both are durable.
type RunsPruned struct {
	IDs []string `msgpack:"ids"`
	At  int64    `msgpack:"at"`
}

func (*RunsPruned) Kind() Kind         { return KindRunsPruned }
func (*CronFired) Kind() Kind          { return KindCronFired }
func (*SchedulePaused) Kind() Kind     { return KindSchedulePaused }
func (*RunCancelRequested) Kind() Kind { return KindRunCancel }
func (*RunRetried) Kind() Kind         { return KindRunRetried }
func (*WorkflowPut) Kind() Kind        { return KindWorkflowPut }
func (*WorkflowDeleted) Kind() Kind    { return KindWorkflowDeleted }
func (*RunCreated) Kind() Kind         { return KindRunCreated }
func (*TaskDispatched) Kind() Kind     { return KindTaskDispatched }
func (*TaskStarted) Kind() Kind        { return KindTaskStarted }
func (*TaskFinished) Kind() Kind       { return KindTaskFinished }
func (*TaskInterrupted) Kind() Kind    { return KindTaskInterrupted }
func (*TaskDeferred) Kind() Kind       { return KindTaskDeferred }

func newRecord(k Kind) (Record, error) {
	switch k {
	case KindWorkflowPut:
		return &WorkflowPut{}, nil
	case KindWorkflowDeleted:
		return &WorkflowDeleted{}, nil
	case KindRunCreated:
		return &RunCreated{}, nil
	case KindTaskDispatched:
		return &TaskDispatched{}, nil
	case KindTaskStarted:
		return &TaskStarted{}, nil
	case KindTaskFinished:
		return &TaskFinished{}, nil
	case KindTaskInterrupted:
		return &TaskInterrupted{}, nil
	case KindRunCancel:
		return &RunCancelRequested{}, nil
	case KindRunRetried:
		return &RunRetried{}, nil
	case KindCronFired:
		return &CronFired{}, nil
	case KindSchedulePaused:
		return &SchedulePaused{}, nil
	case KindRunsPruned:
		return &RunsPruned{}, nil
	case KindAlertRaised:
		return &AlertRaised{}, nil
	case KindAlertDelivered:
		return &AlertDelivered{}, nil
	case KindTaskMarked:
		return &TaskMarked{}, nil
	case KindTaskDeferred:
		return &TaskDeferred{}, nil
	case KindRunPaused:
		return &RunPaused{}, nil
	}
	return nil, fmt.Errorf("replay: unknown record kind %d", uint8(k))
}

// Encode returns the record's payload: its kind byte, then its msgpack body.
func Encode(r Record) ([]byte, error) { return AppendEncode(make([]byte, 0, 96), r) }

// AppendEncode appends the record's payload (Encode's) to b: the records
// of a frame can share one buffer.
func AppendEncode(b []byte, r Record) ([]byte, error) {
	if hot, ok := appendHot(b, r); ok {
		return hot, nil
	}
	p, err := encodeReflect(r)
	return append(b, p...), err
}

// encodeReflect is Encode through msgpack's Encoder.
func encodeReflect(r Record) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(byte(r.Kind()))
	enc := msgpack.NewEncoder(&buf)
	enc.SetOmitEmpty(true)
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("replay: encode %s: %w", r.Kind(), err)
	}
	return buf.Bytes(), nil
}

// Decode parses a payload written by Encode.
func Decode(payload []byte) (Record, error) {
	if len(payload) == 0 {
		return nil, fmt.Errorf("replay: empty record")
	}
	r, err := newRecord(Kind(payload[0]))
	if err != nil {
		return nil, err
	}
	if err := checkMsgpack(payload[1:]); err != nil {
		return nil, fmt.Errorf("replay: decode %s: %w", r.Kind(), err)
	}
	if err := msgpack.Unmarshal(payload[1:], r); err != nil {
		return nil, fmt.Errorf("replay: decode %s: %w", r.Kind(), err)
	}
	return r, nil
}

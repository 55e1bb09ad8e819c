// Package executors turns a task attempt (a Job) into running work and reports
// what happens to it as Events. Executors never import the engine: the engine
// hands them a Job and a report function, and owns every decision.
//
// Invariants every Executor keeps:
//   - Start returns only after the work has been launched (or failed to), and
//     never blocks on the report function.
//   - For every Job whose Start returned a nil error, exactly one Finished
//     event is reported, after at most one Started event. Heartbeat events
//     (remote work that is polled, e.g. HTTP async) come after Started and
//     before Finished; nothing follows Finished.
//   - report may be called from any goroutine, including from inside Start.
//   - Stop is idempotent and safe to call after the work finished.
//
// The process and python executors hand every running process to one
// reactor (see reactor): a goroutine waiting in one epoll instance for the
// exits (pidfds) and the log output (pipes) of all of them, so a running
// task holds no goroutine and no thread of the daemon, only a few hundred
// bytes and its descriptors (its pidfd, its log pipe and its log file).
//
// Invariants of a task's log (process, python and http tasks; see
// docs/format.md, Task logs):
//   - A capped log (cappedLog) is only appended to; output past its head
//     goes to a ring beside it (LogPath+".tail"), whose header describes
//     its last write before that write's bytes go in (see writeRing).
//   - After a crash of the daemon, RecoverLog completes the log exactly as
//     the attempt's end would have, from the output up to the last write
//     that reached the ring whole; one that did not is left out, and the
//     line it appends says how many bytes are lost. No byte shows in the
//     place of another.
//   - RecoverLog can be cut at any point, by a crash or a power cut, and
//     called again: the log is completed once, and durably, until
//     EndLogRecovery, which the caller calls once the interruption is
//     durable (see logrecover.go).
package executors

import (
	"time"
)

// Job is one attempt of one task, with everything an executor needs.
type Job struct {
	RunID         string
	TaskID        string
	TaskName      string
	Workflow      string
	Attempt       int // from 1
	ParallelIndex int // from 0
	ParallelCount int // 1 for a task without fan-out

	Command []string          // argv; never empty for the process executor
	Env     map[string]string // task env, added after the contract variables
	Workdir string            // "" = the daemon's working directory

	// LogPath is where stdout and stderr go (appended, created with parents).
	LogPath string
	// MaxLogBytes caps what one attempt keeps of its stdout and stderr in
	// LogPath. 0 = no cap. Output up to the cap is kept byte for byte;
	// beyond it, the log keeps the first half of the cap and the last half,
	// with one marker line between them saying how many bytes were omitted
	// (process and python executors; see cappedLog).
	MaxLogBytes int64
	// Input is the JSON document given to the task through ORKWAL_INPUT
	// (empty: the empty document {}): the file named after its content
	// beside the scratch files (see inputs.go), shared by the attempts
	// whose Input is the same document, read-only; the executor writes
	// Input there when the file is missing or changed since this process
	// last wrote it (see sharedInputs).
	Input []byte
	// Scratch is the path prefix of this attempt's contract files:
	// Scratch+".output.json" (ORKWAL_OUTPUT) and the python executor's own
	// (see Python); its input is shared (see Input). The
	// executor creates them, and their folder if it is missing; the
	// engine puts those of every attempt side by side in one folder, so
	// that starting a task creates no folder (see RemoveScratch).
	Scratch string
	// MaxOutputBytes caps what the task may write to ORKWAL_OUTPUT (and,
	// for HTTP, the response body taken as output). 0 = no cap (HTTP then
	// still reads at most 16 MiB of a body).
	MaxOutputBytes int64

	// Ork is the attempt in Ork's terms, for the variables Ork's tasks
	// read (see orkEnv).
	Ork OrkTask

	// Python is set for the python executor (see PythonJob); Command is then
	// ignored: the executor builds it.
	Python *PythonJob
	// Hold, when set, holds a process task back once it is spawned (its
	// Started reported) until a value comes on it: true, the task's
	// program runs (exec'd by a shell in its place: same pid); false, or
	// the daemon gone, it exits 125 without running (see holdScript). The
	// engine holds an attempt it runs after a crash interrupted its task
	// until its task_started is durable (docs/reliability.md, "The
	// crash-loop rule"). Process and python tasks only; the engine sends
	// one value, and others ignore it.
	Hold <-chan bool
	// HTTP is set for the http executor (see HTTPJob).
	HTTP *HTTPJob
	// Deferred is set for the tracking of a deferring attempt's jobs (see
	// Deferred).
	Deferred *DeferredJob
	// CloudRun is set for the cloudrun executor (see CloudRun).
	CloudRun *CloudRunJob
}

// OrkTask is what Ork tells a task about itself beyond orkwal's contract:
// its resolved inputs (ORK_INPUT_JSON) and the task's parameters, which
// Ork gives every process-run task as environment variables of the same
// names (task_index, max_retries, timeout_seconds, command).
type OrkTask struct {
	Inputs     []byte        // the resolved inputs, a JSON object; nil = {}
	TaskIndex  int           // the task's position in its workflow
	MaxRetries int           // retries after a failure
	Timeout    time.Duration // 0 = none
	Command    string        // a process task's command as written; "" = none
}

// EventKind says what an Event reports.
type EventKind uint8

const (
	// Started: the work is running (a process was spawned).
	Started EventKind = iota + 1
	// Finished: the work ended; ExitCode/Err say how.
	Finished
	// Heartbeat: remote work was seen alive (a successful status poll of
	// an HTTP async job). Reported between Started and Finished, any number
	// of times; the engine may treat a long silence as a stale task.
	Heartbeat
)

// Event is what an executor reports about a Job.
type Event struct {
	Kind    EventKind
	TaskID  string
	Attempt int
	At      time.Time // when the executor observed it (informational only)

	// Started
	PID       int    // process id, also its process group id (0 for in-process work)
	StartTime uint64 // process start time in clock ticks since boot (/proc/PID/stat field 22), to tell PID reuse apart
	RemoteID  string // HTTP async: the remote job's id (or its status URL); informational

	// Heartbeat
	Status string // the remote status value the poll saw (e.g. "RUNNING")

	// Finished
	OK       bool   // the work succeeded
	ExitCode int    // -1 when killed by a signal or never started
	Err      string // a human-readable reason when !OK ("exit status 3", "killed by signal", ...)
	Output   []byte // the JSON value the task wrote to ORKWAL_OUTPUT, if any
	// Cleaned: the executor removes the attempt's scratch files (Job.Scratch)
	// itself as it ends, right after this report, so the engine need not
	// (RemoveScratch). false leaves them to the engine.
	Cleaned bool
}

// Handle controls launched work.
type Handle interface {
	// Stop asks the work to end: SIGTERM to the process group, then SIGKILL
	// after grace. It returns at once; the Finished event follows. reason
	// says why ("timeout after 30s", "cancelled"): the log of the attempt
	// ends with the line "[orkwal: REASON]" ("[orkwal: REASON: SIGTERM,
	// then SIGKILL]" for a process that outlived SIGTERM and the grace),
	// written before Finished is reported. Only the first call's reason
	// counts. A stop for StopShutdown lets go of remote work that a later
	// boot resumes (a deferred wait: see Deferred) rather than ending it.
	Stop(grace time.Duration, reason string)
}

// StopShutdown is the reason of a stop because the daemon is shutting
// down: not the attempt's outcome.
const StopShutdown = "attempt interrupted: the daemon stopped"

// Executor launches jobs of one kind.
type Executor interface {
	Start(job Job, report func(Event)) (Handle, error)
}

// Preparer is an Executor whose start begins with work that nothing
// outside the daemon acts upon: writing the attempt's input file, and
// opening its log. The engine calls Prepare while the
// job's dispatch record is being made durable, then, once it is, Start on
// what Prepare returned; if the record never becomes durable (the log
// failed), Abort. So the files of an attempt may exist before its
// dispatch is durable, but no work starts before it is (write-ahead).
// Prepare(job) followed by Start(report) is Executor.Start(job, report).
type Preparer interface {
	Executor
	Prepare(job Job) (Prepared, error)
}

// Prepare prepares job on ex: with ex's own Prepare when ex is a Preparer;
// otherwise nothing is done before Start, which is ex.Start, and Abort
// does nothing.
func Prepare(ex Executor, job Job) (Prepared, error) {
	if p, ok := ex.(Preparer); ok {
		return p.Prepare(job)
	}
	return startLater{ex, job}, nil
}

// startLater is the Prepared of an executor that prepares nothing.
type startLater struct {
	ex  Executor
	job Job
}

func (s startLater) Start(report func(Event)) (Handle, error) { return s.ex.Start(s.job, report) }
func (startLater) Abort()                                     {}

// Prepared is a job whose files are ready and whose work has not started.
// Exactly one of Start and Abort is called, once.
type Prepared interface {
	// Start launches the work, as Executor.Start does.
	Start(report func(Event)) (Handle, error)
	// Abort removes what Prepare made: the scratch files, and the log
	// file if it was created and nothing was written to it.
	Abort()
}

package executors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Suffixes of the per-attempt files, after Job.Scratch. No executor
// writes inputSuffix any more (an attempt's input is shared: see
// inputs.go); RemoveScratch still removes one a version before 2026-11-25
// left behind a crash.
const (
	inputSuffix  = ".input.json"
	outputSuffix = ".output.json"
)

// DefaultKillGrace is the grace between SIGTERM and SIGKILL used by Stop when
// it is given a non-positive grace and ProcessConfig.KillGrace is not set.
const DefaultKillGrace = 10 * time.Second

// ProcessConfig configures a Process executor. The zero value is usable.
type ProcessConfig struct {
	// KillGrace is used by Handle.Stop when called with grace <= 0.
	// Zero means DefaultKillGrace.
	KillGrace time.Duration
	// Logger gets a warning when a task's log could not be completed
	// (its creation or a write failed). nil means slog.Default().
	Logger *slog.Logger
}

// Process runs each Job as an operating-system process in its own process
// group (pgid == pid), with the task contract of DESIGN.md ("The task
// contract"): ORKWAL_*/ORK_* environment, ORKWAL_INPUT and ORKWAL_OUTPUT files
// at Job.Scratch, stdout and stderr appended to Job.LogPath (capped by
// Job.MaxLogBytes, see cappedLog).
//
// The child gets SIGKILL when the daemon dies (Pdeathsig). Linux delivers
// that signal when the OS thread that forked the child exits, not the whole
// process; the Go runtime only retires threads of goroutines that exit while
// locked with runtime.LockOSThread, so Start must not be called from such a
// goroutine. Pdeathsig reaches the group leader only: other members of the
// group survive a daemon crash (see KillGroupIfSame).
type Process struct {
	cfg ProcessConfig

	// noReactor makes Start use the way without the reactor (tests).
	noReactor bool
	// cleaned, when set, is called once an attempt's scratch files are
	// removed, after its Finished report (tests).
	cleaned func(taskID string)
}

// NewProcess returns a Process executor, filling the defaults of cfg.
func NewProcess(cfg ProcessConfig) *Process {
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = DefaultKillGrace
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Process{cfg: cfg}
}

// attemptFiles are the absolute paths of an attempt's contract files.
type attemptFiles struct {
	input  string
	output string
	shared *sharedFile // the input file, the attempt's until release
}

// release tells the shared input file the attempt is done with it.
func (f attemptFiles) release() { sharedInputs.release(f.shared) }

// Start launches job.Command and returns once the process is running. The
// Started event is reported from inside Start, once the process is
// spawned, and the Finished event from another goroutine, after it. If the
// process cannot be started, Start returns the error and reports nothing.
//
// A running process holds no goroutine and no OS thread of the daemon: its
// exit and its capped log's pipe are watched by the reactor (see reactor),
// one goroutine for all of them. Without a pidfd or the reactor, it holds
// a goroutine parked on the pidfd in the runtime's poller (or, without a
// pidfd, a thread blocked in waitid) and one copying its log pipe. os/exec's
// Wait would block one thread in waitid(2) per process, each thread costing
// about 50 KiB of stacks: thousands of running tasks made hundreds of MiB.
func (p *Process) Start(job Job, report func(Event)) (Handle, error) {
	pp, err := p.prepare(job)
	if err != nil {
		return nil, err
	}
	return pp.Start(report)
}

// Prepare finds the command, writes the attempt's input file and prepares
// its output (an uncapped log is opened; a capped one waits for output:
// see cappedLog) (see Preparer): everything Start does but the spawn.
func (p *Process) Prepare(job Job) (Prepared, error) {
	pp, err := p.prepare(job)
	if err != nil {
		return nil, err // not a nil *preparedProcess in a non-nil interface
	}
	return pp, nil
}

// preparedProcess is a job of Process ready to be spawned: its files and
// its environment are made while its dispatch is being made durable, so
// the spawn is all that is left once it is.
type preparedProcess struct {
	p     *Process
	job   Job
	path  string // the command, looked up
	files attemptFiles
	env   []string
	out   *taskOutput
}

func (p *Process) prepare(job Job) (*preparedProcess, error) {
	if len(job.Command) == 0 {
		return nil, fmt.Errorf("start task %s: empty command", job.TaskID)
	}
	path, err := lookPath(job.Command[0])
	if err != nil {
		return nil, fmt.Errorf("start task %s (%s): %w", job.TaskID, job.Command[0], err)
	}
	files, err := prepareScratch(job)
	if err != nil {
		return nil, fmt.Errorf("start task %s: %w", job.TaskID, prepFailed(err))
	}
	out, err := openOutput(job)
	if err != nil {
		files.release()
		_ = RemoveScratch(job.Scratch) // what was prepared is not left behind
		return nil, fmt.Errorf("start task %s: %w", job.TaskID, prepFailed(err))
	}
	return &preparedProcess{p: p, job: job, path: path, files: files, env: buildEnv(os.Environ(), job, files), out: out}, nil
}

// Abort closes the log, removes it if it is empty, releases the input and
// removes the scratch files.
func (pp *preparedProcess) Abort() {
	pp.out.abort()
	pp.files.release()
	if fi, err := os.Stat(pp.job.LogPath); err == nil && fi.Size() == 0 {
		_ = os.Remove(pp.job.LogPath)
	}
	_ = RemoveScratch(pp.job.Scratch)
}

// Start spawns the prepared job: see Process.Start.
func (pp *preparedProcess) Start(report func(Event)) (Handle, error) {
	p, job, files, out := pp.p, pp.job, pp.files, pp.out
	path, argv := pp.path, job.Command
	var held *heldStart
	if job.Hold != nil {
		var err error
		if held, err = holdBack(path, argv); err != nil {
			out.abort()
			files.release()
			return nil, fmt.Errorf("start task %s (%s): %w", job.TaskID, job.Command[0], spawnFailed(err))
		}
		path, argv = held.path, held.argv
	}
	c, err := spawn(path, argv, job.Workdir, pp.env, out, held.childEnd())
	held.spawned(job.Hold, err == nil)
	if err != nil {
		out.abort()
		files.release()
		return nil, fmt.Errorf("start task %s (%s): %w", job.TaskID, job.Command[0], spawnFailed(err))
	}
	out.spawned()
	h := &processHandle{pid: int32(c.pid), defaultGrace: p.cfg.KillGrace}
	started := Event{
		Kind:      Started,
		TaskID:    job.TaskID,
		Attempt:   job.Attempt,
		At:        time.Now(),
		PID:       c.pid,
		StartTime: c.start,
	}
	fin := finishInfo{p: p, taskID: job.TaskID, attempt: job.Attempt, logPath: job.LogPath, outputPath: files.output,
		input: files.shared, maxOutputBytes: job.MaxOutputBytes, capped: out.capped, fileFrom: out.fileFrom}
	report(started)
	if p.watch(c, h, out, fin, report) {
		return h, nil
	}
	out.startCopier()
	go wait(c, h, fin, out, report)
	return h, nil
}

// watch hands the child to the reactor, which then reaps it and reports
// Finished (see reactor). false when there is no pidfd or no reactor:
// nothing was done.
func (p *Process) watch(c *child, h *processHandle, out *taskOutput, fin finishInfo, report func(Event)) bool {
	if p.noReactor || c.pidfd < 0 {
		return false
	}
	r, err := theReactor()
	if err != nil {
		return false
	}
	pr := &proc{pid: c.pid, pidfd: c.pidfd, pipe: out.pipeFD, h: h, fin: fin, report: report}
	return r.add(pr) == nil
}

// wait waits for the process and reports Finished, once. It is the only
// place that reaps the child.
//
// When the leader exits normally, the rest of its process group (e.g. a
// daemon the task left in the background) is deliberately left alone: a
// task's exit is its own statement that its work is done, and what it chose
// to leave running is its business. Stop, by contrast, signals the whole
// group.
//
// This is the way without the reactor, which does the same (see reactor).
//
// With a capped log, Finished also waits for the pipe copier to drain the
// pipe, so the log is complete before Finished. Members of the group left
// running keep the pipe open: they get logDrainDelay after the leader's
// exit, then the pipe is closed (see taskOutput.finish), so they cannot hold
// Finished back. What they write after that is lost, and their writes fail
// (EPIPE, or SIGPIPE for a process that does not ignore it). With an
// uncapped log they write to the log file itself and Finished never waits
// for them.
func wait(c *child, h *processHandle, fin finishInfo, out *taskOutput, report func(Event)) {
	// Wait for the exit without reaping, so the zombie keeps the pid (and
	// thus the process group id) reserved while Stop is told it is over.
	c.awaitExit()
	h.markExited()
	status, waitErr := c.reap()
	fin.logIncomplete(out.finish(h.stopNote()))
	fin.report(status, waitErr, report)
}

// openLog opens path for appending, creating it and its parent folder if
// they are missing. An empty path returns a nil file: the child's stdout
// and stderr then go to the null device.
func openLog(path string) (*os.File, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := makeDir(filepath.Dir(path)); err != nil {
			return nil, fmt.Errorf("create log dir: %w", err)
		}
		f, err = os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	}
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	return f, nil
}

// report reports the attempt's Finished event (see finishEvent), then
// removes its scratch files (see cleanScratch): the removal, a system call
// or two on the data folder, is not on the path from a task's exit to the
// engine's decision on it (the next task of a chain waits for that).
func (f finishInfo) report(status syscall.WaitStatus, waitErr error, report func(Event)) {
	ev, present := finishEvent(f, status, waitErr)
	report(ev)
	sharedInputs.release(f.input)
	if present {
		// The report woke its reader (the engine's loop) onto this
		// goroutine's processor, where it would wait behind the removal's
		// system calls: let it run first.
		runtime.Gosched()
		if err := f.cleanScratch(present); err != nil && f.logger() != nil {
			f.logger().Warn("task scratch files not removed", "task", f.taskID, "attempt", f.attempt, "err", err)
		}
	}
	if f.p != nil && f.p.cleaned != nil {
		f.p.cleaned(f.taskID)
	}
}

// finishEvent builds the Finished event from the reaped status (or the
// error that prevented reaping) and the output file, and tells whether
// something is at the output path. A failed exit is the reason even when
// the output is also bad; the output is attached whenever it is
// acceptable. The event says Cleaned: the caller removes the attempt's
// files right after reporting it (see finishInfo.report).
func finishEvent(fin finishInfo, status syscall.WaitStatus, waitErr error) (ev Event, present bool) {
	ev = Event{Kind: Finished, TaskID: fin.taskID, Attempt: fin.attempt, Cleaned: true}
	code, exitReason := exitResult(status, waitErr)
	ev.ExitCode = code
	out, outErr := readOutput(fin.outputPath, fin.maxOutputBytes)
	if out == nil && outErr == nil {
		out, outErr = fin.orkOutput()
	}
	switch {
	case exitReason != "":
		ev.Err = exitReason
	case outErr != nil:
		ev.Err = outErr.Error()
	default:
		ev.OK = true
	}
	if outErr == nil {
		ev.Output = out
	}
	ev.At = time.Now()
	return ev, out != nil || outErr != nil
}

// cleanScratch removes what the task left at ORKWAL_OUTPUT once it is
// read (present: readOutput found something there); its input is shared
// (see inputs.go). A task that wrote no output costs no system call
// here. What it could not remove stays until its run is removed (the
// engine sweeps a removed run's files).
func (f finishInfo) cleanScratch(present bool) error {
	if !present {
		return nil
	}
	return removeScratchFile(f.outputPath)
}

// orkOutput is the value of the task's last ORK_OUTPUT:<json> line (see
// outputLines), nil when it wrote none; called once its log is complete.
func (f finishInfo) orkOutput() ([]byte, error) {
	switch {
	case f.capped != nil:
		if f.capped.lines == nil {
			return nil, nil // it wrote nothing
		}
		return f.capped.lines.output()
	case f.logPath != "": // uncapped: the child wrote its log itself
		lines := newOutputLines(f.maxOutputBytes)
		if err := lines.feedFile(f.logPath, f.fileFrom); err != nil {
			return nil, fmt.Errorf("read the log for %s: %w", orkOutputPrefix, err)
		}
		return lines.output()
	}
	return nil, nil
}

// exitResult turns a wait status into an exit code (-1 when killed by a
// signal or when the process could not be reaped) and a reason ("" on
// success), worded as os/exec words them ("exit status 3").
func exitResult(status syscall.WaitStatus, waitErr error) (code int, reason string) {
	switch {
	case waitErr != nil:
		return -1, waitErr.Error()
	case status.Signaled():
		return -1, "killed by signal: " + status.Signal().String()
	case status.Exited() && status.ExitStatus() == 0:
		return 0, ""
	case status.Exited():
		return status.ExitStatus(), "exit status " + strconv.Itoa(status.ExitStatus())
	}
	return -1, fmt.Sprintf("unexpected wait status %#x", uint32(status))
}

// readOutput reads the task's output file: nil when absent, an error when it
// is not a regular file (see openRegular), larger than maxBytes (if > 0) or
// not valid JSON. Surrounding whitespace (e.g. echo's newline) is trimmed.
func readOutput(path string, maxBytes int64) ([]byte, error) {
	f, err := openRegular(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, errNotRegular):
		return nil, fmt.Errorf("output: %w", err)
	case err != nil:
		return nil, fmt.Errorf("open output: %w", err)
	}
	defer f.Close()
	tooLarge := fmt.Errorf("output larger than %d bytes", maxBytes)
	var r io.Reader = f
	if maxBytes > 0 {
		if st, err := f.Stat(); err == nil && st.Size() > maxBytes {
			return nil, tooLarge
		}
		// The file may still grow (a straggler writing to it): read at most
		// one byte past the cap.
		r = io.LimitReader(f, maxBytes+1)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read output: %w", err)
	}
	if maxBytes > 0 && int64(len(data)) > maxBytes {
		return nil, tooLarge
	}
	if !json.Valid(data) {
		return nil, errors.New("output is not valid JSON")
	}
	return bytes.TrimSpace(data), nil
}

// processHandle is the Handle of a process started by Process.
//
// It lives as long as its process runs: 48 bytes, its pid an int32 beside
// its flags (Linux's pids stay below 2^22) where an int and the flags'
// padding made 64 (issue 27: memory per running task).
type processHandle struct {
	defaultGrace time.Duration

	mu        sync.Mutex
	reason    string      // of the first Stop
	killTimer *time.Timer // SIGKILL escalation, armed by Stop
	pid       int32
	exited    bool // the leader exited (it may not be reaped yet)
	stopping  bool // Stop was called
	killed    bool // the escalation sent SIGKILL
}

// Stop sends SIGTERM to the process group, then SIGKILL after grace (or the
// configured default when grace <= 0) unless the leader has exited by then.
// Only the first call has an effect; calls after the exit do nothing.
func (h *processHandle) Stop(grace time.Duration, reason string) {
	if grace <= 0 {
		grace = h.defaultGrace
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.exited || h.stopping {
		return
	}
	h.stopping, h.reason = true, reason
	_ = signalGroup(int(h.pid), syscall.SIGTERM)
	h.killTimer = time.AfterFunc(grace, h.kill)
}

// kill is the SIGKILL escalation, a no-op once the leader has exited.
func (h *processHandle) kill() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.exited {
		h.killed = signalGroup(int(h.pid), syscall.SIGKILL) == nil
	}
}

// stopNote is the line the attempt's log ends with when Stop ended it: ""
// when it was not stopped (or there is no handle).
func (h *processHandle) stopNote() string {
	if h == nil {
		return ""
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.stopping {
		return ""
	}
	return stopNote(h.reason, h.killed)
}

// stopNote is the line "[orkwal: REASON]" a stopped attempt's log ends
// with; killed: the process outlived SIGTERM and its grace, and got
// SIGKILL, which the line says.
func stopNote(reason string, killed bool) string {
	if reason == "" {
		reason = "stopped"
	}
	if killed {
		reason += ": SIGTERM, then SIGKILL"
	}
	return "\n[orkwal: " + reason + "]\n"
}

// markExited records that the leader exited, disarming the escalation. It is
// called before the leader is reaped, so no signal sent under h.mu can reach
// a process that reused the pid.
func (h *processHandle) markExited() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.exitedLocked()
}

// reapExited reaps the leader through pidfd with waitid if it has exited (see
// reapPidfd), and marks it exited in the same step, under h.mu: a Stop
// either signals the group before the reap, while the zombie still holds
// the pid and thus the group id, or finds it exited and signals nothing.
// No signal sent under h.mu can reach a process that reused the pid.
func (h *processHandle) reapExited(waitid waitidFunc, pidfd int) (status syscall.WaitStatus, exited bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	status, exited, err = reapPidfd(waitid, pidfd, int(h.pid))
	if exited {
		h.exitedLocked()
	}
	return status, exited, err
}

// exitedLocked marks the leader exited and disarms the escalation; h.mu
// is held.
func (h *processHandle) exitedLocked() {
	h.exited = true
	if h.killTimer != nil {
		h.killTimer.Stop()
	}
}

// signalGroup sends sig to process group pgid. It refuses pgid <= 1:
// kill(-1) would signal every process and kill(0) the daemon's own group.
func signalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 1 {
		return fmt.Errorf("refusing to signal process group %d", pgid)
	}
	if err := syscall.Kill(-pgid, sig); err != nil {
		return fmt.Errorf("signal process group %d with %v: %w", pgid, sig, err)
	}
	return nil
}

// ProcStartTime returns the start time of process pid in clock ticks since
// boot (field 22 of /proc/pid/stat). Together with the pid it identifies a
// process across pid reuse, e.g. to tell at boot whether a pid recorded in a
// Started event still names the same process. The error wraps fs.ErrNotExist
// when there is no such process.
func ProcStartTime(pid int) (uint64, error) {
	data, err := procStat(pid)
	if err != nil {
		return 0, fmt.Errorf("start time of pid %d: %w", pid, err)
	}
	st, err := parseStatStartTime(data)
	if err != nil {
		return 0, fmt.Errorf("start time of pid %d: %w", pid, err)
	}
	return st, nil
}

// parseStatStartTime extracts field 22 (starttime) from the contents of a
// /proc/pid/stat file. Field 2 (comm) is parenthesised and may contain
// spaces and parentheses, so fields are counted after the last ')'.
func parseStatStartTime(stat []byte) (uint64, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, errors.New("malformed stat: no ')'")
	}
	// After comm come fields 3 (state), 4, ...: field 22 is the 20th.
	fields := bytes.Fields(stat[end+1:])
	const startTimeIndex = 22 - 3
	if len(fields) <= startTimeIndex {
		return 0, fmt.Errorf("malformed stat: %d fields after comm", len(fields))
	}
	st, err := strconv.ParseUint(string(fields[startTimeIndex]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("malformed stat starttime: %w", err)
	}
	return st, nil
}

// KillGroupIfSame sends SIGKILL to process group pid, but only if process
// pid still exists and its start time (see ProcStartTime) equals startTime,
// i.e. the pid was not reused by another process. killed reports whether the
// signal was sent; a process that is gone is not an error.
//
// If the leader is gone (as it is after a daemon crash, through Pdeathsig)
// the group is killed anyway: its remaining members can only be the task's
// own children, since Linux does not reuse a pid that is a live group id.
func KillGroupIfSame(pid int, startTime uint64) (killed bool, err error) {
	if pid <= 1 {
		return false, fmt.Errorf("kill group %d: invalid pid", pid)
	}
	st, err := ProcStartTime(pid)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		// The leader is gone, but its group may live on in background
		// children (Pdeathsig only reaches the leader). Linux never hands
		// out a pid still in use as a process group id, so any process
		// in group pid belongs to the task that was recorded.
		return killGroup(pid)
	}
	if err != nil {
		return false, fmt.Errorf("kill group %d: %w", pid, err)
	}
	if st != startTime {
		return false, nil
	}
	return killGroup(pid)
}

// killGroup SIGKILLs process group pgid; false when the group is empty.
func killGroup(pgid int) (bool, error) {
	err := signalGroup(pgid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("kill group %d: %w", pgid, err)
	}
	return true, nil
}

package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay/workflow"
	"github.com/orkwal/orkwal/wal"
)

// failFsyncs fails every fsync with EIO while failing is set.
func failFsyncs(failing *atomic.Bool) wal.Fault {
	return func(op wal.Op, _ uint64) error {
		if op == wal.OpSync && failing.Load() {
			return fmt.Errorf("injected: %w", syscall.EIO)
		}
		return nil
	}
}

// preparing is a manual executor that is also a Preparer: it records when
// each job was prepared, started or aborted.
type preparing struct {
	*manual
	prepared chan executors.Job // each Prepare
	aborted  chan executors.Job // each Abort
	started  atomic.Int32       // Starts of prepared jobs
}

func newPreparing(t *testing.T, dir string) *preparing {
	return &preparing{manual: newManual(t, dir), prepared: make(chan executors.Job, 10), aborted: make(chan executors.Job, 10)}
}

func (p *preparing) Prepare(job executors.Job) (executors.Prepared, error) {
	p.prepared <- job
	return &preparedJob{p: p, job: job}, nil
}

type preparedJob struct {
	p   *preparing
	job executors.Job
}

func (j *preparedJob) Start(report func(executors.Event)) (executors.Handle, error) {
	j.p.started.Add(1)
	return j.p.manual.Start(j.job, report) // asserts the dispatch is durable
}

func (j *preparedJob) Abort() { j.p.aborted <- j.job }

// TestPrepareOverlapsTheDispatchFsync: an executor that is a Preparer is
// asked to prepare a job while the frame that dispatches it is being
// fsynced, and to start it only once that fsync returned: here two jobs
// of one frame, which the launcher spawns (a lone start is spawned by the
// loop: see TestLoneStartSpawnsOnTheLoop).
func TestPrepareOverlapsTheDispatchFsync(t *testing.T) {
	dir := t.TempDir()
	p := newPreparing(t, dir)
	var hold, synced atomic.Bool
	overlapped := make(chan bool, 1)
	e := openWithFault(t, dir, p, func(op wal.Op, _ uint64) error {
		if op != wal.OpSync || !hold.Load() {
			return nil
		}
		hold.Store(false)
		select { // the trigger's frame, which dispatches a: hold its fsync
		case <-p.prepared:
			overlapped <- p.started.Load() == 0
		case <-time.After(10 * time.Second):
			overlapped <- false
		}
		synced.Store(true)
		return nil
	})
	defer e.Close()
	put(t, e, flat("two", 2))
	hold.Store(true)
	trigger(t, e, "two")
	if !<-overlapped {
		t.Fatal("a job was not prepared (or was started) while its dispatch frame was being fsynced")
	}
	js := p.nextSorted(2, byTaskName)
	if !synced.Load() || p.started.Load() != 2 || js[0].TaskName != "a" || js[1].TaskName != "b" {
		t.Fatalf("started %s and %s (%d starts) before their dispatch frame's fsync returned", js[0].TaskName, js[1].TaskName, p.started.Load())
	}
}

// TestLoneStartSpawnsOnTheLoop: the one process start of a turn with
// nothing else waiting (a chain's next step) is prepared by the launcher
// while its frame is fsynced, and spawned by the loop itself, with no
// goroutine to wake after the fsync, only once its dispatch is durable
// (manual.Start asserts it); a turn's several starts are spawned by the
// launcher.
func TestLoneStartSpawnsOnTheLoop(t *testing.T) {
	dir := t.TempDir()
	w := &whereRun{preparing: newPreparing(t, dir), on: map[string]string{}}
	e := openWithFault(t, dir, w, nil)
	defer e.Close()
	put(t, e, diamond("process"))
	trigger(t, e, "diamond")
	w.finish(w.next(), true) // a; then b and c in one turn
	bc := w.nextSorted(2, byTaskName)
	// b's and c's starts are over: at d's turn the launcher runs at most
	// the removals of a's and b's scratch files, and has workers free.
	e.launcher.wait()
	for _, j := range bc {
		w.finish(j, true)
	}
	w.next() // d
	want := map[string]string{
		"prepare a": "launcher", "start a": "loop",
		"prepare b": "launcher", "start b": "launcher",
		"prepare c": "launcher", "start c": "launcher",
		"prepare d": "launcher", "start d": "loop",
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for step, role := range want {
		if w.on[step] != role {
			t.Errorf("%s on the %s, want the %s", step, w.on[step], role)
		}
	}
}

// TestLauncherStartsAtOnceBesideQueuedJobs: a job that submit queued
// stays queued until the worker it woke or started runs, which under load
// takes a while: while a worker is free for each queued job and one more,
// a job submitted now starts at once, behind none of them, and a lone start
// is spawned on the loop (TestLoneStartSpawnsOnTheLoop failed 2 times in
// 200 under load when only an empty queue counted: the removal of b's
// scratch files was still queued, its worker woken, at d's turn); with
// every worker taken, by running and queued jobs, it would wait.
func TestLauncherStartsAtOnceBesideQueuedJobs(t *testing.T) {
	for _, c := range []struct {
		running, queued int
		want            bool
	}{
		{0, 0, true}, {0, 1, true}, {1, launchWorkers - 2, true},
		{launchWorkers - 1, 0, true}, {launchWorkers - 1, 1, false},
		{0, launchWorkers, false}, {launchWorkers, 0, false},
	} {
		// The state submit leaves before the workers it woke have run.
		l := newLauncher(launchWorkers)
		l.workers, l.running, l.queue = c.running+c.queued, c.running, make([]func(), c.queued)
		if got := l.startsAtOnce(); got != c.want {
			t.Errorf("%d jobs running, %d queued: startsAtOnce %v, want %v", c.running, c.queued, got, c.want)
		}
	}
}

// whereRun is a Preparer that notes which goroutine prepared and started
// each job: the loop, the launcher, or another.
type whereRun struct {
	*preparing
	mu sync.Mutex
	on map[string]string // "prepare a", "start a": "loop", "launcher" or "other"
}

func (w *whereRun) note(step string) {
	buf := make([]byte, 64<<10)
	stack := string(buf[:runtime.Stack(buf, false)])
	role := "other"
	switch {
	case strings.Contains(stack, "engine.(*Engine).loop("):
		role = "loop"
	case strings.Contains(stack, "engine.(*launcher).work("):
		role = "launcher"
	}
	w.mu.Lock()
	w.on[step] = role
	w.mu.Unlock()
}

func (w *whereRun) Prepare(job executors.Job) (executors.Prepared, error) {
	w.note("prepare " + job.TaskName)
	j, err := w.preparing.Prepare(job)
	return &noted{j.(*preparedJob), w}, err
}

type noted struct {
	*preparedJob
	w *whereRun
}

func (n *noted) Start(report func(executors.Event)) (executors.Handle, error) {
	n.w.note("start " + n.job.TaskName)
	return n.preparedJob.Start(report)
}

// TestPreparedJobAbortedWhenDispatchFails: when the frame that dispatches a
// prepared job cannot be made durable, the job is aborted and never
// started (a start that sees the failure before it prepares prepares
// nothing).
func TestPreparedJobAbortedWhenDispatchFails(t *testing.T) {
	dir := t.TempDir()
	p := newPreparing(t, dir)
	var failing atomic.Bool
	e := openWithFault(t, dir, p, failFsyncs(&failing))
	defer e.Close()
	put(t, e, diamond("process"))
	failing.Store(true)
	if _, err := e.Trigger("diamond", nil, "test"); err == nil {
		t.Fatal("trigger acknowledged though its frame failed")
	}
	e.launcher.wait()
	if prepared, aborted := len(p.prepared), len(p.aborted); prepared != aborted || prepared > 1 {
		t.Fatalf("%d jobs prepared, %d aborted: want the same, at most 1 (a)", prepared, aborted)
	}
	if n := p.started.Load(); n != 0 {
		t.Fatalf("%d prepared jobs started though their dispatch is not durable", n)
	}
}

// TestFailedFrameWithUnpreparableTask: a task whose preparation fails (its
// command is not found) dispatched in a frame whose fsync fails leaves the
// engine fail-stop, not crashed, and leaves no scratch file.
func TestFailedFrameWithUnpreparableTask(t *testing.T) {
	dir := t.TempDir()
	var failing atomic.Bool
	e := openWithFault(t, dir, executors.NewProcess(executors.ProcessConfig{}), failFsyncs(&failing))
	defer e.Close()
	put(t, e, &workflow.Spec{Name: "bad", Tasks: []*workflow.Task{
		{Name: "a", Executor: "process", Command: []string{"orkwal-test-no-such-command"}}}})
	failing.Store(true)
	if _, err := e.Trigger("bad", nil, "test"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("trigger in a failing frame: %v, want ErrUnavailable", err)
	}
	e.launcher.wait()
	if e.Err() == nil {
		t.Fatal("engine not fail-stop after a failed fsync")
	}
	if des, _ := os.ReadDir(filepath.Join(dir, "work")); len(des) != 0 {
		t.Fatalf("work/ holds %d folders after a failed dispatch", len(des))
	}
}

// abortWatch is a Preparer whose Abort notes whether the caller of the
// failed command already had its answer.
type abortWatch struct {
	*preparing
	answered chan struct{} // closed by the test once Trigger returned
	late     atomic.Bool   // Abort ran after that
}

func (a *abortWatch) Prepare(job executors.Job) (executors.Prepared, error) {
	j, err := a.preparing.Prepare(job)
	return &watchedJob{j.(*preparedJob), a}, err
}

type watchedJob struct {
	*preparedJob
	a *abortWatch
}

// Abort waits a moment for the answer, which must not come before it.
func (j *watchedJob) Abort() {
	select {
	case <-j.a.answered:
		j.a.late.Store(true)
	case <-time.After(200 * time.Millisecond):
	}
	j.preparedJob.Abort()
}

// TestFailedFrameAbortsBeforeTheTurnEnds: the starts of a frame that failed
// have removed what they prepared before the turn ends (here: before the
// command that failed is answered), so that a later turn that dispatches
// the same attempt again never has its files removed by them.
func TestFailedFrameAbortsBeforeTheTurnEnds(t *testing.T) {
	dir := t.TempDir()
	a := &abortWatch{preparing: newPreparing(t, dir), answered: make(chan struct{})}
	var failing atomic.Bool
	e := openWithFault(t, dir, a, func(op wal.Op, _ uint64) error {
		if op != wal.OpSync || !failing.Load() {
			return nil
		}
		select { // fail the fsync once the job is prepared
		case <-a.prepared:
		case <-time.After(10 * time.Second):
		}
		return fmt.Errorf("injected: %w", syscall.EIO)
	})
	defer e.Close()
	put(t, e, diamond("process"))
	failing.Store(true)
	_, err := e.Trigger("diamond", nil, "test")
	close(a.answered)
	if err == nil {
		t.Fatal("trigger acknowledged though its frame failed")
	}
	select {
	case <-a.aborted:
	default:
		t.Fatal("the failed frame's prepared job was not aborted before the turn ended")
	}
	if a.late.Load() {
		t.Fatal("the prepared job was aborted after the turn that failed had ended")
	}
}

// crashMidAttempt starts the first attempt of a diamond run, calls leave
// to make the files its executor would have made, crashes the engine and
// boots a new one, returning the interrupted attempt's job and the second
// attempt's, which the reboot dispatched.
func crashMidAttempt(t *testing.T, leave func(a executors.Job)) (a, a2 executors.Job) {
	t.Helper()
	dir := t.TempDir()
	m := newManual(t, dir)
	e := openEngine(t, dir, m, 8)
	put(t, e, diamond("process"))
	trigger(t, e, "diamond")
	a = m.next()
	leave(a)
	crash(e)
	m2 := newManual(t, dir)
	e2 := openEngine(t, dir, m2, 8)
	t.Cleanup(func() { e2.Close() })
	return a, m2.next()
}

// writeFile writes data to path, making its folder.
func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBootRemovesScratchOfInterruptedAttempts: an attempt a crash
// interrupted loses its scratch files at boot, once its interruption is
// durable.
func TestBootRemovesScratchOfInterruptedAttempts(t *testing.T) {
	suffixes := []string{".input.json", ".output.json"}
	a, a2 := crashMidAttempt(t, func(a executors.Job) {
		for _, suffix := range suffixes { // what a process executor makes
			writeFile(t, a.Scratch+suffix, "{}")
		}
	})
	if a2.Attempt != 2 || a2.Scratch == a.Scratch {
		t.Fatalf("after the crash: attempt %d at %s", a2.Attempt, a2.Scratch)
	}
	for _, suffix := range suffixes {
		if _, err := os.Stat(a.Scratch + suffix); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("scratch file %s of the interrupted attempt after boot: %v, want it removed", suffix, err)
		}
	}
}

// TestBootCompletesTheLogOfAnInterruptedAttempt: boot completes the log
// of an attempt a crash interrupted (executors.RecoverLog: the capped
// log's ring, then a line saying so; TestRecoverLogCompletesAnInterruptedLog
// covers the ring) and leaves no ring beside it. Boot used to remove the
// ring unread, and the log kept its head only. The ring here is of version
// 1, as a crash of a version before 2026-12 leaves at an upgrade.
func TestBootCompletesTheLogOfAnInterruptedAttempt(t *testing.T) {
	a, a2 := crashMidAttempt(t, func(a executors.Job) {
		writeFile(t, a.LogPath, "step 1 of 3\n") // the head, H = 12 bytes
		// The ring (docs/format.md, Task logs): magic, H, T, P, then T
		// bytes holding the P = 11 bytes given to it so far.
		hdr := binary.LittleEndian.AppendUint64([]byte("orkring1"), 12)
		hdr = binary.LittleEndian.AppendUint64(hdr, 12)
		hdr = binary.LittleEndian.AppendUint64(hdr, 11)
		writeFile(t, a.LogPath+".tail", string(hdr)+"step 2 of 3")
	})
	if a2.Attempt != 2 || a2.LogPath == a.LogPath {
		t.Fatalf("after the crash: attempt %d logging to %s", a2.Attempt, a2.LogPath)
	}
	got, err := os.ReadFile(a.LogPath)
	if want := "step 1 of 3\nstep 2 of 3\n[orkwal: attempt interrupted: the daemon stopped]\n"; err != nil || string(got) != want {
		t.Fatalf("the interrupted attempt's log after boot: %q, %v; want %q", got, err, want)
	}
	if _, err := os.Stat(a.LogPath + ".tail"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the ring beside the log after boot: %v, want it removed", err)
	}
}

// TestBootCompletesTheLogOnceAfterACrashDuringItsCompletion: a boot that
// completed the log of an interrupted attempt and stopped before the
// interruption was durable (a crash, a power cut, a failed commit) is
// followed by one that completes it again: the log is completed once.
// Before, the second boot appended the line again, and, when the first
// one had stopped before it removed the ring, the ring's bytes too.
func TestBootCompletesTheLogOnceAfterACrashDuringItsCompletion(t *testing.T) {
	const note = "\n[orkwal: attempt interrupted: the daemon stopped]\n"
	for _, tc := range []struct {
		name, ring, want string
	}{
		{"no ring", "", "step 1 of 3\n" + note},
		{"ring", "step 2 of 3", "step 1 of 3\nstep 2 of 3" + note},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := crashMidAttempt(t, func(a executors.Job) {
				writeFile(t, a.LogPath, "step 1 of 3\n")
				if tc.ring != "" { // version 1: magic, H, T, P, the bytes
					hdr := binary.LittleEndian.AppendUint64([]byte("orkring1"), 12)
					hdr = binary.LittleEndian.AppendUint64(hdr, 12)
					hdr = binary.LittleEndian.AppendUint64(hdr, uint64(len(tc.ring)))
					writeFile(t, a.LogPath+".tail", string(hdr)+tc.ring)
				}
				// The boot that stopped after completing the log.
				if err := executors.RecoverLog(a.LogPath); err != nil {
					t.Fatal(err)
				}
			})
			if got, err := os.ReadFile(a.LogPath); err != nil || string(got) != tc.want {
				t.Fatalf("the interrupted attempt's log after the second boot: %q, %v; want %q", got, err, tc.want)
			}
			if _, err := os.Stat(a.LogPath + ".tail"); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the tail beside the log after boot: %v, want it removed", err)
			}
		})
	}
}

// TestBootCompletesEveryInterruptedLog: a boot after a crash that
// interrupted more attempts than recoverLogs has workers completes each
// attempt's log, once.
func TestBootCompletesEveryInterruptedLog(t *testing.T) {
	const n = 40
	const note = "\n[orkwal: attempt interrupted: the daemon stopped]\n"
	dir := t.TempDir()
	m := newManual(t, dir)
	e := openEngine(t, dir, m, n)
	put(t, e, &workflow.Spec{Name: "many", Tasks: []*workflow.Task{{Name: "t", Executor: "process", Command: []string{"x"}, Parallel: n}}})
	trigger(t, e, "many")
	var logs []string
	for range n {
		a := m.next()
		writeFile(t, a.LogPath, a.LogPath+"\n")
		logs = append(logs, a.LogPath)
	}
	crash(e)
	e2 := openEngine(t, dir, newManual(t, dir), n)
	t.Cleanup(func() { e2.Close() })
	for _, log := range logs {
		if got, err := os.ReadFile(log); err != nil || string(got) != log+"\n"+note {
			t.Errorf("%s after boot: %q, %v; want it completed once", log, got, err)
		}
	}
}

// TestLoneStartNeverWaitsBehindTheLauncher: a lone start is spawned by the
// loop once the launcher has prepared it (see loneStart); while every
// launcher worker is busy (starts and removals of earlier turns: a
// backlog) the loop must not wait behind them for its one start, or it
// answers nothing (no command, no executor report) for as long as the
// backlog lasts. With every worker busy the chain's next step goes to the
// launcher; with one free, its preparation starts at once on it.
func TestLoneStartNeverWaitsBehindTheLauncher(t *testing.T) {
	for _, busy := range []int{launchWorkersFor(16) - 1, launchWorkersFor(16)} { // openWithFault's default --max-concurrent
		t.Run(fmt.Sprintf("busy=%d", busy), func(t *testing.T) { loneStartBehindBusyLauncher(t, busy) })
	}
}

func loneStartBehindBusyLauncher(t *testing.T, workers int) {
	dir := t.TempDir()
	p := newPreparing(t, dir)
	e := openWithFault(t, dir, p, nil)
	defer e.Close()
	put(t, e, &workflow.Spec{Name: "chain", Tasks: []*workflow.Task{
		{Name: "a", Executor: "process", Command: []string{"true"}},
		{Name: "b", Executor: "process", Command: []string{"true"}, DependsOn: []string{"a"}},
	}})
	id := trigger(t, e, "chain")
	a := p.next()
	<-p.prepared // a's
	// Launcher workers held by jobs of an earlier turn.
	block, busy := make(chan struct{}), make(chan struct{})
	for range workers {
		e.launcher.submit(func() { busy <- struct{}{}; <-block })
	}
	for range workers {
		<-busy
	}
	unblock := sync.OnceFunc(func() { close(block) })
	defer unblock()
	p.finish(a, true) // b's dispatch: the turn's one start, nothing waiting
	waitFor(t, e, "b dispatched", func() bool { return taskView(e, id, "b").Status == "dispatched" })
	answered := make(chan error, 1)
	go func() { _, err := e.Trigger("chain", nil, "test"); answered <- err }()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("trigger while the launcher is busy: %v", err)
		}
	case <-time.After(10 * time.Second):
		unblock()
		t.Fatal("the loop answered no command while the launcher was busy: it waits for its lone start's preparation behind the launcher's backlog")
	}
	unblock()
	// b, and the second run's a: the launcher starts them in any order.
	if b := p.nextSorted(2, byTaskName)[1]; b.TaskName != "b" || b.RunID != id {
		t.Fatalf("started %s of %s, want b of %s", b.TaskName, b.RunID, id)
	}
}

// TestLauncherKeepsItsWorkers: the jobs of one turn after another are run
// by the workers started for the first ones, parked in between, not by a
// worker started for every turn (its creation and its stack's growth cost
// about as much as a start's preparation); close ends them all.
func TestLauncherKeepsItsWorkers(t *testing.T) {
	l := newLauncher(launchWorkers)
	var ran atomic.Int32
	for turn := 0; turn < 50; turn++ {
		jobs := make([]func(), 1+turn%launchWorkers)
		for i := range jobs {
			jobs[i] = func() { ran.Add(1) }
		}
		l.submit(jobs...)
		l.wait()
	}
	l.mu.Lock()
	started, workers := l.started, l.workers
	l.mu.Unlock()
	if started > launchWorkers || workers != started {
		t.Fatalf("%d workers started for 50 turns, %d left: want at most %d, all kept", started, workers, launchWorkers)
	}
	l.close()
	if l.workers != 0 {
		t.Fatalf("%d workers left after close", l.workers)
	}
	if n := ran.Load(); n != 123 {
		t.Fatalf("%d jobs ran, want 123", n)
	}
}

// TestLauncherWorkersFollowTheSlots: the launcher runs as many jobs at
// once as there are slots, at least 2 and at most launchWorkers: with 2
// slots, 2 workers prepare a turn's starts (4 contended for 2 cores with
// the running processes), and a job beyond them waits in the queue.
func TestLauncherWorkersFollowTheSlots(t *testing.T) {
	for _, c := range []struct{ slots, workers int }{{1, 2}, {2, 2}, {3, 3}, {16, launchWorkers}} {
		t.Run(fmt.Sprintf("slots=%d", c.slots), func(t *testing.T) {
			dir := t.TempDir()
			e, err := Open(Config{DataDir: dir, Logger: quiet, MaxConcurrent: c.slots,
				Executors: map[string]executors.Executor{"process": newManual(t, dir)}})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			block, running := make(chan struct{}), make(chan struct{}, c.workers+1)
			for range c.workers + 1 {
				e.launcher.submit(func() { running <- struct{}{}; <-block })
			}
			for range c.workers {
				<-running
			}
			e.launcher.mu.Lock()
			started, queued := e.launcher.started, len(e.launcher.queue)
			e.launcher.mu.Unlock()
			close(block)
			if started != c.workers || queued != 1 {
				t.Fatalf("%d workers started, %d jobs queued; want %d and 1", started, queued, c.workers)
			}
		})
	}
}

package executors

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/orkwal/orkwal/internal/benchtest"
	"golang.org/x/sys/unix"
)

// noReactorEnv, when set, makes the tests' Process executors take the way
// without the reactor (see TestProcessWithoutReactor).
const noReactorEnv = "ORKWAL_TEST_NO_REACTOR"

// newTestProcess is NewProcess, without the reactor under noReactorEnv.
func newTestProcess(cfg ProcessConfig) *Process {
	p := NewProcess(cfg)
	p.noReactor = os.Getenv(noReactorEnv) != ""
	return p
}

// TestProcessWithoutReactor runs the process executor's tests again, in a
// child test binary, the way without the reactor: the way of a kernel
// without pidfds (before Linux 5.3) or of an epoll instance that could not
// be created.
func TestProcessWithoutReactor(t *testing.T) {
	if os.Getenv(noReactorEnv) != "" {
		t.Skip("already without the reactor")
	}
	if testing.Short() {
		t.Skip("runs the process tests again")
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run", "^(TestProcess|TestPythonLogCap)", "-test.count=1")
	cmd.Env = append(os.Environ(), noReactorEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("process tests without the reactor: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "PASS") {
		t.Fatalf("no PASS in the output:\n%s", out)
	}
}

// TestProcessRunningHoldsNoGoroutine: with the reactor, a running child
// holds no goroutine (its pidfd and its log pipe are watched by the
// reactor's one goroutine); without it, one awaits its exit and one copies
// its log. Not parallel: it counts the goroutines of the whole test process.
func TestProcessRunningHoldsNoGoroutine(t *testing.T) {
	if os.Getenv(noReactorEnv) != "" {
		t.Skip("measures both ways itself")
	}
	const n = 64
	for _, tt := range []struct {
		name      string
		noReactor bool
	}{{"reactor", false}, {"without reactor", true}} {
		t.Run(tt.name, func(t *testing.T) {
			p := NewProcess(ProcessConfig{})
			p.noReactor = tt.noReactor
			theReactor() // started once for the process: not a child's
			events := make(chan Event, 2*n)
			before := runtime.NumGoroutine()
			var handles []Handle
			for i := range n {
				job := newTestJob(t, "sleep", "60")
				job.TaskID = fmt.Sprintf("t%d", i)
				job.MaxLogBytes = 1 << 20 // the capped log's pipe too
				h, err := p.Start(job, func(ev Event) { events <- ev })
				if err != nil {
					t.Fatal(err)
				}
				handles = append(handles, h)
			}
			defer func() {
				for _, h := range handles {
					h.Stop(time.Millisecond, "stopped by the test")
				}
				for range n {
					if ev := nextEvent(t, events); ev.Kind != Finished || ev.Err != "killed by signal: terminated" {
						t.Errorf("event %+v, want Finished by SIGTERM", ev)
					}
				}
			}()
			for range n {
				if ev := nextEvent(t, events); ev.Kind != Started {
					t.Fatalf("event %+v, want Started", ev)
				}
			}
			if tt.noReactor {
				// Both goroutines of each child exist from its Start on.
				// The count is process-wide: a goroutine of the subtest
				// before (a child's last report) may end meanwhile, so a
				// few fewer are allowed; the reactor's bound is n/16.
				if d := runtime.NumGoroutine() - before; d < 2*n-n/16 {
					t.Errorf("%d running children without the reactor hold %d more goroutines, want about %d", n, d, 2*n)
				}
				return
			}
			// The goroutines that reported Started end right after: wait
			// for them, no longer than the guard.
			deadline := time.Now().Add(guard)
			for {
				d := runtime.NumGoroutine() - before
				if d <= n/16 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d running children hold %d more goroutines (%d → %d)", n, d, before, before+d)
				}
				runtime.Gosched()
			}
		})
	}
}

// TestRunningProcessKeepsNoTaskOutput: with the reactor, a running
// process keeps nothing of what its start needed (its taskOutput: the
// child's end of the pipe, the uncapped log's file), only its proc and its
// handle (issue 27: memory per running task); what its Finished needs
// (the ORK_OUTPUT line, capped or not) is kept in its finishInfo
// (TestProcessOrkOutputLine).
func TestRunningProcessKeepsNoTaskOutput(t *testing.T) {
	for _, maxLog := range []int64{0, 1 << 20} {
		p := NewProcess(ProcessConfig{})
		events := make(chan Event, 2)
		job := newTestJob(t, "sleep", "60")
		job.MaxLogBytes = maxLog
		out, h := startKeepingOutput(t, p, job, func(ev Event) { events <- ev })
		if ev := nextEvent(t, events); ev.Kind != Started {
			t.Fatalf("event %+v, want Started", ev)
		}
		runtime.GC()
		kept := out.Value() != nil
		h.Stop(time.Millisecond, "stopped by the test")
		if ev := nextEvent(t, events); ev.Kind != Finished {
			t.Fatalf("event %+v, want Finished", ev)
		}
		if kept {
			t.Errorf("log cap %d: a running process keeps its taskOutput", maxLog)
		}
	}
}

// startKeepingOutput prepares and starts job, and returns a weak pointer
// to its taskOutput.
func startKeepingOutput(t *testing.T, p *Process, job Job, report func(Event)) (weak.Pointer[taskOutput], Handle) {
	t.Helper()
	pp, err := p.prepare(job)
	if err != nil {
		t.Fatal(err)
	}
	out := weak.Make(pp.out)
	h, err := pp.Start(report)
	if err != nil {
		t.Fatal(err)
	}
	return out, h
}

// BenchmarkProcessWays: 500 `true` tasks with a capped log, 16 running at a
// time, the reactor's way and the way without it in the same iteration
// (which goes first alternates); the daemon side's CPU per task
// (RUSAGE_SELF: the children's own CPU is not counted) and tasks/s.
//
//	go test -run '^$' -bench BenchmarkProcessWays -benchtime 3x ./executors/
func BenchmarkProcessWays(b *testing.B) {
	const n, conc = 500, 16
	dir := b.TempDir()
	run := func(noReactor bool) (wall, cpu time.Duration) {
		p := NewProcess(ProcessConfig{})
		p.noReactor = noReactor
		slots := make(chan struct{}, conc)
		done := make(chan Event, n)
		cpu0, start := benchtest.SelfCPU(), time.Now()
		for i := range n {
			slots <- struct{}{}
			job := Job{
				TaskID: fmt.Sprintf("t%d", i), Attempt: 1, ParallelCount: 1,
				Command:     []string{"true"},
				LogPath:     filepath.Join(dir, "logs", fmt.Sprintf("t%d.log", i)),
				Scratch:     filepath.Join(dir, "scratch", fmt.Sprintf("t%d", i)),
				MaxLogBytes: 10 << 20,
			}
			if _, err := p.Start(job, func(ev Event) {
				if ev.Kind == Finished {
					<-slots
					done <- ev
				}
			}); err != nil {
				b.Fatal(err)
			}
		}
		for range n {
			if ev := <-done; !ev.OK {
				b.Fatalf("Finished = %+v", ev)
			}
		}
		return time.Since(start), benchtest.SelfCPU() - cpu0
	}
	var wall, cpu [2]time.Duration // [0] the reactor, [1] without
	for i := range b.N {
		for k := range 2 {
			way := (i + k) % 2
			w, c := run(way == 1)
			wall[way] += w
			cpu[way] += c
		}
	}
	per := float64(n * b.N)
	b.ReportMetric(float64(cpu[0].Microseconds())/per, "reactor-cpu-µs/task")
	b.ReportMetric(float64(cpu[1].Microseconds())/per, "without-cpu-µs/task")
	b.ReportMetric(per/wall[0].Seconds(), "reactor-tasks/s")
	b.ReportMetric(per/wall[1].Seconds(), "without-tasks/s")
}

// handDrivenReactor is a reactor with no loop goroutine: a test calls its
// methods itself.
func handDrivenReactor(t *testing.T) *reactor {
	t.Helper()
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(epfd) })
	return &reactor{epfd: epfd, buf: make([]byte, copyBufSize), finisher: newFinisher(finisherIdle), waitid: unix.Waitid}
}

// TestReactorDrainDeadlines drives a reactor's drain queue by hand (no
// loop goroutine, a clock given to expire): an exited proc whose pipe is
// still open is finished at its deadline and not before, one whose pipe
// reaches EOF first is finished then and skipped by the queue, and the
// deadline the loop waits for is always that of the first proc still
// draining.
func TestReactorDrainDeadlines(t *testing.T) {
	r := handDrivenReactor(t)
	finished := make(chan string, 3)
	writers := map[string]int{}
	newProc := func(name string) *proc {
		var pipe, stand [2]int
		if err := unix.Pipe2(pipe[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
			t.Fatal(err)
		}
		if err := unix.Pipe2(stand[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(stand[0]); unix.Close(stand[1]); unix.Close(pipe[1]) })
		writers[name] = pipe[1]
		// A pipe stands in for the pidfd: the test never calls exited.
		p := &proc{pid: -1, pidfd: stand[0], pipe: pipe[0], fin: finishInfo{taskID: name},
			report: func(ev Event) { finished <- ev.TaskID }}
		if err := r.add(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	next := func() string {
		t.Helper()
		select {
		case id := <-finished:
			return id
		case <-time.After(guard):
			t.Fatal("nothing finished within the guard time")
			return ""
		}
	}
	t0 := time.Now()
	drain := func(p *proc, exitAt time.Duration) {
		p.exit = &procExit{deadline: t0.Add(exitAt + logDrainDelay)}
		r.draining = append(r.draining, p)
	}
	a, b, c := newProc("a"), newProc("b"), newProc("c")
	drain(a, 0)
	drain(b, time.Second)
	drain(c, 1500*time.Millisecond)
	if got := r.nextDeadline(); !got.Equal(a.exit.deadline) {
		t.Fatalf("next deadline %v, want a's %v", got.Sub(t0), a.exit.deadline.Sub(t0))
	}
	// b's group closes the pipe: b is finished at once.
	unix.Close(writers["b"])
	r.readPipe(b)
	if id := next(); id != "b" || b.pipe != -1 {
		t.Fatalf("finished %s (b's pipe %d), want b with its pipe closed", id, b.pipe)
	}
	r.expire(t0.Add(logDrainDelay - time.Millisecond))
	if len(r.draining) != 3 || len(finished) != 0 {
		t.Fatalf("before a's deadline: %d draining, %d finished; want 3 and 0", len(r.draining), len(finished))
	}
	r.expire(t0.Add(logDrainDelay))
	if id := next(); id != "a" || a.pipe != -1 {
		t.Fatalf("finished %s (a's pipe %d), want a with its pipe closed", id, a.pipe)
	}
	// b, done, is skipped: the next deadline is c's.
	if got := r.nextDeadline(); !got.Equal(c.exit.deadline) {
		t.Fatalf("next deadline %v, want c's %v", got.Sub(t0), c.exit.deadline.Sub(t0))
	}
	r.expire(c.exit.deadline.Add(-time.Millisecond))
	if len(finished) != 0 {
		t.Fatalf("c finished before its deadline")
	}
	r.expire(c.exit.deadline)
	if id := next(); id != "c" {
		t.Fatalf("finished %s, want c", id)
	}
	if r.draining != nil || !r.nextDeadline().IsZero() {
		t.Errorf("draining %v after every deadline, want none", r.draining)
	}
	// The pipes were taken out of the table, to be closed after the batch.
	if len(r.closing) != 3 {
		t.Errorf("%d descriptors to close, want the 3 pipes", len(r.closing))
	}
	for _, fd := range r.closing {
		if r.procs.get(fd) != nil {
			t.Errorf("closed pipe %d still in the table", fd)
		}
		unix.Close(fd)
	}
}

// TestFdTable: the reactor's table answers the proc watching a
// descriptor, nil for one never watched, beyond the table, negative or no
// longer watched, and the proc watching a number again once it is reused;
// it is as long as the highest number watched, plus one.
func TestFdTable(t *testing.T) {
	var tab fdTable
	a, b := &proc{}, &proc{}
	tab.set(5, a)
	tab.set(3, a)
	if tab.get(5) != a || tab.get(3) != a || tab.get(4) != nil || tab.get(6) != nil || tab.get(-1) != nil || tab.get(1<<20) != nil {
		t.Fatalf("after watching 5 and 3: get(5, 3, 4, 6, -1, 1<<20) = %p %p %p %p %p %p, want a a nil nil nil nil (a = %p)",
			tab.get(5), tab.get(3), tab.get(4), tab.get(6), tab.get(-1), tab.get(1<<20), a)
	}
	if len(tab) != 6 {
		t.Errorf("table of %d entries for descriptors up to 5, want 6", len(tab))
	}
	tab.set(5, nil)
	if tab.get(5) != nil || tab.get(3) != a {
		t.Fatalf("5 no longer watched: get(5) = %p, get(3) = %p; want nil and a", tab.get(5), tab.get(3))
	}
	tab.set(5, b) // the number reused by another process's descriptor
	if tab.get(5) != b {
		t.Errorf("get(5) = %p, want b (%p), its new watcher", tab.get(5), b)
	}
}

// readyFds lists the descriptors epfd reports ready to read now.
func readyFds(t *testing.T, epfd int) map[int]bool {
	t.Helper()
	events := make([]unix.EpollEvent, 16)
	n, err := unix.EpollWait(epfd, events, 0)
	if err != nil {
		t.Fatal(err)
	}
	ready := map[int]bool{}
	for _, ev := range events[:n] {
		if ev.Events&unix.EPOLLIN != 0 {
			ready[int(ev.Fd)] = true
		}
	}
	return ready
}

// logPipeAndStandIn is a log pipe (non-blocking; the caller closes its
// ends) and a pipe whose read end stands in for a pidfd (closed at the
// test's end).
func logPipeAndStandIn(t *testing.T) (pipe, stand [2]int) {
	t.Helper()
	if err := unix.Pipe2(pipe[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	if err := unix.Pipe2(stand[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unix.Close(stand[0])
		unix.Close(stand[1])
	})
	return pipe, stand
}

// TestReactorPausesPipeWhileLogIsCreated drives a reactor by hand (no loop
// goroutine): a task that writes more than maxEarly bytes before its log
// exists has its pipe paused, not waited for (readPipe returns with the
// creation still blocked, and the pipe is no longer reported though it
// holds output), and read again once the log exists; a paused pipe of an
// exited task outlives its drain deadline; the log gets every byte, in
// order.
func TestReactorPausesPipeWhileLogIsCreated(t *testing.T) {
	r := handDrivenReactor(t)
	pipe, stand := logPipeAndStandIn(t)
	writer := pipe[1]
	defer func() { unix.Close(writer) }()
	capped, path, release := delayedLog(t)
	finished := make(chan struct{})
	// A pipe stands in for the pidfd: the test never calls exited.
	p := &proc{pid: -1, pidfd: stand[0], pipe: pipe[0], fin: finishInfo{taskID: "t", capped: capped},
		report: func(Event) { close(finished) }}
	if err := r.add(p); err != nil {
		t.Fatal(err)
	}
	var want []byte
	write := func(n int) {
		t.Helper()
		b := pattern(uint64(len(want)), int64(n))
		if k, err := unix.Write(writer, b); k != n || err != nil {
			t.Fatalf("write to the pipe = %d, %v; want %d", k, err, n)
		}
		want = append(want, b...)
	}
	readPipe := func() {
		t.Helper()
		done := make(chan struct{})
		go func() { r.readPipe(p); close(done) }()
		select {
		case <-done:
		case <-time.After(guard):
			t.Fatal("readPipe waited for the log's creation")
		}
	}

	write(maxEarly + 100)
	readPipe() // one read takes it all
	if p.paused != p.pipe {
		t.Fatalf("after %d bytes kept, the pipe is not paused", len(want))
	}
	write(1000) // waits in the pipe
	if readyFds(t, r.epfd)[p.pipe] {
		t.Fatal("a paused pipe is reported ready")
	}
	// The task exits; its drain deadline passes while the pipe is paused.
	t0 := time.Now()
	p.exit = &procExit{deadline: t0}
	r.draining = append(r.draining, p)
	r.expire(t0)
	if p.pipe < 0 || len(r.draining) != 1 || !p.exit.deadline.Equal(t0.Add(logDrainDelay)) {
		t.Fatalf("paused pipe at its drain deadline: pipe %d, %d draining, deadline +%v; want kept for another %v",
			p.pipe, len(r.draining), p.exit.deadline.Sub(t0), logDrainDelay)
	}

	release()
	capped.created() // returns once the pipe is resumed
	if !readyFds(t, r.epfd)[p.pipe] {
		t.Fatal("the pipe is not read again once the log exists")
	}
	unix.Close(writer)
	writer = -1
	for p.pipe >= 0 {
		readPipe()
	}
	select {
	case <-finished:
	case <-time.After(guard):
		t.Fatal("not finished after EOF")
	}
	if got := readFileString(t, path); got != string(want) {
		t.Errorf("log holds %d bytes, want the %d written, in order", len(got), len(want))
	}
	for _, fd := range r.closing {
		unix.Close(fd)
	}
}

// TestProcessLeavesNoDescriptors: once their Finished reports are in,
// attempts with a capped log (a pipe whose write end the daemon holds
// only until the spawn), with or without output, leave no descriptor of
// the daemon open: not the pipe's ends, not the pidfd. Both ways. Not
// parallel: it counts the descriptors of the whole test process.
func TestProcessLeavesNoDescriptors(t *testing.T) {
	if os.Getenv(noReactorEnv) != "" {
		t.Skip("measures both ways itself")
	}
	openFDs := func() int {
		des, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(des)
	}
	for _, noReactor := range []bool{false, true} {
		p := NewProcess(ProcessConfig{})
		p.noReactor = noReactor
		theReactor()
		nullDevice()
		before := openFDs()
		for i, script := range []string{"true", "echo out", "echo err >&2; exit 3"} {
			job := newTestJob(t, "sh", "-c", script)
			job.TaskID = fmt.Sprintf("t%d", i)
			job.MaxLogBytes = 1 << 20
			events := make(chan Event, 2)
			if _, err := p.Start(job, func(ev Event) { events <- ev }); err != nil {
				t.Fatal(err)
			}
			expectStarted(t, job, events)
			expectFinished(t, job, events)
		}
		// The reactor closes a batch's descriptors after the batch, and
		// a finishing goroutine may still be closing the log: wait for
		// them, no longer than the guard.
		deadline := time.Now().Add(guard)
		for openFDs() > before && time.Now().Before(deadline) {
			runtime.Gosched()
		}
		if n := openFDs(); n > before {
			t.Errorf("noReactor %v: %d descriptors open after 3 attempts, %d before", noReactor, n, before)
		}
	}
}

// TestReactorFinishesOnKeptGoroutines: attempts that end one after
// another are finished on the reactor's kept workers (see finisher), not
// on a goroutine started for each exit. Not parallel: the reactor is the
// process's.
func TestReactorFinishesOnKeptGoroutines(t *testing.T) {
	if os.Getenv(noReactorEnv) != "" {
		t.Skip("the reactor's")
	}
	r, err := theReactor()
	if err != nil {
		t.Skip("no reactor on this system:", err)
	}
	started := func() int {
		r.finisher.mu.Lock()
		defer r.finisher.mu.Unlock()
		return r.finisher.started
	}
	before := started()
	const n = 10
	for i := range n {
		job := newTestJob(t, "true")
		job.TaskID = fmt.Sprintf("t%d", i)
		runJob(t, job)
	}
	// A worker may not have parked yet when the next exit comes (a busy
	// machine): a few more may start, never one an exit.
	if d := started() - before; d > n/3 {
		t.Errorf("%d finishing goroutines started for %d attempts one after another, want a few at most", d, n)
	}
}

// TestReactorResumeDuringUnwatchWarnsOfNothing: a log's creation that
// ends (resume, on its own goroutine) while the loop unwatches the paused
// pipe, between unwatch's two steps, finds the pipe unwatched and leaves
// it: no false "task log incomplete" warning (the pipe was out of the
// epoll instance but still in the table, and resume's epoll_ctl failed).
// The pipe's number is named by no table entry once unwatch returns.
func TestReactorResumeDuringUnwatchWarnsOfNothing(t *testing.T) {
	r := handDrivenReactor(t)
	pipe, stand := logPipeAndStandIn(t)
	defer unix.Close(pipe[1])
	var warnings syncBuffer
	exec := newTestProcess(ProcessConfig{Logger: slog.New(slog.NewTextHandler(&warnings, nil))})
	// A pipe stands in for the pidfd: the test never calls exited.
	p := &proc{pid: -1, pidfd: stand[0], pipe: pipe[0], fin: finishInfo{p: exec, taskID: "t"}}
	if err := r.add(p); err != nil {
		t.Fatal(err)
	}
	// Paused as pause leaves it while the log is being created.
	r.mu.Lock()
	if err := unix.EpollCtl(r.epfd, unix.EPOLL_CTL_MOD, p.pipe, &unix.EpollEvent{Events: unix.EPOLLET, Fd: int32(p.pipe)}); err != nil {
		r.mu.Unlock()
		t.Fatal(err)
	}
	p.paused = p.pipe
	r.mu.Unlock()

	fd := p.pipe
	resumed := false
	r.unwatchStep = func(step int) {
		if step == fd {
			r.resume(p) // the log's creation ends now
			resumed = true
		}
	}
	r.unwatch(fd)
	p.pipe = -1
	defer func() {
		for _, c := range r.closing {
			unix.Close(c)
		}
	}()
	if !resumed {
		t.Fatal("unwatch did not reach the seam between its steps")
	}
	if w := warnings.String(); w != "" {
		t.Errorf("daemon log = %q, want no warning: the pipe was unwatched, not lost", w)
	}
	r.mu.Lock()
	entry, paused := r.procs.get(fd), p.paused
	r.mu.Unlock()
	if entry != nil || paused != -1 {
		t.Errorf("after unwatch: table entry %v, paused %d; want none, -1", entry, paused)
	}
	if err := unix.EpollCtl(r.epfd, unix.EPOLL_CTL_DEL, fd, nil); err != unix.ENOENT {
		t.Errorf("the pipe is still in the epoll instance (epoll_ctl DEL: %v)", err)
	}
	if len(r.closing) != 1 || r.closing[0] != fd {
		t.Errorf("closing = %v, want the pipe %d, closed after the batch", r.closing, fd)
	}
}

package engine

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
	"github.com/orkwal/orkwal/wal"
)

// fakeClock is a manual clock: time moves only by Advance, which fires the
// timers that come due.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now.IsZero() {
		c.now = time.Unix(1_700_000_000, 0)
	}
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	now := c.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- now
		return ch
	}
	c.waiters = append(c.waiters, fakeWaiter{at: now.Add(d), ch: ch})
	return ch
}

// At fires once the clock reaches t (see instantClock).
func (c *fakeClock) At(t time.Time) <-chan time.Time {
	c.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if !t.After(c.now) {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, fakeWaiter{at: t, ch: ch})
	return ch
}

// Advance moves the clock and fires due timers.
func (c *fakeClock) Advance(d time.Duration) {
	now := c.Now().Add(d)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = now
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(now) {
			w.ch <- now
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

// manual is an executor the test drives: Start hands the job to the test.
type manual struct {
	t       *testing.T
	dataDir string
	jobs    chan executors.Job
	mu      sync.Mutex
	reports map[string]func(executors.Event)
	stops   chan string // the reason of every Stop, when not nil
}

func newManual(t *testing.T, dataDir string) *manual {
	return &manual{t: t, dataDir: dataDir, jobs: make(chan executors.Job, 1000), reports: map[string]func(executors.Event){}}
}

type nopHandle struct{ stop func(reason string) }

func (h nopHandle) Stop(_ time.Duration, reason string) {
	if h.stop != nil {
		h.stop(reason)
	}
}

func (m *manual) Start(job executors.Job, report func(executors.Event)) (executors.Handle, error) {
	m.assertDurable(job)
	m.mu.Lock()
	m.reports[job.TaskID] = report
	m.mu.Unlock()
	report(executors.Event{Kind: executors.Started, TaskID: job.TaskID, Attempt: job.Attempt})
	m.jobs <- job
	return nopHandle{stop: func(reason string) {
		if m.stops != nil {
			m.stops <- reason
		}
		report(executors.Event{Kind: executors.Finished, TaskID: job.TaskID, Attempt: job.Attempt, Err: "stopped"})
	}}, nil
}

// assertDurable checks write-ahead: the dispatch of this attempt is already
// on disk when the executor is asked to start it.
func (m *manual) assertDurable(job executors.Job) {
	found := false
	wal.ReplayDir(filepath.Join(m.dataDir, "wal"), 1, func(_ uint64, ps [][]byte) error {
		for _, p := range ps {
			r, _ := replay.Decode(p)
			if d, ok := r.(*replay.TaskDispatched); ok && d.Run == job.RunID && d.Attempt == job.Attempt {
				found = true
			}
		}
		return nil
	})
	if !found {
		m.t.Errorf("executor started %s attempt %d before its dispatch was durable", job.TaskID, job.Attempt)
	}
}

// next returns the next started job.
func (m *manual) next() executors.Job {
	m.t.Helper()
	select {
	case j := <-m.jobs:
		return j
	case <-time.After(10 * time.Second):
		m.t.Fatal("no job started")
		return executors.Job{}
	}
}

// nextSorted returns the next n started jobs sorted by key. Executors of
// the attempts one turn dispatches are started concurrently (see
// launcher), so the order of their starts is not the dispatch order; a
// test that checks which jobs a turn started takes them as a set.
func (m *manual) nextSorted(n int, key func(executors.Job) string) []executors.Job {
	m.t.Helper()
	jobs := make([]executors.Job, n)
	for i := range jobs {
		jobs[i] = m.next()
	}
	sort.Slice(jobs, func(i, j int) bool { return key(jobs[i]) < key(jobs[j]) })
	return jobs
}

func byTaskName(j executors.Job) string { return j.TaskName }

// none asserts that no job is waiting to start. Only meaningful once the
// engine has committed everything it was given (see settle).
func (m *manual) none() {
	m.t.Helper()
	select {
	case j := <-m.jobs:
		m.t.Fatalf("unexpected job %s started", j.TaskName)
	default:
	}
}

// beat reports a heartbeat for a running job.
func (m *manual) beat(j executors.Job) {
	m.mu.Lock()
	report := m.reports[j.TaskID]
	m.mu.Unlock()
	report(executors.Event{Kind: executors.Finished + 1, TaskID: j.TaskID, Attempt: j.Attempt})
}

// silentExec starts jobs but never reports them started.
type silentExec struct{ *manual }

func (s *silentExec) Start(job executors.Job, report func(executors.Event)) (executors.Handle, error) {
	s.jobs <- job
	return nopHandle{stop: func(string) {
		report(executors.Event{Kind: executors.Finished, TaskID: job.TaskID, Attempt: job.Attempt, Err: "stopped"})
	}}, nil
}

func (m *manual) finish(j executors.Job, ok bool) {
	m.mu.Lock()
	report := m.reports[j.TaskID]
	m.mu.Unlock()
	ev := executors.Event{Kind: executors.Finished, TaskID: j.TaskID, Attempt: j.Attempt, OK: ok}
	if !ok {
		ev.ExitCode, ev.Err = 1, "exit status 1"
	}
	report(ev)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func openEngine(t *testing.T, dir string, ex executors.Executor, maxConc int) *Engine {
	t.Helper()
	e := openStopped(t, dir, ex, maxConc)
	e.Start()
	return e
}

// openStopped opens an engine as openEngine does, without starting it
// (for a test that sets its hooks first).
func openStopped(t *testing.T, dir string, ex executors.Executor, maxConc int) *Engine {
	t.Helper()
	e, err := Open(Config{DataDir: dir, MaxConcurrent: maxConc, Clock: &fakeClock{}, Logger: quiet,
		Executors: map[string]executors.Executor{"process": ex, "noop": executors.Noop{}}})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return e
}

// crash stops the engine the way kill -9 would: no shutdown records.
func crash(e *Engine) {
	close(e.halt)
	<-e.done
	e.wal.Close()
	e.lock.Release()
}

func diamond(executor string) *workflow.Spec {
	return &workflow.Spec{Name: "diamond", Tasks: []*workflow.Task{
		{Name: "a", Executor: executor, Command: []string{"true"}},
		{Name: "b", Executor: executor, Command: []string{"true"}, DependsOn: []string{"a"}},
		{Name: "c", Executor: executor, Command: []string{"true"}, DependsOn: []string{"a"}},
		{Name: "d", Executor: executor, Command: []string{"true"}, DependsOn: []string{"b", "c"}},
	}}
}

func flat(name string, n int) *workflow.Spec {
	s := &workflow.Spec{Name: name}
	for i := 0; i < n; i++ {
		s.Tasks = append(s.Tasks, &workflow.Task{Name: string(rune('a' + i)), Executor: "process", Command: []string{"true"}})
	}
	return s
}

func put(t *testing.T, e *Engine, s *workflow.Spec) {
	t.Helper()
	if _, _, err := e.PutWorkflow(s, ""); err != nil {
		t.Fatalf("put %s: %v", s.Name, err)
	}
}

func trigger(t *testing.T, e *Engine, name string) string {
	t.Helper()
	id, err := e.Trigger(name, nil, "test")
	if err != nil {
		t.Fatalf("trigger %s: %v", name, err)
	}
	return id
}

// waitFor blocks until cond holds, woken by commits, never by a timer.
func waitFor(t *testing.T, e *Engine, what string, cond func() bool) {
	t.Helper()
	guard := time.After(10 * time.Second)
	for {
		ch := e.Changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-guard:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func runStatus(e *Engine, id string) string {
	r, _ := e.Run(id)
	return r.Status
}

func finished(e *Engine, id string) func() bool {
	return func() bool { s := runStatus(e, id); return s == "success" || s == "failed" }
}

func TestDAGRunsInDependencyOrder(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e := openEngine(t, dir, m, 8)
	defer e.Close()
	put(t, e, diamond("process"))
	id := trigger(t, e, "diamond")
	a := m.next()
	if a.TaskName != "a" || a.Attempt != 1 || a.RunID != id {
		t.Fatalf("first job %s attempt %d, want a attempt 1", a.TaskName, a.Attempt)
	}
	m.finish(a, true)
	// b and c are dispatched in creation order in one turn, and started
	// concurrently: their starts may come in either order.
	bc := m.nextSorted(2, byTaskName)
	b, c := bc[0], bc[1]
	if b.TaskName != "b" || c.TaskName != "c" {
		t.Fatalf("after a: %s, %s; want b and c", b.TaskName, c.TaskName)
	}
	m.finish(b, true)
	waitFor(t, e, "b recorded", func() bool { r, _ := e.Run(id); return r.Tasks[1].Status == "success" })
	m.none() // d still waits for c
	m.finish(c, true)
	d := m.next()
	if d.TaskName != "d" {
		t.Fatalf("last job %s, want d", d.TaskName)
	}
	m.finish(d, true)
	waitFor(t, e, "run finished", finished(e, id))
	if s := runStatus(e, id); s != "success" {
		t.Fatalf("run %s, want success", s)
	}
}

func TestFailedTaskSkipsDownstreamAndFailsRun(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e := openEngine(t, dir, m, 8)
	defer e.Close()
	put(t, e, diamond("process"))
	id := trigger(t, e, "diamond")
	m.finish(m.next(), false)
	waitFor(t, e, "run finished", finished(e, id))
	r, _ := e.Run(id)
	want := []string{"failed", "skipped", "skipped", "skipped"}
	for i, tv := range r.Tasks {
		if tv.Status != want[i] {
			t.Errorf("task %s is %s, want %s", tv.Name, tv.Status, want[i])
		}
	}
	if r.Status != "failed" || r.Tasks[0].Error != "exit status 1" {
		t.Fatalf("run %s, task error %q", r.Status, r.Tasks[0].Error)
	}
	m.none()
}

// dispatchOrder lists the attempts dispatched so far as run id + task
// name, in the order of their records in the log: the order the engine
// decided (priority, then creation). Executors of one turn are started
// concurrently, so the order of their Start calls says nothing.
func dispatchOrder(t *testing.T, e *Engine, dir string) []string {
	t.Helper()
	var order []string
	err := wal.ReplayDir(filepath.Join(dir, "wal"), 1, func(_ uint64, ps [][]byte) error {
		for _, p := range ps {
			r, err := replay.Decode(p)
			if err != nil {
				return err
			}
			if d, ok := r.(*replay.TaskDispatched); ok {
				run, err := e.Run(d.Run)
				if err != nil {
					return err
				}
				order = append(order, d.Run+run.Tasks[d.Task].Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return order
}

func TestMaxConcurrentAndCreationOrder(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e := openEngine(t, dir, m, 2)
	defer e.Close()
	put(t, e, flat("five", 5))
	r1 := trigger(t, e, "five")
	r2 := trigger(t, e, "five")
	j1, j2 := m.next(), m.next()
	waitFor(t, e, "second run recorded", func() bool { _, err := e.Run(r2); return err == nil })
	settle(t, e)
	m.none() // two slots, two jobs
	inflight := []executors.Job{j1, j2}
	started := 2
	for len(inflight) > 0 {
		m.finish(inflight[0], true)
		inflight = inflight[1:]
		if started < 10 {
			inflight = append(inflight, m.next())
			started++
		}
	}
	waitFor(t, e, "both runs finished", func() bool { return finished(e, r1)() && finished(e, r2)() })
	var want []string
	for _, r := range []string{r1, r2} {
		for _, n := range "abcde" {
			want = append(want, r+string(n))
		}
	}
	order := dispatchOrder(t, e, dir)
	if len(order) != len(want) {
		t.Fatalf("%d dispatches %v, want %d", len(order), order, len(want))
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("dispatch %d was %s, want %s (creation order)", i, order[i], want[i])
		}
	}
}

func TestReplayedStateEqualsLiveState(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, executors.Noop{}, 4)
	put(t, e, diamond("noop"))
	put(t, e, flat("other", 3))
	var ids []string
	for i := 0; i < 30; i++ {
		ids = append(ids, trigger(t, e, []string{"diamond", "other"}[i%2]))
	}
	waitFor(t, e, "all runs finished", func() bool {
		for _, id := range ids {
			if runStatus(e, id) != "success" {
				return false
			}
		}
		return true
	})
	live, err := e.StateHash()
	if err != nil {
		t.Fatal(err)
	}
	replayed := replay.New()
	l, _ := wal.Open(filepath.Join(dir, "wal"), wal.Options{Logger: quiet})
	if _, err := Replay(l, replayed); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if got, _ := replayed.Hash(); got != live {
		t.Fatalf("replayed state hash %x, live %x", got, live)
	}
	e.Close()
	e2 := openEngine(t, dir, executors.Noop{}, 4)
	defer e2.Close()
	if got, _ := e2.StateHash(); got != live {
		t.Fatalf("state after reboot %x, live %x", got, live)
	}
}

func TestCrashReRunsInFlightTaskAsNewAttempt(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e := openEngine(t, dir, m, 8)
	put(t, e, diamond("process"))
	id := trigger(t, e, "diamond")
	a := m.next()
	waitFor(t, e, "a running", func() bool { r, _ := e.Run(id); return r.Tasks[0].Status == "running" })
	crash(e)

	m2 := newManual(t, dir)
	e2 := openEngine(t, dir, m2, 8)
	defer e2.Close()
	a2 := m2.next()
	if a2.TaskName != "a" || a2.Attempt != 2 || a2.TaskID != a.TaskID {
		t.Fatalf("after crash: %s attempt %d, want a attempt 2", a2.TaskName, a2.Attempt)
	}
	r, _ := e2.Run(id)
	if r.Tasks[0].Interruptions != 1 {
		t.Fatalf("interruptions %d, want 1", r.Tasks[0].Interruptions)
	}
	m2.finish(a2, true)
	for i := 0; i < 3; i++ {
		m2.finish(m2.next(), true)
	}
	waitFor(t, e2, "run finished", finished(e2, id))
	if s := runStatus(e2, id); s != "success" {
		t.Fatalf("run %s after crash, want success", s)
	}
}

func TestCleanShutdownIsNotACrash(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e := openEngine(t, dir, m, 8)
	put(t, e, diamond("process"))
	id := trigger(t, e, "diamond")
	m.next()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := newManual(t, dir)
	e2 := openEngine(t, dir, m2, 8)
	defer e2.Close()
	if a := m2.next(); a.Attempt != 2 {
		t.Fatalf("attempt %d after clean restart, want 2", a.Attempt)
	}
	if r, _ := e2.Run(id); r.Tasks[0].Interruptions != 0 {
		t.Fatalf("a clean shutdown counted as a crash interruption")
	}
}

func TestBadCommandsWriteNothing(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, executors.Noop{}, 4)
	defer e.Close()
	s := diamond("noop")
	s.Params = map[string]string{"day": "mon"}
	put(t, e, s)
	before := e.wal.LastIndex()
	if _, err := e.Trigger("nope", nil, "test"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown workflow: %v, want ErrNotFound", err)
	}
	if _, err := e.Trigger("diamond", map[string]string{"dya": "x"}, "test"); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown param: %v, want ErrInvalid", err)
	}
	if _, err := e.Trigger("diamond", map[string]string{"day": "caf\xe9"}, "test"); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "params.day: not valid UTF-8") {
		t.Errorf("a param that is not UTF-8: %v, want ErrInvalid naming it", err)
	}
	if err := e.DeleteWorkflow("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("delete unknown: %v", err)
	}
	if _, changed, err := e.PutWorkflow(s, ""); err != nil || changed {
		t.Errorf("same workflow again: changed=%v err=%v, want unchanged", changed, err)
	}
	if after := e.wal.LastIndex(); after != before {
		t.Fatalf("bad commands wrote %d frames", after-before)
	}
	id, err := e.Trigger("diamond", map[string]string{"day": "tue"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := e.Run(id); r.Params["day"] != "tue" {
		t.Fatalf("params %v, want day=tue", r.Params)
	}
}

// TestSameWorkflowAgainAfterRestartsWritesNothing: `orkwal run` puts its
// workflow files at every boot, and an unchanged workflow must keep its
// version. sameSpec compared two msgpack encodings, whose maps (params,
// env, inputs) came in Go's random map order, so a workflow with two
// params or inputs was recorded as a new version at most boots, and often
// live too.
func TestSameWorkflowAgainAfterRestartsWritesNothing(t *testing.T) {
	dir := t.TempDir()
	spec := func() *workflow.Spec {
		s := diamond("noop")
		s.Params = map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6"}
		s.Tasks[0].Env = map[string]string{"X": "1", "Y": "2", "Z": "3", "W": "4"}
		s.Tasks[1].Inputs = map[string]workflow.Input{"x": {Const: []byte("1")}, "y": {Const: []byte("2")},
			"z": {Ref: "tasks.a.output"}}
		return s
	}
	e := openEngine(t, dir, executors.Noop{}, 4)
	put(t, e, spec())
	for i := 0; i < 10; i++ {
		if _, changed, err := e.PutWorkflow(spec(), ""); err != nil || changed {
			t.Fatalf("boot %d: the same workflow again: changed=%v err=%v, want unchanged", i, changed, err)
		}
		crash(e)
		e = openEngine(t, dir, executors.Noop{}, 4)
	}
	defer e.Close()
	if w, _ := e.Workflow("diamond"); w.Version != 1 {
		t.Fatalf("version %d after putting the same workflow at every boot, want 1", w.Version)
	}
}

func TestSecondEngineOnSameFolderRefused(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, executors.Noop{}, 1)
	defer e.Close()
	if _, err := Open(Config{DataDir: dir, Logger: quiet}); !errors.Is(err, wal.ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
}

func TestForeignFormatRefused(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, executors.Noop{}, 1)
	e.Close()
	os.WriteFile(filepath.Join(dir, FormatFile), []byte("orkwal-data 99\n"), 0o644)
	_, err := Open(Config{DataDir: dir, Logger: quiet})
	if err == nil || !strings.Contains(err.Error(), `has format "orkwal-data 99"`) {
		t.Fatalf("open of a foreign format: %v", err)
	}
}

func TestCloseWithoutStart(t *testing.T) {
	e, err := Open(Config{DataDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan error)
	go func() { closed <- e.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close of an engine that never started hangs")
	}
}

// frameOf returns the WAL index of the frame holding the first record of
// the attempt's given kind, or 0.
func frameOf(t *testing.T, dir string, kind string, run string, attempt int) uint64 {
	t.Helper()
	var at uint64
	err := wal.ReplayDir(filepath.Join(dir, "wal"), 1, func(index uint64, ps [][]byte) error {
		for _, p := range ps {
			r, err := replay.Decode(p)
			if err != nil {
				return err
			}
			var ref replay.TaskRef
			var att int
			switch r := r.(type) {
			case *replay.TaskStarted:
				ref, att = r.TaskRef, r.Attempt
			case *replay.TaskFinished:
				ref, att = r.TaskRef, r.Attempt
			default:
				continue
			}
			if at == 0 && r.Kind().String() == kind && ref.Run == run && att == attempt {
				at = index
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// TestStartedRidesTheNextFrame: a Started report is not committed on its
// own while nothing else is (startedDelay, made an hour here): its record
// joins the frame of the task's Finished, before it, and the task shows as
// dispatched until then (readers never see what is not durable).
func TestStartedRidesTheNextFrame(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e := openStartedDelay(t, dir, m, time.Hour)
	defer e.Close()
	put(t, e, flat("one", 1))
	id := trigger(t, e, "one")
	j := m.next() // reported Started
	if tv := taskView(e, id, "a"); tv.Status != "dispatched" {
		t.Fatalf("task is %s before its start is durable, want dispatched", tv.Status)
	}
	m.finish(j, true)
	waitFor(t, e, "run finished", finished(e, id))
	started, fin := frameOf(t, dir, "task_started", id, 1), frameOf(t, dir, "task_finished", id, 1)
	if started == 0 || started != fin {
		t.Fatalf("task_started in frame %d, task_finished in frame %d; want one frame", started, fin)
	}
	if tv := taskView(e, id, "a"); tv.StartedAt == nil {
		t.Errorf("started_at not recorded: %+v", tv)
	}
}

// TestQuietStartedCommittedAfterTheDelay: a Started report, which does not
// wake the loop (inbox.pushQuiet), is committed on its own once
// startedDelay has passed when nothing else comes (the task runs on).
func TestQuietStartedCommittedAfterTheDelay(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e := openStartedDelay(t, dir, m, 20*time.Millisecond)
	defer e.Close()
	put(t, e, flat("one", 1))
	id := trigger(t, e, "one")
	m.next()
	waitFor(t, e, "the task running", func() bool { return taskView(e, id, "a").Status == "running" })
}

// TestOpenMakesANewDataFolderDurable: a data folder the first boot creates
// (and the folders above it that it creates) is named in its parent, which
// must be fsynced before anything acknowledged can depend on the folder.
func TestOpenMakesANewDataFolderDurable(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a", "orkwal-data")
	var synced []string
	syncDir = func(d string) error { synced = append(synced, filepath.Clean(d)); return wal.SyncDir(d) }
	defer func() { syncDir = wal.SyncDir }()
	e := openEngine(t, dir, executors.Noop{}, 1)
	e.Close()
	has := func(d string) bool {
		for _, s := range synced {
			if s == d {
				return true
			}
		}
		return false
	}
	for _, parent := range []string{root, filepath.Join(root, "a")} {
		if !has(parent) {
			t.Errorf("%s, which names a folder the first boot created, was never fsynced (fsynced: %v)", parent, synced)
		}
	}
}

package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
	"github.com/orkwal/orkwal/wal"
)

// Issue 27: a chain of n steps costs n spawns and one fsync a step, and
// runs triggered at once are accepted and started in as few fsyncs as the
// loop's turns allow. These tests read the WAL's frames: which frame holds
// each record of a run.

// runFrames returns, for each frame of the log holding a record of run,
// the kinds of that run's records in it ("task_dispatched t1"), in log
// order.
func runFrames(t *testing.T, dir, run string, names func(replay.TaskRef) string) [][]string {
	t.Helper()
	var frames [][]string
	err := wal.ReplayDir(filepath.Join(dir, "wal"), 1, func(_ uint64, ps [][]byte) error {
		var kinds []string
		for _, p := range ps {
			r, err := replay.Decode(p)
			if err != nil {
				return err
			}
			if s := describe(r, run, names); s != "" {
				kinds = append(kinds, s)
			}
		}
		if len(kinds) > 0 {
			frames = append(frames, kinds)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return frames
}

// describe names a record of run: its kind and, for a task's, the task's
// name; "" for a record of another run or none.
func describe(r replay.Record, run string, names func(replay.TaskRef) string) string {
	var ref replay.TaskRef
	switch r := r.(type) {
	case *replay.RunCreated:
		if r.ID == run {
			return r.Kind().String()
		}
		return ""
	case *replay.TaskDispatched:
		ref = r.TaskRef
	case *replay.TaskStarted:
		ref = r.TaskRef
	case *replay.TaskFinished:
		ref = r.TaskRef
	default:
		return ""
	}
	if ref.Run != run {
		return ""
	}
	return r.Kind().String() + " " + names(ref)
}

// TestChainStepIsOneFrame: in a chain, a task's completion and its
// downstream's dispatch are fsynced in one frame, with the task's start
// riding along: a chain of n tasks is logged in n+1 frames (the trigger's,
// with the first dispatch, then one a step), so it costs one fsync a step.
// The executor starts each task only once its dispatch is durable
// (manual.assertDurable).
func TestChainStepIsOneFrame(t *testing.T) {
	const n = 5
	dir := t.TempDir()
	m := newManual(t, dir)
	e := openStopped(t, dir, m, 4)
	e.startedDelay = time.Hour // a start waits for the step's frame, however slow the test
	e.Start()
	defer e.Close()
	spec := &workflow.Spec{Name: "chain"}
	for i := range n {
		task := &workflow.Task{Name: fmt.Sprintf("t%d", i), Executor: "process", Command: []string{"true"}}
		if i > 0 {
			task.DependsOn = []string{fmt.Sprintf("t%d", i-1)}
		}
		spec.Tasks = append(spec.Tasks, task)
	}
	put(t, e, spec)
	id := trigger(t, e, "chain")
	for i := range n {
		j := m.next()
		if want := fmt.Sprintf("t%d", i); j.TaskName != want {
			t.Fatalf("step %d started %s, want %s", i, j.TaskName, want)
		}
		m.finish(j, true)
	}
	waitFor(t, e, "chain finished", finished(e, id))
	name := func(ref replay.TaskRef) string { return fmt.Sprintf("t%d", ref.Task) }
	got := runFrames(t, dir, id, name)
	want := [][]string{{"run_created", "task_dispatched t0"}}
	for i := range n {
		step := []string{fmt.Sprintf("task_started t%d", i), fmt.Sprintf("task_finished t%d", i)}
		if i+1 < n {
			step = append(step, fmt.Sprintf("task_dispatched t%d", i+1))
		}
		want = append(want, step)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the chain's frames:\n got %v\nwant %v", got, want)
	}
}

// TestTriggersAtOnceShareOneFrame: runs triggered while the loop is busy
// are accepted in its next turn together, and their first tasks are
// dispatched in the same frame as their acceptance: one fsync for all of
// them, and no answer and no start before it (manual.assertDurable checks
// the starts; Trigger answers once the frame is durable).
func TestTriggersAtOnceShareOneFrame(t *testing.T) {
	const n = 20
	dir := t.TempDir()
	m := newManual(t, dir)
	e := openStopped(t, dir, m, n+1)
	hold, held := make(chan struct{}), make(chan struct{}, 1)
	var armed atomic.Bool
	// On the loop: holds it after the first trigger's turn, the first
	// with a run (the put's turn may reach this hook after its reply, so
	// after armed is set).
	e.afterTurn = func() {
		if armed.Load() && e.state.OpenRuns() > 0 && armed.CompareAndSwap(true, false) {
			held <- struct{}{}
			<-hold
		}
	}
	e.Start()
	defer e.Close()
	var release sync.Once
	defer release.Do(func() { close(hold) }) // before Close, on a failure
	put(t, e, flat("one", 1))
	armed.Store(true)
	first := trigger(t, e, "one")
	<-held
	ids := make(chan string, n)
	errs := make(chan error, n)
	for range n {
		go func() {
			id, err := e.Trigger("one", nil, "test")
			ids <- id
			errs <- err
		}()
	}
	waitCommands(t, e, n)
	release.Do(func() { close(hold) })
	runs := map[string]bool{}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		runs[<-ids] = true
	}
	m.nextSorted(n+1, byTaskName) // every run's task started
	frameOf := map[string]uint64{}
	err := wal.ReplayDir(filepath.Join(dir, "wal"), 1, func(index uint64, ps [][]byte) error {
		for _, p := range ps {
			r, err := replay.Decode(p)
			if err != nil {
				return err
			}
			switch r := r.(type) {
			case *replay.RunCreated:
				frameOf["run_created "+r.ID] = index
			case *replay.TaskDispatched:
				frameOf["task_dispatched "+r.Run] = index
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	one := frameOf["run_created "+first] + 1 // the turn after the first trigger's
	for id := range runs {
		for _, k := range []string{"run_created ", "task_dispatched "} {
			if got := frameOf[k+id]; got != one {
				t.Errorf("%s%s in frame %d, want every run's acceptance and first dispatch in frame %d", k, id, got, one)
			}
		}
	}
}

// waitCommands waits until the loop's inbox holds n commands (the loop is
// held: nothing takes them meanwhile).
func waitCommands(t *testing.T, e *Engine, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := 0
		e.inbox.mu.Lock()
		for _, ev := range e.inbox.items {
			if ev.cmd != nil {
				got++
			}
		}
		e.inbox.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d commands in the inbox, want %d", got, n)
		}
		runtime.Gosched()
	}
}

// TestScratchIsFlat: an attempt's contract files sit side by side in
// work/, named after its run: starting a run's first task creates no
// folder (a new inode costs as much CPU as the spawn on this machine's
// ext4), and the task still writes its output at ORKWAL_OUTPUT.
func TestScratchIsFlat(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, executors.NewProcess(executors.ProcessConfig{}), 2)
	defer e.Close()
	put(t, e, &workflow.Spec{Name: "out", Tasks: []*workflow.Task{
		{Name: "a", Executor: "process", Command: []string{"sh", "-c", `echo '"done"' > "$ORKWAL_OUTPUT"`}}}})
	id := trigger(t, e, "out")
	waitFor(t, e, "run finished", finished(e, id))
	if tv := taskView(e, id, "a"); tv.Status != "success" || string(tv.Output) != `"done"` {
		t.Fatalf("task %s with output %s, want success with \"done\"", tv.Status, tv.Output)
	}
	des, err := os.ReadDir(filepath.Join(dir, "work"))
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des { // files: the attempt's, if not removed yet, and its shared input
		if de.IsDir() {
			t.Errorf("work/ holds the folder %s", de.Name())
		}
	}
}

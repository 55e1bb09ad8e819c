package engine

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
)

// A task without params, inputs, upstream tasks or item is given the one
// shared empty document as its input (its file is named after it, as any
// input's: executors.IsInputFile); one with any of them gets its own.
func TestEmptyInputShared(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e := openEngine(t, dir, m, 4)
	defer e.Close()
	put(t, e, &workflow.Spec{Name: "w", Tasks: []*workflow.Task{
		{Name: "a", Executor: "process", Command: []string{"true"}},
		{Name: "b", Executor: "process", Command: []string{"true"}, DependsOn: []string{"a"}},
		{Name: "c", Executor: "process", Command: []string{"true"}, Inputs: map[string]workflow.Input{"k": {Const: []byte("1")}}},
	}})
	trigger(t, e, "w")
	first := m.nextSorted(2, byTaskName)
	a, c := first[0], first[1]
	if len(a.Input) == 0 || &a.Input[0] != &emptyInput[0] {
		t.Errorf("a: Input %s, want the shared %s", a.Input, emptyInput)
	}
	if string(c.Input) == string(emptyInput) {
		t.Errorf("c (an input): Input %s, want its own", c.Input)
	}
	m.finish(a, true)
	if b := m.next(); string(b.Input) == string(emptyInput) {
		t.Errorf("b (an upstream): Input %s, want its own", b.Input)
	}
}

// Jobs share what repeats (issue 27: a large dispatch prepares every job
// at once): the tasks of a workflow's folder with no env of their own
// share one {PYTHONPATH: folder}, a task with an env gets its own copy
// with PYTHONPATH added (the shared one untouched), and empty inputs share
// one clipped document.
func TestJobsShareWhatRepeats(t *testing.T) {
	dir, folder := t.TempDir(), t.TempDir()
	m := newManual(t, dir)
	e := openEngine(t, dir, m, 4)
	defer e.Close()
	spec := flat("w", 3)
	spec.Dir = folder
	spec.Tasks[2].Env = map[string]string{"K": "v"}
	put(t, e, spec)
	trigger(t, e, "w")
	jobs := m.nextSorted(3, byTaskName)
	a, b, c := jobs[0], jobs[1], jobs[2]
	shared := map[string]string{"PYTHONPATH": folder}
	if !maps.Equal(a.Env, shared) || !maps.Equal(b.Env, shared) || !maps.Equal(c.Env, map[string]string{"K": "v", "PYTHONPATH": folder}) {
		t.Fatalf("env: %v, %v, %v", a.Env, b.Env, c.Env)
	}
	if reflect.ValueOf(a.Env).UnsafePointer() != reflect.ValueOf(b.Env).UnsafePointer() {
		t.Error("a and b: an env map each, want one shared")
	}
	if len(a.Input) == 0 || &a.Input[0] != &b.Input[0] || cap(a.Input) != len(a.Input) {
		t.Errorf("empty inputs: %p %p (cap %d, len %d); want one shared, clipped",
			a.Input, b.Input, cap(a.Input), len(a.Input))
	}
}

// The scratch files of an attempt whose executor removed them itself
// (executors.Event.Cleaned) are not removed again; those of others are,
// once the outcome is durable.
func TestCleanedScratchLeftToTheExecutor(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e := openEngine(t, dir, m, 4)
	defer e.Close()
	put(t, e, flat("w", 2))
	id := trigger(t, e, "w")
	jobs := m.nextSorted(2, byTaskName)
	for _, j := range jobs {
		if err := os.MkdirAll(filepath.Dir(j.Scratch), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(j.Scratch+".output.json", []byte("1"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	m.mu.Lock()
	report := m.reports[jobs[0].TaskID]
	m.mu.Unlock()
	report(executors.Event{Kind: executors.Finished, TaskID: jobs[0].TaskID, Attempt: 1, OK: true, Cleaned: true})
	m.finish(jobs[1], true)
	waitFor(t, e, "the run", func() bool { return runStatus(e, id) == "success" })
	settle(t, e) // the turn that made the run succeed has removed its scratch files (effects)
	if _, err := os.Stat(jobs[0].Scratch + ".output.json"); err != nil {
		t.Errorf("a (Cleaned): its file was removed by the engine: %v", err)
	}
	if _, err := os.Stat(jobs[1].Scratch + ".output.json"); !os.IsNotExist(err) {
		t.Errorf("b: its file was not removed: %v", err)
	}
}

// TestRelativeDataDirResolvedOnce: a data folder given as a relative path
// is made absolute once, when the engine opens: the paths an attempt gets
// (its scratch files, its log) are absolute, so
// no start looks the working folder up again, and they name the folder
// the engine opened even after the working folder changed.
func TestRelativeDataDirResolvedOnce(t *testing.T) {
	base := t.TempDir()
	t.Chdir(base)
	m := newManual(t, filepath.Join(base, "data"))
	e := openEngine(t, "data", m, 4)
	defer e.Close()
	put(t, e, flat("w", 1))
	trigger(t, e, "w")
	first := m.next()
	t.Chdir(t.TempDir())
	m.finish(first, true)
	trigger(t, e, "w")
	second := m.next()
	for _, j := range []executors.Job{first, second} {
		for _, p := range []string{j.Scratch, j.LogPath} {
			if !strings.HasPrefix(p, filepath.Join(base, "data")+string(filepath.Separator)) {
				t.Errorf("job %s: path %q, want it absolute in %s", j.TaskID, p, filepath.Join(base, "data"))
			}
		}
	}
}

// TestBootRemovesKeptInputs: the input files named after their content
// that a previous life of the daemon kept for the next attempts (see
// executors.IsInputFile), their temp files, and the shared empty input of
// versions before 2026-11-25 (work/input-empty.json, now content-named
// like any input) go at boot, before any start: the next life writes
// those it needs again, and the folder stays bounded across crashes.
func TestBootRemovesKeptInputs(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, newManual(t, dir), 4)
	e.Close()
	kept := filepath.Join(dir, "work", "input-0123456789abcdef0123456789abcdef.json")
	legacy := filepath.Join(dir, "work", "input-empty.json")
	gone := []string{kept, kept + ".tmp", legacy, legacy + ".tmp"}
	for _, p := range gone {
		writeFile(t, p, "{}")
	}
	e = openEngine(t, dir, newManual(t, dir), 4)
	defer e.Close()
	for _, p := range gone {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s after boot: %v, want it removed", p, err)
		}
	}
}

// TestBootRemovesAttemptOutputs: every attempt's output file in work/ (a
// run the state holds included) goes at boot, before any start, since a
// start no longer looks at its output path: one a previous life left
// (an attempt a crash or a cut log left behind) is nobody's. A task's
// other files there stay until their run goes.
func TestBootRemovesAttemptOutputs(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e := openEngine(t, dir, m, 4)
	put(t, e, flat("w", 1))
	id := trigger(t, e, "w")
	m.next()
	e.Close()
	work := filepath.Join(dir, "work")
	// Attempts 7 and 8 are none the log knows (a cut log left them).
	gone := []string{id + ".a.7.output.json", id + ".a.8.output.json"}
	kept := []string{id + ".a.1.output.json.bak", "notes.output.json"}
	for _, name := range append(gone[:1:1], kept...) {
		writeFile(t, filepath.Join(work, name), "1")
	}
	writeFile(t, filepath.Join(work, gone[1], "sub"), "1") // a folder a task made at ORKWAL_OUTPUT
	e = openEngine(t, dir, newManual(t, dir), 4)
	defer e.Close()
	for _, name := range gone {
		if _, err := os.Lstat(filepath.Join(work, name)); !os.IsNotExist(err) {
			t.Errorf("%s after boot: %v, want it removed", name, err)
		}
	}
	for _, name := range kept {
		if _, err := os.Lstat(filepath.Join(work, name)); err != nil {
			t.Errorf("%s after boot: %v, want it kept", name, err)
		}
	}
}

// A dispatch builds its job in few allocations (issue 27: the loop does it
// for every task, 22 allocations before): a plain task's input, Ork inputs
// and environment are shared, its two paths made in one allocation each;
// a chain's step (one upstream task) adds its input document and the map
// it is made from. The jobs are those the executor got.
func TestPrepareAllocations(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e := openEngine(t, dir, m, 4)
	defer e.Close()
	put(t, e, &workflow.Spec{Name: "w", Tasks: []*workflow.Task{
		{Name: "a", Executor: "process", Command: []string{"true"}},
		{Name: "b", Executor: "process", Command: []string{"true"}, DependsOn: []string{"a"}},
	}})
	id := trigger(t, e, "w")
	a := m.next()
	m.finish(a, true)
	b := m.next()
	for _, c := range []struct {
		job  executors.Job
		task int
		max  float64
	}{{a, 0, 6}, {b, 1, 10}} {
		e.mu.Lock()
		task, err := e.state.Task(replay.TaskRef{Run: id, Task: c.task})
		if err != nil {
			e.mu.Unlock()
			t.Fatal(err)
		}
		var s *start
		allocs := testing.AllocsPerRun(20, func() { s = e.prepare(task, 1) })
		e.mu.Unlock()
		if allocs > c.max {
			t.Errorf("%s: %.0f allocations a job, want at most %.0f", c.job.TaskName, allocs, c.max)
		}
		got, want := s.job, c.job
		got.Hold, want.Hold = nil, nil
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: prepared\n%+v\nthe executor got\n%+v", c.job.TaskName, got, want)
		}
	}
}

// The paths of an attempt's files are filepath.Join's, made by appending
// when every part is one path element, by Join otherwise.
func TestAttemptPathsAreJoined(t *testing.T) {
	for _, root := range []string{"/data", "/data/", "/", "/a/./b/../c"} {
		l := Layout(root)
		for _, run := range []string{"0b1e6f0e-4d0a-4a8e-9d5e-3b1c2d3e4f50", "..", "r/s", ""} {
			for _, task := range []string{"t", "t[12]", "a.b", ".", "x/../y"} {
				for _, n := range []int{1, 7, 123456} {
					if got, want := l.AttemptLog(run, task, n), filepath.Join(root, "logs", run, task, strconv.Itoa(n)+".log"); got != want {
						t.Errorf("AttemptLog(%q, %q, %d) in %s = %s, want %s", run, task, n, root, got, want)
					}
					if got, want := l.Scratch(run, task, n), filepath.Join(root, "work", run+"."+task+"."+strconv.Itoa(n)); got != want {
						t.Errorf("Scratch(%q, %q, %d) in %s = %s, want %s", run, task, n, root, got, want)
					}
				}
			}
		}
	}
}

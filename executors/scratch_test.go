package executors

import (
	"os"
	"path/filepath"
	"testing"
)

// An attempt reads its input through ORKWAL_INPUT, the shared file named
// after the input's content in its scratch folder (the empty input too),
// and gets no input file of its own; a task that removes or rewrites the
// shared file does not change the input of the attempts after it.
func TestSharedInputFile(t *testing.T) {
	const doc = `{"params":{},"inputs":{},"upstream":{}}`
	var shared string
	run := func(script string) Event {
		t.Helper()
		job := newTestJob(t, "sh", "-c", `test "$ORKWAL_INPUT" = "$SHARED" && test ! -e "$OWN" || exit 9
cat "$ORKWAL_INPUT" > "$ORKWAL_OUTPUT"
`+script)
		job.Input = []byte(doc)
		shared = contentInput(filepath.Dir(job.Scratch), job.Input)
		job.Env = map[string]string{"SHARED": shared, "OWN": job.Scratch + inputSuffix}
		return runJob(t, job)
	}
	for i, script := range []string{
		"",
		`rm -f "$ORKWAL_INPUT"`, // removed: written again
		`chmod u+w "$ORKWAL_INPUT" && echo '{"x":1}' >"$ORKWAL_INPUT"`, // rewritten: written again
		`mv "$ORKWAL_INPUT" "$ORKWAL_INPUT.moved" && echo '{}' >"$ORKWAL_INPUT"`,
		"",
	} {
		if fin := run(script); !fin.OK || string(fin.Output) != doc {
			t.Fatalf("attempt %d: Finished = {OK:%v Err:%q Output:%s}, want the shared document", i, fin.OK, fin.Err, fin.Output)
		}
	}
	info, err := os.Stat(shared)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o400 {
		t.Errorf("shared input mode %v, want read-only 0400", info.Mode().Perm())
	}
}

// A job without an input (Job.Input empty) reads the empty document {}
// from the file named after it, as any other input.
func TestEmptyInputIsContentNamed(t *testing.T) {
	job := newTestJob(t, "sh", "-c", `test "$ORKWAL_INPUT" = "$WANT" && cat "$ORKWAL_INPUT" > "$ORKWAL_OUTPUT"`)
	job.Input = nil
	job.Env = map[string]string{"WANT": contentInput(filepath.Dir(job.Scratch), []byte("{}"))}
	if fin := runJob(t, job); !fin.OK || string(fin.Output) != "{}" {
		t.Fatalf("Finished = {OK:%v Err:%q Output:%s}, want {} from the content-named file", fin.OK, fin.Err, fin.Output)
	}
}

// A process attempt removes its own files as it ends, right after its
// Finished report, which says so (Event.Cleaned); its input, shared, is left.
func TestProcessCleansItsScratch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script string
	}{
		{name: "no output", script: "true"},
		{name: "an output", script: `echo 1 > "$ORKWAL_OUTPUT"`},
		{name: "a folder at the output", script: `mkdir -p "$ORKWAL_OUTPUT/sub"`},
		{name: "a failure", script: `echo 1 > "$ORKWAL_OUTPUT"; exit 3`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			job := newTestJob(t, "sh", "-c", tt.script)
			p := newTestProcess(ProcessConfig{})
			cleaned := make(chan string, 1)
			p.cleaned = func(taskID string) { cleaned <- taskID }
			events := make(chan Event, 2)
			if _, err := p.Start(job, func(ev Event) { events <- ev }); err != nil {
				t.Fatal(err)
			}
			expectStarted(t, job, events)
			if fin := expectFinished(t, job, events); !fin.Cleaned {
				t.Fatalf("Finished = %+v, want Cleaned", fin)
			}
			if id := <-cleaned; id != job.TaskID {
				t.Fatalf("cleaned %s, want %s", id, job.TaskID)
			}
			for _, suffix := range scratchSuffixes {
				if _, err := os.Lstat(job.Scratch + suffix); !os.IsNotExist(err) {
					t.Errorf("%s left: %v", suffix, err)
				}
			}
			if _, err := os.Stat(contentInput(filepath.Dir(job.Scratch), emptyDocument)); err != nil {
				t.Errorf("shared input: %v", err)
			}
		})
	}
}

// The start time of a child is read from the clock around its spawn, not
// from /proc, and is the one /proc shows.
func TestSpawnStartTimeFromClock(t *testing.T) {
	path, err := lookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		c, err := spawn(path, []string{"true"}, "", nil, &taskOutput{pipeFD: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ProcStartTime(c.pid) // not reaped yet: still there
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.reap(); err != nil {
			t.Fatal(err)
		}
		if c.start != want {
			t.Fatalf("spawn %d: start time %d, /proc says %d", i, c.start, want)
		}
	}
	if got := tickCheck.Load(); got != 1 {
		t.Errorf("tickCheck = %d: the clock's ticks were never taken as the start time", got)
	}
}

// TestProcessReportsBeforeCleaning: a process attempt's Finished report
// does not wait for the removal of what it left at ORKWAL_OUTPUT (a
// system call on the data folder, on the path from a task's exit to the
// start of the next task of a chain): the file is still there when the
// report is made, and gone once the executor says it is done.
func TestProcessReportsBeforeCleaning(t *testing.T) {
	t.Parallel()
	job := newTestJob(t, "sh", "-c", `echo 1 > "$ORKWAL_OUTPUT"`)
	p := newTestProcess(ProcessConfig{})
	cleaned := make(chan string, 1)
	p.cleaned = func(taskID string) { cleaned <- taskID }
	atReport := make(chan error, 1)
	if _, err := p.Start(job, func(ev Event) {
		if ev.Kind == Finished {
			_, err := os.Lstat(job.Scratch + outputSuffix)
			atReport <- err
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := <-atReport; err != nil {
		t.Fatalf("output file at the Finished report: %v, want it still there", err)
	}
	<-cleaned
	if _, err := os.Lstat(job.Scratch + outputSuffix); !os.IsNotExist(err) {
		t.Fatalf("output file once cleaned: %v, want it removed", err)
	}
}

// A start does not look at its output path (no process ran under it
// before; boot removes what a previous life left there: see
// IsAttemptOutput): what is there stays through Prepare and Abort's
// removal is the only one.
func TestPrepareLeavesTheOutputPathAlone(t *testing.T) {
	job := newTestJob(t, "true")
	out := job.Scratch + outputSuffix
	if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, []byte("1"), 0o600); err != nil {
		t.Fatal(err)
	}
	prep, err := newTestProcess(ProcessConfig{}).Prepare(job)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(out); err != nil {
		t.Errorf("output path after Prepare: %v, want it untouched", err)
	}
	prep.Abort()
	if _, err := os.Lstat(out); !os.IsNotExist(err) {
		t.Errorf("output path after Abort: %v, want it removed", err)
	}
}

func TestIsAttemptOutput(t *testing.T) {
	for name, want := range map[string]bool{
		"0b0c2a3e-8f5e-4a8e-9d67-6b6a9f3c1d22.a.1.output.json":     true,
		"0b0c2a3e-8f5e-4a8e-9d67-6b6a9f3c1d22.a.1.output.json.bak": false,
		"0b0c2a3e-8f5e-4a8e-9d67-6b6a9f3c1d22.a.1.python.json":     false,
	} {
		if got := IsAttemptOutput(name); got != want {
			t.Errorf("IsAttemptOutput(%q) = %v, want %v", name, got, want)
		}
	}
}

package executors

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestPrepareErrorIsTyped: a failure of the daemon's own preparation (the
// input file, the log, a spawn refused for want of resources) is a
// *PrepareError, which the engine retries without spending the task's
// retries; the task's own failures (a command or workdir that does not
// exist, a spawn the program refuses) are not.
func TestPrepareErrorIsTyped(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file") // a file where a folder must be
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		mod  func(*Job)
		prep bool
	}{
		"input not written": {func(j *Job) { j.Scratch = filepath.Join(file, "work", "a.1") }, true},
		"log not opened":    {func(j *Job) { j.LogPath = filepath.Join(file, "logs", "1.log") }, true},
		"capped log":        {func(j *Job) { j.LogPath, j.MaxLogBytes = filepath.Join(file, "logs", "1.log"), 1024 }, false},
		"no such command":   {func(j *Job) { j.Command = []string{"orkwal-no-such-command"} }, false},
		"no such workdir":   {func(j *Job) { j.Workdir = filepath.Join(file, "gone") }, false},
		"python spec":       {func(j *Job) { j.Scratch, j.Python = filepath.Join(file, "work", "a.1"), &PythonJob{Module: "m"} }, true},
		"http log not opened": {func(j *Job) {
			j.LogPath, j.HTTP = filepath.Join(file, "logs", "1.log"), &HTTPJob{Method: "GET", URL: "http://127.0.0.1:1/"}
		}, true},
	} {
		job := newTestJob(t, "true")
		c.mod(&job)
		var ex Executor = newTestProcess(ProcessConfig{})
		switch {
		case job.Python != nil:
			ex = NewPython(PythonConfig{RunnerDir: t.TempDir()})
		case job.HTTP != nil:
			ex = NewHTTP(HTTPConfig{})
		}
		finished := make(chan struct{})
		h, err := ex.Start(job, func(ev Event) {
			if ev.Kind == Finished {
				close(finished)
			}
		})
		if h != nil {
			// Its end removes its scratch files: wait for it, or the
			// temporary folder's removal races with theirs.
			h.Stop(0, "test")
			<-finished
		}
		var pe *PrepareError
		if errors.As(err, &pe) != c.prep {
			t.Errorf("%s: Start = %v: a PrepareError is %v, want %v", name, err, !c.prep, c.prep)
		}
	}
	for errno, prep := range map[syscall.Errno]bool{syscall.EAGAIN: true, syscall.ENOMEM: true, syscall.EMFILE: true,
		syscall.ENFILE: true, syscall.ENOSPC: true, syscall.ENOENT: false, syscall.EACCES: false, syscall.ENOEXEC: false} {
		err := spawnFailed(&os.PathError{Op: "fork/exec", Path: "/bin/sh", Err: errno})
		var pe *PrepareError
		if errors.As(err, &pe) != prep {
			t.Errorf("a spawn failing with %v: a PrepareError is %v, want %v", errno, !prep, prep)
		}
	}
}

package executors

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// An attempt's contract files live side by side with other attempts' in
// one folder (see Job.Scratch). Every creation or removal of a name takes
// the folder's lock in the kernel, and the attempts share that folder: with
// thousands of short tasks, a file created and removed per attempt cost
// more CPU than the spawn (2,000 `true` tasks at concurrency 16: about
// 320 µs an attempt, contended, of 560; the spawn took 160). So what an
// attempt does not need is not made: no attempt gets an input file of its
// own (every input is shared: see inputs.go), and a start looks only
// (without the lock) at its input.

// scratchPrefix is job.Scratch made absolute (the task may run in another
// folder).
func scratchPrefix(job Job) (string, error) {
	if job.Scratch == "" {
		return "", errors.New("no scratch path")
	}
	prefix, err := filepath.Abs(job.Scratch)
	if err != nil {
		return "", fmt.Errorf("scratch path: %w", err)
	}
	return prefix, nil
}

// prepareScratch makes the attempt's input available: the file named
// after the input's content (see inputs.go), written if need be (which
// creates the scratch folder if it is missing). The input is the
// attempt's until it releases it (attemptFiles.release).
//
// The attempt's output path is not looked at (a stat a start, on the path
// from one task's end to the next one's spawn): nothing can be there. No
// process ran under it in this life of the daemon (an attempt number is
// dispatched again only when its dispatch was not made durable, so it
// never spawned, and what it prepared was removed), and boot removes
// every output file a previous life left (see IsAttemptOutput) before any
// start.
func prepareScratch(job Job) (attemptFiles, error) {
	prefix, err := scratchPrefix(job)
	if err != nil {
		return attemptFiles{}, err
	}
	files := attemptFiles{output: prefix + outputSuffix}
	input := job.Input
	if len(input) == 0 {
		input = emptyDocument
	}
	files.shared, err = sharedInputs.acquire(contentInput(filepath.Dir(prefix), input), input)
	if err != nil {
		return attemptFiles{}, fmt.Errorf("write input: %w", err)
	}
	files.input = files.shared.path
	return files, nil
}

// emptyDocument is the input of a job without one.
var emptyDocument = []byte("{}")

// IsAttemptOutput tells whether name (in a scratch folder) is an
// attempt's output file (ORKWAL_OUTPUT, Job.Scratch + ".output.json"):
// at boot, before any start, every one is stale (an attempt's output is
// read and removed as it ends; that of an attempt a crash or a cut log
// left behind is nobody's), and the engine removes them, so that a start
// need not look at its output path (see prepareScratch).
func IsAttemptOutput(name string) bool { return strings.HasSuffix(name, outputSuffix) }

// writeScratch writes a scratch file, creating its folder (the run's) when
// it is missing: the first start of a run creates it, the others find it.
func writeScratch(path string, data []byte) error {
	return writeScratchMode(path, data, 0o600)
}

func writeScratchMode(path string, data []byte, mode uint32) error {
	err := writeNew(path, data, mode)
	if errors.Is(err, fs.ErrNotExist) {
		if _, err = makeDir(filepath.Dir(path)); err != nil {
			return fmt.Errorf("create scratch folder: %w", err)
		}
		err = writeNew(path, data, mode)
	}
	return err
}

// makeDir creates folder dir and its missing parents, and tells whether
// it created dir itself (false: it was there). Unlike os.MkdirAll it
// tries the mkdir first: a task's folder is usually new and its parent
// there, and every system call counts when thousands of tasks start.
func makeDir(dir string) (created bool, err error) {
	err = os.Mkdir(dir, 0o700)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(filepath.Dir(dir), 0o700); err == nil {
			err = os.Mkdir(dir, 0o700)
		}
	}
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrExist):
		if info, serr := os.Stat(dir); serr == nil && info.IsDir() {
			return false, nil
		}
	}
	return false, err
}

// scratchSuffixes are the suffixes of every file an executor may make at
// an attempt's Job.Scratch.
var scratchSuffixes = [...]string{inputSuffix, outputSuffix, pythonSpecSuffix, errorSuffix}

// RemoveScratch removes an attempt's scratch files (those of Job.Scratch
// prefix), whichever exist; a folder a task made in the place of one (say
// at ORKWAL_OUTPUT) goes whole. Files already gone, or no prefix (""), are
// no error. The folder that holds them is left: other attempts' files may
// be there.
func RemoveScratch(prefix string) error {
	if prefix == "" {
		return nil
	}
	var first error
	for _, suffix := range scratchSuffixes {
		if err := removeScratchFile(prefix + suffix); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// removeScratchFile removes path, whole if it is a folder; one already
// gone is no error.
func removeScratchFile(path string) error {
	err := unix.Unlink(path)
	switch err {
	case nil, unix.ENOENT:
		return nil
	case unix.EISDIR:
		return os.RemoveAll(path)
	}
	return &os.PathError{Op: "unlink", Path: path, Err: err}
}

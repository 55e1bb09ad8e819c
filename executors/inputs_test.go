package executors

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// inputRefs is how many attempts use the shared input file at path.
func inputRefs(path string) int {
	sharedInputs.mu.Lock()
	defer sharedInputs.mu.Unlock()
	if f := sharedInputs.files[path]; f != nil {
		return f.refs
	}
	return 0
}

// readInputTask is a job whose task copies its input to a file, returned.
func readInputTask(t *testing.T, input string) (Job, string) {
	t.Helper()
	copied := filepath.Join(t.TempDir(), "copied")
	job := newTestJob(t, "sh", "-c", `cat "$ORKWAL_INPUT" > "`+copied+`"`)
	job.Input = []byte(input)
	return job, copied
}

// TestInputWithoutAFileOfItsOwn: an attempt's input is a read-only file
// named after its content, which the attempts with the same input share
// (no file made and removed per attempt): each reads its own bytes, a
// second attempt with the same input (a retry, a run of the same
// workflow) finds the file there and reads the same bytes, and one whose
// file a task changed or removed, or that a previous life of the daemon
// left with other bytes (after a crash), has it written again first.
func TestInputWithoutAFileOfItsOwn(t *testing.T) {
	dir := t.TempDir()
	p := newTestProcess(ProcessConfig{})
	run := func(input string, attempt int) (string, string) {
		t.Helper()
		job, copied := readInputTask(t, input)
		job.Scratch = filepath.Join(dir, fmt.Sprintf("run.a.%d", attempt))
		job.Attempt = attempt
		events := make(chan Event, 2)
		if _, err := p.Start(job, func(ev Event) { events <- ev }); err != nil {
			t.Fatal(err)
		}
		expectStarted(t, job, events)
		if fin := expectFinished(t, job, events); !fin.OK {
			t.Fatalf("attempt %d: %+v", attempt, fin)
		}
		got, err := os.ReadFile(copied)
		if err != nil {
			t.Fatal(err)
		}
		return string(got), contentInput(dir, job.Input)
	}
	const in = `{"params":{},"inputs":{},"upstream":{"a":null}}`
	got, path := run(in, 1)
	if got != in {
		t.Fatalf("attempt 1 read %q, want %q", got, in)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o400 {
		t.Fatalf("input file after attempt 1: %v, %v; want it kept, read-only", info, err)
	}
	if got, _ := run(in, 2); got != in {
		t.Fatalf("attempt 2 (the same input) read %q, want %q", got, in)
	}
	if got, _ := run(`{"other":1}`, 3); got != `{"other":1}` {
		t.Fatalf("attempt 3 (another input) read %q", got)
	}
	// A task changed the shared file (it is its to read, not to change).
	overwrite(t, path, `{"changed":true}`)
	if got, _ := run(in, 4); got != in {
		t.Fatalf("attempt 4 (after a task changed the file) read %q, want %q", got, in)
	}
	// A previous life of the daemon (after a crash) left other bytes
	// there: this process never wrote it, so it does not trust it.
	sharedInputs.mu.Lock()
	f := sharedInputs.files[path]
	sharedInputs.mu.Unlock()
	f.mu.Lock()
	f.id = inputID{}
	f.mu.Unlock()
	overwrite(t, path, `{"stale":true}`)
	if got, _ := run(in, 5); got != in {
		t.Fatalf("attempt 5 (after a crash left other bytes) read %q, want %q", got, in)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if got, _ := run(in, 6); got != in {
		t.Fatalf("attempt 6 (after the file was removed) read %q, want %q", got, in)
	}
}

// overwrite writes data over the read-only file at path, as a task could.
func overwrite(t *testing.T, path, data string) {
	t.Helper()
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestIdleInputsAreBounded: of the content-named input files no attempt
// uses, at most keepIdle are kept, the least recently used going first;
// one an attempt uses is never removed (see also
// TestIdleInputsBoundedInBytes).
func TestIdleInputsAreBounded(t *testing.T) {
	s := &sharedFiles{files: map[string]*sharedFile{}, keep: 2, keepBytes: 1 << 20, keepFile: 1 << 10}
	dir := t.TempDir()
	held, err := s.acquire(contentInput(dir, []byte(`"held"`)), []byte(`"held"`))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for i := range 4 {
		data := []byte(fmt.Sprint(i))
		f, err := s.acquire(contentInput(dir, data), data)
		if err != nil {
			t.Fatal(err)
		}
		s.release(f)
		paths = append(paths, f.path)
	}
	for i, path := range paths {
		_, err := os.Stat(path)
		if kept := i >= 2; kept != (err == nil) {
			t.Errorf("input %d: %v, want kept %v", i, err, kept)
		}
	}
	if _, err := os.Stat(held.path); err != nil {
		t.Errorf("the input an attempt uses: %v, want it there", err)
	}
	s.release(held)
	if _, err := os.Stat(paths[2]); err == nil {
		t.Errorf("input 2: kept, want it removed once the held one went idle after it")
	}
}

// TestIdleInputsBoundedInBytes: idle input files are kept up to
// keepIdleBytes in all, the least recently used going first, and one
// larger than keepIdleFile goes as soon as no attempt uses it.
func TestIdleInputsBoundedInBytes(t *testing.T) {
	s := &sharedFiles{files: map[string]*sharedFile{}, keep: 100, keepBytes: 250, keepFile: 100}
	dir := t.TempDir()
	use := func(data string) string {
		t.Helper()
		f, err := s.acquire(contentInput(dir, []byte(data)), []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		s.release(f)
		return f.path
	}
	var kept []string
	for i := range 3 {
		kept = append(kept, use(fmt.Sprintf("%0100d", i))) // 100 bytes each: the third goes over 250
	}
	big := use(fmt.Sprintf("%0101d", 0))
	for i, want := range []bool{false, true, true} {
		if _, err := os.Stat(kept[i]); (err == nil) != want {
			t.Errorf("input %d (100 bytes): %v, want kept %v", i, err, want)
		}
	}
	if _, err := os.Stat(big); !os.IsNotExist(err) {
		t.Errorf("input of 101 bytes, over keepIdleFile: %v, want it removed once idle", err)
	}
	if s.idleBytes != 200 {
		t.Errorf("idle bytes %d, want 200", s.idleBytes)
	}
}

// TestIsInputFile: the names boot removes from work/ as shared inputs:
// the content-named ones, the empty input of versions before 2026-11-25,
// and their temp files; no attempt's own file.
func TestIsInputFile(t *testing.T) {
	name := filepath.Base(contentInput("/x", []byte("{}")))
	for _, c := range []struct {
		name string
		want bool
	}{
		{name, true},
		{name + ".tmp", true},
		{"input-empty.json", true},
		{"input-empty.json.tmp", true},
		{"input-empty.json.tmp.tmp", false},
		{"input-empty.jsonx", false},
		{"input-" + name[6:38] + ".txt", false},
		{"input-zz" + name[8:], false},
		{"0b0c2a3e-8f5e-4a8e-9d67-6b6a9f3c1d22.a.1.input.json", false},
	} {
		if got := IsInputFile(c.name); got != c.want {
			t.Errorf("IsInputFile(%q) = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestChangedInputKeepingItsTimesIsWrittenAgain: a task that rewrites
// its shared input in place with bytes of the same size and sets its
// modification time back (cp -p over it, touch -d) leaves the inode, the
// size and the modification time as they were; the next attempt with that
// input still reads the input, not the task's bytes (the change time,
// which no task can set, tells).
func TestChangedInputKeepingItsTimesIsWrittenAgain(t *testing.T) {
	s := &sharedFiles{files: map[string]*sharedFile{}, keep: keepIdle, keepBytes: keepIdleBytes, keepFile: keepIdleFile}
	data := []byte(`{"params":{"n":1}}`)
	f, err := s.acquire(contentInput(t.TempDir(), data), data)
	if err != nil {
		t.Fatal(err)
	}
	s.release(f)
	before, err := os.Stat(f.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f.path, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(f.path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.WriteAt([]byte(`{"params":{"n":2}}`), 0)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f.path, 0o400); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(f.path, before.ModTime(), before.ModTime()); err != nil {
		t.Fatal(err)
	}
	again, err := s.acquire(f.path, data)
	if err != nil {
		t.Fatal(err)
	}
	defer s.release(again)
	if got, err := os.ReadFile(f.path); err != nil || string(got) != string(data) {
		t.Fatalf("the next attempt reads %q (%v), want %q", got, err, data)
	}
}

// TestFolderInPlaceOfInputIsReplaced: a task that removed its shared
// input and made a folder there (or at its temp file's name) does not
// keep every later attempt with that input from starting: the folder goes
// and the input is written again.
func TestFolderInPlaceOfInputIsReplaced(t *testing.T) {
	for _, name := range []string{"", ".tmp"} {
		s := &sharedFiles{files: map[string]*sharedFile{}, keep: keepIdle, keepBytes: keepIdleBytes, keepFile: keepIdleFile}
		data := []byte(`{"item":7}`)
		path := contentInput(t.TempDir(), data)
		f, err := s.acquire(path, data)
		if err != nil {
			t.Fatal(err)
		}
		s.release(f)
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(path+name, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
		again, err := s.acquire(path, data)
		if err != nil {
			t.Fatalf("a folder at the input%s: %v, want the input written again", name, err)
		}
		s.release(again)
		if got, err := os.ReadFile(path); err != nil || string(got) != string(data) {
			t.Fatalf("a folder at the input%s: the next attempt reads %q (%v), want %q", name, got, err, data)
		}
	}
}

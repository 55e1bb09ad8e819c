package executors

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// pattern returns n deterministic pseudo-random bytes, so that a byte out
// of place shows.
func pattern(seed uint64, n int64) []byte {
	r := rand.New(rand.NewPCG(seed, 42))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// seqOutput is what `seq from to` prints.
func seqOutput(from, to int) []byte {
	var b bytes.Buffer
	for i := from; i <= to; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// wantCapped is what a log capped at maxBytes keeps of out.
func wantCapped(out []byte, maxBytes int64) []byte {
	if int64(len(out)) <= maxBytes {
		return out
	}
	head, tail := splitCap(maxBytes)
	var b bytes.Buffer
	b.Write(out[:head])
	b.WriteString(logMarker(int64(len(out))-maxBytes, head, tail))
	b.Write(out[int64(len(out))-tail:])
	return b.Bytes()
}

// checkCappedLog compares the log at path with prefix followed by what the
// cap keeps of out, and checks the sidecar is gone.
func checkCappedLog(t *testing.T, path, prefix string, out []byte, maxBytes int64) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read log: %v", err)
	}
	want := append([]byte(prefix), wantCapped(out, maxBytes)...)
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Errorf("log of %d bytes differs from the %d expected at byte %d (output %d bytes, cap %d)\n got: %q\nwant: %q",
			len(got), len(want), i, len(out), maxBytes, excerpt(got, i), excerpt(want, i))
	}
	if _, err := os.Stat(path + tailSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("sidecar %s still there (%v)", path+tailSuffix, err)
	}
}

// excerpt returns up to 40 bytes of b around i.
func excerpt(b []byte, i int) []byte {
	return b[max(0, i-20):min(len(b), i+20)]
}

func TestLogMarker(t *testing.T) {
	t.Parallel()
	got := logMarker(123456789, 5242880, 5242880)
	want := "\n[orkwal: 123456789 bytes of output omitted; the log keeps the first 5242880 and the last 5242880 bytes]\n"
	if got != want {
		t.Errorf("logMarker = %q, want %q", got, want)
	}
	for _, tt := range []struct{ cap, head, tail int64 }{{1, 0, 1}, {2, 1, 1}, {101, 50, 51}, {10 << 20, 5 << 20, 5 << 20}} {
		if h, tl := splitCap(tt.cap); h != tt.head || tl != tt.tail {
			t.Errorf("splitCap(%d) = %d, %d; want %d, %d", tt.cap, h, tl, tt.head, tt.tail)
		}
	}
}

// TestCappedLogWriter drives the writer directly: sizes around the cap and
// multiples of the tail, written in chunks of several sizes.
func TestCappedLogWriter(t *testing.T) {
	t.Parallel()
	const c = 100 // even: head 50, tail 50
	tests := []struct {
		name     string
		maxBytes int64
		size     int64
	}{
		{"empty", c, 0},
		{"one byte", c, 1},
		{"head-1", c, c/2 - 1},
		{"head", c, c / 2},
		{"head+1", c, c/2 + 1},
		{"cap-1", c, c - 1},
		{"cap", c, c},
		{"cap+1", c, c + 1},
		{"cap+half-1", c, c + c/2 - 1},
		{"cap+half", c, c + c/2},
		{"cap+half+1", c, c + c/2 + 1},
		{"2 cap", c, 2 * c},
		{"3 cap", c, 3 * c},
		{"7 halves", c, 7 * c / 2},
		{"large", c, 100*c + 17},
		{"odd cap, cap", 101, 101},
		{"odd cap, cap+1", 101, 102},
		{"odd cap, 3 cap", 101, 303},
		{"odd cap, head+2 tails", 101, 50 + 2*51},
		{"cap 1, 1", 1, 1},
		{"cap 1, 2", 1, 2},
		{"cap 1, 5", 1, 5},
		{"cap 2, 3", 2, 3},
	}
	chunks := []int64{1, 7, 49, 50, 51, 100, 1 << 20}
	for _, tt := range tests {
		for _, chunk := range chunks {
			t.Run(fmt.Sprintf("%s/chunk %d", tt.name, chunk), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "logs", "task.log")
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				const prefix = "previous attempt\n"
				if err := os.WriteFile(path, []byte(prefix), 0o644); err != nil {
					t.Fatal(err)
				}
				out := pattern(uint64(tt.size), tt.size)
				w, err := newCappedLog(path, tt.maxBytes)
				if err != nil {
					t.Fatal(err)
				}
				for rest := out; len(rest) > 0; {
					k := min(int64(len(rest)), chunk)
					if n, err := w.Write(rest[:k]); n != int(k) || err != nil {
						t.Fatalf("Write = %d, %v; want %d, nil", n, err, k)
					}
					rest = rest[k:]
				}
				w.created()
				_, sidecar := os.Stat(path + tailSuffix)
				if wantSidecar := tt.size > tt.maxBytes/2; (sidecar == nil) != wantSidecar {
					t.Errorf("sidecar exists = %v before finish, want %v", sidecar == nil, wantSidecar)
				}
				if err := w.finish(); err != nil {
					t.Fatalf("finish: %v", err)
				}
				checkCappedLog(t, path, prefix, out, tt.maxBytes)
				if err := w.finish(); err != nil {
					t.Errorf("second finish: %v", err)
				}
			})
		}
	}
}

// onlyReader hides every method of a reader but Read.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// TestCappedLogReadFrom copies through io.Copy, as os/exec does: from a
// pipe (read through the poller) and from a plain reader.
func TestCappedLogReadFrom(t *testing.T) {
	t.Parallel()
	const maxBytes = 64<<10 + 1
	out := pattern(7, 5*maxBytes+3)
	for _, viaPipe := range []bool{true, false} {
		t.Run(fmt.Sprintf("pipe %v", viaPipe), func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "task.log")
			w, err := newCappedLog(path, maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			var src io.Reader = onlyReader{bytes.NewReader(out)}
			if viaPipe {
				pr, pw, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				defer pr.Close()
				go func() {
					// Uneven writes, so that reads see partial buffers.
					for rest := out; len(rest) > 0; {
						k := min(len(rest), 3000+len(rest)%5000)
						if _, err := pw.Write(rest[:k]); err != nil {
							break
						}
						rest = rest[k:]
					}
					pw.Close()
				}()
				src = pr
			}
			n, err := io.Copy(w, src)
			if n != int64(len(out)) || err != nil {
				t.Fatalf("io.Copy = %d, %v; want %d, nil", n, err, len(out))
			}
			if err := w.finish(); err != nil {
				t.Fatal(err)
			}
			checkCappedLog(t, path, "", out, maxBytes)
		})
	}
}

// TestCappedLogWriteError: output that cannot be kept is dropped without
// failing the writer (the copier must go on draining the pipe), and the log
// says so.
func TestCappedLogWriteError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "task.log")
	w, err := newCappedLog(path, 10)
	if err != nil {
		t.Fatal(err)
	}
	// The sidecar cannot be created: its name is taken by a folder.
	if err := os.Mkdir(path+tailSuffix, 0o755); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if n, err := w.Write([]byte("0123456789")); n != 10 || err != nil {
			t.Fatalf("Write = %d, %v; want 10, nil", n, err)
		}
	}
	if err := w.finish(); err == nil || !strings.Contains(err.Error(), "create log tail") {
		t.Errorf("finish = %v, want the sidecar error", err)
	}
	got := readFileString(t, path)
	if !strings.HasPrefix(got, "01234\n[orkwal: log incomplete: create log tail: ") {
		t.Errorf("log = %q, want the head then a note of the error", got)
	}
}

// TestCappedLogCreatedOnFirstOutput: no output, no log file nor folder;
// the first byte creates both, and output given while the file is being
// created (below and beyond maxEarly) reaches it in order.
func TestCappedLogCreatedOnFirstOutput(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "logs", "run", "task")
	quiet, err := newCappedLog(filepath.Join(dir, "1.log"), 100)
	if err != nil {
		t.Fatal(err)
	}
	if err := quiet.finish(); err != nil {
		t.Fatalf("finish of a quiet log: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a log with no output made its folder: %v", err)
	}
	for _, sizes := range [][]int{{5}, {1, maxEarly, 3}, {maxEarly + 1}, {maxEarly - 1, 2, 1}} {
		path := filepath.Join(dir, fmt.Sprintf("%v.log", sizes))
		w, err := newCappedLog(path, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		var want []byte
		for i, n := range sizes {
			p := pattern(uint64(i), int64(n))
			want = append(want, p...)
			if k, err := w.Write(p); k != n || err != nil {
				t.Fatalf("Write = %d, %v; want %d, nil", k, err, n)
			}
		}
		if err := w.finish(); err != nil {
			t.Fatalf("finish: %v", err)
		}
		if got := readFileString(t, path); got != string(want) {
			t.Errorf("writes of %v: log holds %d bytes, want the %d written, in order", sizes, len(got), len(want))
		}
	}
}

// TestQuietCappedLogHoldsLittle: the capped log of a task that writes
// nothing holds the fields a quiet task needs, at most 80 bytes (issue 27:
// memory per running task; 208 bytes and a ring path of its own before);
// the rest comes with the first byte, and the log is as before.
func TestQuietCappedLogHoldsLittle(t *testing.T) {
	t.Parallel()
	if size := unsafe.Sizeof(cappedLog{}); size > 80 {
		t.Errorf("a cappedLog is %d bytes, want at most 80", size)
	}
	path := filepath.Join(t.TempDir(), "1.log")
	c, err := newCappedLog(path, 8)
	if err != nil {
		t.Fatal(err)
	}
	c.Write(nil)
	if c.offer(nil) || c.whenCreated(func() {}) || c.earlyBytes() != 0 {
		t.Error("a quiet log is full, or being created")
	}
	if c.logWrite != nil {
		t.Fatal("a quiet log holds the part output needs")
	}
	c.Write([]byte("0123456789"))
	if c.logWrite == nil {
		t.Fatal("output was given, and the log has no part for it")
	}
	if err := c.finish(); err != nil {
		t.Fatal(err)
	}
	if got, want := readFileString(t, path), "0123"+logMarker(2, 4, 4)+"6789"; got != want {
		t.Errorf("log = %q, want %q", got, want)
	}
}

// TestCappedLogEmptyWrite: an empty write creates no log and breaks
// nothing, before the log exists or after.
func TestCappedLogEmptyWrite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "logs", "t", "1.log")
	w, err := newCappedLog(path, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range [][]byte{nil, []byte("hello\n"), {}, []byte("world\n")} {
		if n, err := w.Write(p); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if err := w.finish(); err != nil {
		t.Fatalf("finish: %v", err)
	}
	if got := readFileString(t, path); got != "hello\nworld\n" {
		t.Fatalf("log = %q, want the two lines", got)
	}
	quiet, _ := newCappedLog(filepath.Join(filepath.Dir(path), "2.log"), 1<<20)
	quiet.Write(nil)
	if err := quiet.finish(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), "2.log")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an empty write created a log: %v", err)
	}
}

// TestCappedLogCreateError: a log whose file cannot be created drops the
// output without failing the writer, and finish says why.
func TestCappedLogCreateError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	blocked := filepath.Join(dir, "logs") // a file where the log's folder would go
	if err := os.WriteFile(blocked, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := newCappedLog(filepath.Join(blocked, "task", "1.log"), 100)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if n, err := w.Write([]byte("0123456789")); n != 10 || err != nil {
			t.Fatalf("Write = %d, %v; want 10, nil", n, err)
		}
	}
	if err := w.finish(); err == nil || !strings.Contains(err.Error(), "1.log: not a directory") {
		t.Errorf("finish = %v, want the creation's error", err)
	}
}

func readFileString(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestProcessLogCap(t *testing.T) {
	t.Parallel()
	const maxBytes = 100_001 // head 50000, tail 50001
	tests := []struct {
		name   string
		script string
		out    []byte
	}{
		{"empty", "true", nil},
		{"below the cap", "seq 1 10000", seqOutput(1, 10000)},
		{"cap-1", fmt.Sprintf("seq 1 30000 | head -c %d", maxBytes-1), seqOutput(1, 30000)[:maxBytes-1]},
		{"exactly the cap", fmt.Sprintf("seq 1 30000 | head -c %d", maxBytes), seqOutput(1, 30000)[:maxBytes]},
		{"cap+1", fmt.Sprintf("seq 1 30000 | head -c %d", maxBytes+1), seqOutput(1, 30000)[:maxBytes+1]},
		{"3 times the cap", fmt.Sprintf("seq 1 100000 | head -c %d", 3*maxBytes), seqOutput(1, 100000)[:3*maxBytes]},
		{"far over the cap", "seq 1 1000000", seqOutput(1, 1000000)},
		{
			"stdout and stderr interleaved",
			"seq 1 1000; seq 1001 2000 >&2; seq 2001 3000; seq 3001 4000 >&2",
			seqOutput(1, 4000),
		},
		{
			"head from stdout, tail from stderr",
			fmt.Sprintf("seq 1 100000 | head -c %d; seq 100001 200000 | head -c %d >&2", 2*maxBytes, 2*maxBytes),
			append(seqOutput(1, 100000)[:2*maxBytes:2*maxBytes], seqOutput(100001, 200000)[:2*maxBytes]...),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			job := newTestJob(t, "sh", "-c", tt.script)
			job.MaxLogBytes = maxBytes
			const prefix = "previous attempt\n"
			if err := os.MkdirAll(filepath.Dir(job.LogPath), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(job.LogPath, []byte(prefix), 0o644); err != nil {
				t.Fatal(err)
			}
			if fin := runJob(t, job); !fin.OK {
				t.Fatalf("Finished = %+v", fin)
			}
			// Read right after Finished: the log must be complete by then.
			checkCappedLog(t, job.LogPath, prefix, tt.out, maxBytes)
		})
	}
}

// TestProcessLogCreatedOnOutput: with a capped log, a task that writes
// nothing leaves no log file and no log folder; one that writes has its
// log complete at Finished; one whose log cannot be created still
// succeeds, and the daemon's log says why its output is missing.
func TestProcessLogCreatedOnOutput(t *testing.T) {
	t.Parallel()
	quiet := newTestJob(t, "true")
	quiet.MaxLogBytes = 1 << 20
	if fin := runJob(t, quiet); !fin.OK {
		t.Fatalf("quiet task: %+v", fin)
	}
	if _, err := os.Stat(filepath.Dir(quiet.LogPath)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a task with no output made a log folder: %v", err)
	}

	chatty := newTestJob(t, "sh", "-c", "echo out; echo err >&2")
	chatty.MaxLogBytes = 1 << 20
	if fin := runJob(t, chatty); !fin.OK {
		t.Fatalf("chatty task: %+v", fin)
	}
	if got := readLog(t, chatty); got != "out\nerr\n" {
		t.Errorf("log = %q, want the task's output", got)
	}

	blocked := newTestJob(t, "echo", "lost")
	blocked.MaxLogBytes = 1 << 20
	if err := os.WriteFile(filepath.Dir(blocked.LogPath), nil, 0o644); err != nil { // a file where the folder goes
		t.Fatal(err)
	}
	var warnings syncBuffer
	p := newTestProcess(ProcessConfig{Logger: slog.New(slog.NewTextHandler(&warnings, nil))})
	events := make(chan Event, 4)
	if _, err := p.Start(blocked, func(ev Event) { events <- ev }); err != nil {
		t.Fatal(err)
	}
	expectStarted(t, blocked, events)
	if fin := expectFinished(t, blocked, events); !fin.OK {
		t.Fatalf("a task whose log could not be created: %+v, want it to succeed", fin)
	}
	if w := warnings.String(); !strings.Contains(w, "task log incomplete") || !strings.Contains(w, "not a directory") {
		t.Errorf("daemon log = %q, want a warning naming the reason", w)
	}
}

// syncBuffer is a bytes.Buffer safe for the goroutines of a logger.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestProcessLogCapExitCodeAndStop: the capped path changes neither the exit
// code nor Stop.
func TestProcessLogCapExitCodeAndStop(t *testing.T) {
	t.Parallel()
	t.Run("exit code", func(t *testing.T) {
		t.Parallel()
		job := newTestJob(t, "sh", "-c", "seq 1 50000; exit 3")
		job.MaxLogBytes = 1000
		fin := runJob(t, job)
		if fin.OK || fin.ExitCode != 3 || fin.Err != "exit status 3" {
			t.Errorf("Finished = %+v, want exit 3", fin)
		}
		checkCappedLog(t, job.LogPath, "", seqOutput(1, 50000), 1000)
	})
	t.Run("no log path", func(t *testing.T) {
		t.Parallel()
		job := newTestJob(t, "sh", "-c", "seq 1 50000")
		job.LogPath = "" // the null device, as without a cap
		job.MaxLogBytes = 1000
		if fin := runJob(t, job); !fin.OK {
			t.Errorf("Finished = %+v", fin)
		}
	})
	t.Run("stop", func(t *testing.T) {
		t.Parallel()
		job := newTestJob(t, "sh", "-c", `sleep 60 & echo "grandchild $!"; sleep 60; wait`)
		job.MaxLogBytes = 1 << 20
		h, events := startJob(t, job)
		started := expectStarted(t, job, events)
		if pgid, err := syscall.Getpgid(started.PID); err != nil || pgid != started.PID {
			t.Errorf("pgid of %d = %d (%v), want its own group", started.PID, pgid, err)
		}
		grandchild, err := strconv.Atoi(waitForLogLine(t, job, "grandchild "))
		if err != nil {
			t.Fatal(err)
		}
		gcStart, err := ProcStartTime(grandchild)
		if err != nil {
			t.Fatal(err)
		}
		h.Stop(guard, "stopped by the test")
		fin := expectFinished(t, job, events)
		if fin.OK || fin.Err != "killed by signal: terminated" {
			t.Errorf("Finished = %+v, want killed by SIGTERM", fin)
		}
		waitGone(t, grandchild, gcStart)
		checkCappedLog(t, job.LogPath, "", []byte(fmt.Sprintf("grandchild %d\n\n[orkwal: stopped by the test]\n", grandchild)), 1<<20)
	})
}

// TestProcessLogCapStraggler: a background child that keeps the log pipe
// open does not hold Finished back longer than logDrainDelay, and a task
// that exited 0 is still a success.
func TestProcessLogCapStraggler(t *testing.T) {
	t.Parallel()
	job := newTestJob(t, "sh", "-c", `sleep 60 & echo "straggler $!"`)
	job.MaxLogBytes = 1 << 20
	begin := time.Now()
	fin := runJob(t, job)
	elapsed := time.Since(begin)
	line := strings.TrimSuffix(readLog(t, job), "\n")
	pid, err := strconv.Atoi(strings.TrimPrefix(line, "straggler "))
	if err != nil {
		t.Fatalf("log = %q: %v", line, err)
	}
	if st, err := ProcStartTime(pid); err == nil {
		// Still running, as it should: it is no concern of the executor.
		t.Cleanup(func() {
			if now, err := ProcStartTime(pid); err == nil && now == st {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		})
	} else {
		t.Errorf("the straggler %d is gone: %v", pid, err)
	}
	if !fin.OK || fin.ExitCode != 0 || fin.Err != "" {
		t.Errorf("Finished = %+v, want success despite the straggler", fin)
	}
	if elapsed > logDrainDelay+time.Second {
		t.Errorf("Finished came %v after Start, want at most about %v", elapsed, logDrainDelay)
	}
	if elapsed < logDrainDelay {
		t.Errorf("Finished came %v after Start, before the %v drain delay", elapsed, logDrainDelay)
	}
	if _, err := os.Stat(job.LogPath + tailSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("sidecar still there (%v)", err)
	}
}

// TestProcessLogCapShortStraggler: output of a background child that ends
// within the delay is in the log when Finished comes.
func TestProcessLogCapShortStraggler(t *testing.T) {
	t.Parallel()
	job := newTestJob(t, "sh", "-c", `(seq 1 20000 >&2) & echo leader`)
	job.MaxLogBytes = 1 << 20
	if fin := runJob(t, job); !fin.OK {
		t.Fatalf("Finished = %+v", fin)
	}
	log := readLog(t, job)
	// The two processes may interleave either way: take the leader's line out.
	if rest := strings.Replace(log, "leader\n", "", 1); rest != string(seqOutput(1, 20000)) {
		t.Errorf("log lacks the background child's output (%d bytes): %q", len(log), excerpt([]byte(log), 0))
	}
}

func TestPythonLogCap(t *testing.T) {
	t.Parallel()
	const py = `
def noisy(n):
    for i in range(1, n + 1):
        print(i)
    return "done"
`
	job := newTestJob(t)
	job.Python = &PythonJob{File: writeFile(t, t.TempDir(), "noisy.py", py), Function: "noisy",
		Interpreter: testInterpreter()}
	job.Input = []byte(`{"inputs": {"n": 30000}}`) // 168894 bytes
	job.MaxLogBytes = 65_536
	expectOK(t, runPython(t, job), `"done"`)
	checkCappedLog(t, job.LogPath, "", seqOutput(1, 30000), 65_536)
}

// benchmarkLog runs a task writing 100 MiB to its log, capped at 10 MiB or
// not.
func benchmarkLog(b *testing.B, maxBytes int64) {
	const size = 100 << 20
	dir := b.TempDir()
	p := newTestProcess(ProcessConfig{})
	b.SetBytes(size)
	for i := range b.N {
		job := Job{
			TaskID: "t", Attempt: 1, ParallelCount: 1,
			Command:     []string{"head", "-c", strconv.Itoa(size), "/dev/zero"},
			LogPath:     filepath.Join(dir, fmt.Sprintf("t%d.log", i)),
			Scratch:     filepath.Join(dir, "scratch"),
			MaxLogBytes: maxBytes,
		}
		done := make(chan Event, 2)
		if _, err := p.Start(job, func(ev Event) {
			if ev.Kind == Finished {
				done <- ev
			}
		}); err != nil {
			b.Fatal(err)
		}
		if fin := <-done; !fin.OK {
			b.Fatalf("Finished = %+v", fin)
		}
		b.StopTimer()
		os.Remove(job.LogPath)
		b.StartTimer()
	}
}

func BenchmarkLog100MiBDirect(b *testing.B) { benchmarkLog(b, 0) }

// BenchmarkLog100MiBCapped10MiB: 10 MiB reach the log, the rest the ring.
func BenchmarkLog100MiBCapped10MiB(b *testing.B) { benchmarkLog(b, 10<<20) }

// BenchmarkLog100MiBCappedAbove: the capped path, all of it kept (head and
// ring within the cap): the same disk work as Direct, plus the pipe.
func BenchmarkLog100MiBCappedAbove(b *testing.B) { benchmarkLog(b, 200<<20) }

// BenchmarkLogCapIdleMemory reports the Go memory held per running task
// whose log is idle (the task sleeps after some output), capped or not.
func BenchmarkLogCapIdleMemory(b *testing.B) {
	const tasks = 200
	for _, maxBytes := range []int64{0, 10 << 20} {
		b.Run(fmt.Sprintf("cap %d", maxBytes), func(b *testing.B) {
			for range b.N {
				dir := b.TempDir()
				p := newTestProcess(ProcessConfig{})
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				handles := make([]Handle, 0, tasks)
				finished := make(chan struct{}, tasks)
				for i := range tasks {
					job := Job{
						TaskID: strconv.Itoa(i), Attempt: 1, ParallelCount: 1,
						Command:     []string{"sh", "-c", "seq 1 20000; echo ready; exec sleep 60"},
						LogPath:     filepath.Join(dir, fmt.Sprintf("t%d.log", i)),
						Scratch:     filepath.Join(dir, "scratch", strconv.Itoa(i)),
						MaxLogBytes: maxBytes,
					}
					h, err := p.Start(job, func(ev Event) {
						if ev.Kind == Finished {
							finished <- struct{}{}
						}
					})
					if err != nil {
						b.Fatal(err)
					}
					handles = append(handles, h)
				}
				// Poll the external processes' logs until all wrote theirs.
				for i := range tasks {
					path := filepath.Join(dir, fmt.Sprintf("t%d.log", i))
					for {
						if data, _ := os.ReadFile(path); bytes.HasSuffix(data, []byte("ready\n")) {
							break
						}
						time.Sleep(time.Millisecond)
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				used := int64(after.HeapInuse+after.StackInuse) - int64(before.HeapInuse+before.StackInuse)
				b.ReportMetric(float64(used)/tasks, "B/task")
				for _, h := range handles {
					h.Stop(time.Second, "stopped by the test")
				}
				for range tasks {
					<-finished
				}
			}
		})
	}
}

// delayedLog is a capped log of 1 MiB in a test folder whose creation
// waits until release is called (at the latest when the test ends, which
// then waits for it: no creation outlives the test's folder).
func delayedLog(t *testing.T) (c *cappedLog, path string, release func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "logs", "t", "1.log")
	c, err := newCappedLog(path, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	c.open = func(path string) (*os.File, error) {
		<-gate
		return openLog(path)
	}
	release = sync.OnceFunc(func() { close(gate) })
	t.Cleanup(func() { release(); c.created() })
	return c, path, release
}

// TestCappedLogOfferWhileCreating: while the log is being created, offer
// keeps output and never waits, and says when maxEarly bytes are kept;
// whenCreated's function is called once the file exists, which then holds
// every byte offered, in order; with no creation under way whenCreated
// declines.
func TestCappedLogOfferWhileCreating(t *testing.T) {
	t.Parallel()
	c, path, release := delayedLog(t)
	if c.whenCreated(func() {}) {
		t.Fatal("whenCreated accepted before any output started a creation")
	}
	var want []byte
	offer := func(n int) bool {
		p := pattern(uint64(len(want)), int64(n))
		want = append(want, p...)
		return c.offer(p)
	}
	if offer(maxEarly - 10) {
		t.Fatalf("full after %d bytes, under maxEarly", maxEarly-10)
	}
	if !offer(copyBufSize) { // one whole read past maxEarly: kept, and full
		t.Fatalf("not full after %d bytes", len(want))
	}
	created := make(chan struct{})
	if !c.whenCreated(func() { close(created) }) {
		t.Fatal("whenCreated declined while the log is being created")
	}
	select {
	case <-created:
		t.Fatal("told created before the file was")
	default:
	}
	release()
	select {
	case <-created:
	case <-time.After(guard):
		t.Fatal("not told within the guard time that the log was created")
	}
	if c.whenCreated(func() { t.Error("called with no creation under way") }) {
		t.Error("whenCreated accepted after the creation")
	}
	if offer(5) {
		t.Error("full once the log exists")
	}
	if err := c.finish(); err != nil {
		t.Fatal(err)
	}
	if got := readFileString(t, path); got != string(want) {
		t.Errorf("log holds %d bytes, want the %d offered, in order", len(got), len(want))
	}
}

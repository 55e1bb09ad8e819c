package executors

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

var _ Preparer = (*Process)(nil)

// guard bounds every wait in these tests; it only matters when a test fails.
const guard = 10 * time.Second

// newTestJob returns a job running argv with its log and scratch dir in a
// fresh temporary folder (the log in a folder that does not exist yet).
func newTestJob(t *testing.T, argv ...string) Job {
	t.Helper()
	dir := t.TempDir()
	return Job{
		RunID:         "run-1",
		TaskID:        "task-" + t.Name(),
		TaskName:      "build",
		Workflow:      "wf",
		Attempt:       1,
		ParallelCount: 1,
		Command:       argv,
		LogPath:       filepath.Join(dir, "logs", "task.log"),
		Scratch:       filepath.Join(dir, "scratch"),
	}
}

// startJob starts job on a fresh Process and returns the handle and the
// channel its events arrive on.
func startJob(t *testing.T, job Job) (Handle, <-chan Event) {
	t.Helper()
	events := make(chan Event, 4) // a Process reports two events per job
	h, err := newTestProcess(ProcessConfig{}).Start(job, func(ev Event) { events <- ev })
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return h, events
}

// nextEvent returns the next event, failing after the guard.
func nextEvent(t *testing.T, events <-chan Event) Event {
	t.Helper()
	select {
	case ev := <-events:
		return ev
	case <-time.After(guard):
		t.Fatal("no event within the guard time")
		return Event{}
	}
}

// expectStarted reads the next event and checks it is job's Started.
func expectStarted(t *testing.T, job Job, events <-chan Event) Event {
	t.Helper()
	ev := nextEvent(t, events)
	if ev.Kind != Started || ev.TaskID != job.TaskID || ev.Attempt != job.Attempt || ev.PID <= 0 {
		t.Fatalf("first event = %+v, want Started of %s with a pid", ev, job.TaskID)
	}
	return ev
}

// expectFinished reads the next event and checks it is job's Finished.
func expectFinished(t *testing.T, job Job, events <-chan Event) Event {
	t.Helper()
	ev := nextEvent(t, events)
	if ev.Kind != Finished || ev.TaskID != job.TaskID || ev.Attempt != job.Attempt {
		t.Fatalf("event = %+v, want Finished of %s", ev, job.TaskID)
	}
	return ev
}

// runJob starts job and returns its Finished event, checking that Started
// came first.
func runJob(t *testing.T, job Job) Event {
	t.Helper()
	_, events := startJob(t, job)
	expectStarted(t, job, events)
	return expectFinished(t, job, events)
}

// readLog returns the content of job's log file.
func readLog(t *testing.T, job Job) string {
	t.Helper()
	data, err := os.ReadFile(job.LogPath)
	if err != nil {
		t.Fatalf("read log: %v", err)
	}
	return string(data)
}

// waitForLogLine polls the log of a running task (an external process, so
// there is nothing to wait on but the file) until a line starts with prefix,
// and returns the rest of that line.
func waitForLogLine(t *testing.T, job Job, prefix string) string {
	t.Helper()
	deadline := time.Now().Add(guard)
	for time.Now().Before(deadline) {
		data, _ := os.ReadFile(job.LogPath)
		for line := range strings.Lines(string(data)) {
			if rest, ok := strings.CutPrefix(line, prefix); ok && strings.HasSuffix(rest, "\n") {
				return strings.TrimSuffix(rest, "\n")
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("log never got a line starting with %q", prefix)
	return ""
}

// processGone tells whether the process identified by pid and startTime no
// longer runs (gone, pid reused, or a zombie waiting to be reaped).
func processGone(pid int, startTime uint64) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	st, err := parseStatStartTime(data)
	if err != nil || st != startTime {
		return true
	}
	state := bytes.Fields(data[bytes.LastIndexByte(data, ')')+1:])[0]
	return string(state) == "Z" || string(state) == "X"
}

// waitGone polls until the external process pid is gone, failing after the
// guard.
func waitGone(t *testing.T, pid int, startTime uint64) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for !processGone(pid, startTime) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestProcessSuccessLogsStdoutAndStderr(t *testing.T) {
	t.Parallel()
	job := newTestJob(t, "sh", "-c", "echo out; echo err >&2")
	job.Attempt = 2
	if err := os.MkdirAll(filepath.Dir(job.LogPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(job.LogPath, []byte("previous attempt\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	fin := runJob(t, job)
	if !fin.OK || fin.ExitCode != 0 || fin.Err != "" || fin.Output != nil {
		t.Errorf("Finished = %+v, want OK with exit 0 and no output", fin)
	}
	if got, want := readLog(t, job), "previous attempt\nout\nerr\n"; got != want {
		t.Errorf("log = %q, want %q", got, want)
	}
}

func TestProcessFailureExitCode(t *testing.T) {
	t.Parallel()
	fin := runJob(t, newTestJob(t, "sh", "-c", "exit 3"))
	if fin.OK || fin.ExitCode != 3 || fin.Err != "exit status 3" {
		t.Errorf("Finished = %+v, want !OK, exit 3, Err %q", fin, "exit status 3")
	}
}

// Not parallel: it sets daemon environment variables.
func TestProcessContractEnv(t *testing.T) {
	t.Setenv("ORKWAL_RUN_ID", "stale-from-daemon")
	t.Setenv("ORKWAL_TEST_DAEMON_VAR", "kept")
	job := newTestJob(t, "env")
	job.Attempt = 3
	job.ParallelIndex = 2
	job.ParallelCount = 4
	job.Env = map[string]string{"ORK_WORKFLOW": "from-job", "TASK_VAR": "task value"}
	job.Ork = OrkTask{Inputs: []byte(`{"a":1,"s":"x y"}`), TaskIndex: 2, MaxRetries: 3, Timeout: 90 * time.Second, Command: "echo hi"}

	if fin := runJob(t, job); !fin.OK {
		t.Fatalf("Finished = %+v", fin)
	}
	got := map[string]string{}
	for line := range strings.Lines(readLog(t, job)) {
		if k, v, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "="); ok {
			got[k] = v
		}
	}
	input := contentInput(filepath.Dir(job.Scratch), []byte("{}")) // the input's own file (see inputs.go)
	output := job.Scratch + ".output.json"
	want := map[string]string{"ORKWAL_TEST_DAEMON_VAR": "kept", "TASK_VAR": "task value"}
	for _, prefix := range []string{"ORKWAL_", "ORK_"} {
		want[prefix+"RUN_ID"] = "run-1"
		want[prefix+"TASK_ID"] = job.TaskID
		want[prefix+"TASK_NAME"] = "build"
		want[prefix+"WORKFLOW"] = "wf"
		want[prefix+"ATTEMPT"] = "3"
		want[prefix+"PARALLEL_INDEX"] = "2"
		want[prefix+"PARALLEL_COUNT"] = "4"
	}
	want["ORKWAL_INPUT"], want["ORKWAL_OUTPUT"] = input, output
	want["ORK_INPUT"], want["ORK_OUTPUT"] = "", "" // Ork has none: its output is a line of stdout
	// Ork's own variables, and its task parameters under their names.
	want["ORK_WORKFLOW_NAME"] = "wf"
	want["ORK_INPUT_JSON"] = `{"a":1,"s":"x y"}`
	want["EXECUTION_ID"] = job.TaskID + ":3"
	want["task_index"], want["task_name"], want["workflow_name"], want["run_id"] = "2", "build", "wf", "run-1"
	want["max_retries"], want["timeout_seconds"], want["command"] = "3", "90", "echo hi"
	want["ORK_WORKFLOW"] = "from-job" // job.Env wins
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if !filepath.IsAbs(got["ORKWAL_INPUT"]) || !filepath.IsAbs(got["ORKWAL_OUTPUT"]) {
		t.Errorf("contract paths not absolute: %q, %q", got["ORKWAL_INPUT"], got["ORKWAL_OUTPUT"])
	}
}

func TestContractEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		job  Job
		want []string
	}{
		{
			name: "single task",
			job: Job{RunID: "r", TaskID: "t", TaskName: "n", Workflow: "w",
				Attempt: 1, ParallelIndex: 0, ParallelCount: 1},
			want: []string{
				"ORKWAL_RUN_ID=r", "ORKWAL_TASK_ID=t", "ORKWAL_TASK_NAME=n", "ORKWAL_WORKFLOW=w",
				"ORKWAL_ATTEMPT=1", "ORKWAL_PARALLEL_INDEX=0", "ORKWAL_PARALLEL_COUNT=1",
				"ORKWAL_INPUT=/s/input.json", "ORKWAL_OUTPUT=/s/output.json",
				"ORK_RUN_ID=r", "ORK_TASK_ID=t", "ORK_TASK_NAME=n", "ORK_WORKFLOW=w",
				"ORK_ATTEMPT=1", "ORK_PARALLEL_INDEX=0", "ORK_PARALLEL_COUNT=1",
				"ORK_WORKFLOW_NAME=w", "ORK_INPUT_JSON={}", "EXECUTION_ID=t:1",
				"task_index=0", "task_name=n", "workflow_name=w", "run_id=r", "max_retries=0", "timeout_seconds=0",
			},
		},
		{
			name: "fan-out retry, env ignored",
			job: Job{RunID: "run 2", TaskID: "t[12]", TaskName: "shard", Workflow: "etl",
				Attempt: 10, ParallelIndex: 12, ParallelCount: 40, Env: map[string]string{"X": "y"}},
			want: []string{
				"ORKWAL_RUN_ID=run 2", "ORKWAL_TASK_ID=t[12]", "ORKWAL_TASK_NAME=shard", "ORKWAL_WORKFLOW=etl",
				"ORKWAL_ATTEMPT=10", "ORKWAL_PARALLEL_INDEX=12", "ORKWAL_PARALLEL_COUNT=40",
				"ORKWAL_INPUT=/s/input.json", "ORKWAL_OUTPUT=/s/output.json",
				"ORK_RUN_ID=run 2", "ORK_TASK_ID=t[12]", "ORK_TASK_NAME=shard", "ORK_WORKFLOW=etl",
				"ORK_ATTEMPT=10", "ORK_PARALLEL_INDEX=12", "ORK_PARALLEL_COUNT=40",
				"ORK_WORKFLOW_NAME=etl", "ORK_INPUT_JSON={}", "EXECUTION_ID=t[12]:10",
				"task_index=0", "task_name=shard", "workflow_name=etl", "run_id=run 2", "max_retries=0", "timeout_seconds=0",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := contractEnv(tt.job, "/s/input.json", "/s/output.json")
			if !slices.Equal(got, tt.want) {
				t.Errorf("contractEnv =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestBuildEnvLayering(t *testing.T) {
	t.Parallel()
	job := Job{Attempt: 1, ParallelCount: 1, Workdir: "/wd",
		Env: map[string]string{"B": "job", "A": "job", "ORKWAL_ATTEMPT": "job"}}
	env := buildEnv([]string{"A=daemon", "PWD=/daemon"}, job, attemptFiles{input: "/i", output: "/o"})
	// exec.Cmd keeps the last value of a key: check the last one wins as intended.
	last := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		last[k] = v
	}
	want := map[string]string{"A": "job", "B": "job", "PWD": "/wd", "ORKWAL_ATTEMPT": "job", "ORK_ATTEMPT": "1", "ORKWAL_INPUT": "/i"}
	for k, v := range want {
		if last[k] != v {
			t.Errorf("%s = %q, want %q (env %q)", k, last[k], v, env)
		}
	}
	if tail := env[len(env)-3:]; !slices.Equal(tail, []string{"A=job", "B=job", "ORKWAL_ATTEMPT=job"}) {
		t.Errorf("job env not last in key order: %q", tail)
	}
}

func TestProcessInputOutput(t *testing.T) {
	t.Parallel()
	const copyInput = `cat "$ORKWAL_INPUT" > "$ORKWAL_OUTPUT"`
	tests := []struct {
		name       string
		script     string
		input      string
		maxBytes   int64
		wantOK     bool
		wantErr    string
		wantOutput string
	}{
		{name: "copy input", script: copyInput, input: `{"a":1}`, maxBytes: 1024, wantOK: true, wantOutput: `{"a":1}`},
		{name: "empty input is {}", script: copyInput, wantOK: true, wantOutput: `{}`},
		{name: "trailing newline trimmed", script: `echo '[1, 2]' > "$ORKWAL_OUTPUT"`, wantOK: true, wantOutput: `[1, 2]`},
		{name: "exactly at the cap", script: copyInput, input: `{"a":1}`, maxBytes: 7, wantOK: true, wantOutput: `{"a":1}`},
		{name: "over the cap", script: copyInput, input: `{"a":1}`, maxBytes: 6, wantErr: "output larger than 6 bytes"},
		{name: "invalid JSON", script: `printf 'not json' > "$ORKWAL_OUTPUT"`, wantErr: "output is not valid JSON"},
		{name: "empty output file", script: `: > "$ORKWAL_OUTPUT"`, wantErr: "output is not valid JSON"},
		{name: "no output file", script: "true", wantOK: true},
		{name: "a named pipe", script: `mkfifo "$ORKWAL_OUTPUT"`, wantErr: "output: not a regular file"},
		{name: "a device", script: `ln -s /dev/zero "$ORKWAL_OUTPUT"`, maxBytes: 1 << 20, wantErr: "output: not a regular file"},
		{name: "a folder", script: `mkdir "$ORKWAL_OUTPUT"`, wantErr: "output: not a regular file"},
		{name: "a symlink to a file", script: `echo 7 > "$ORKWAL_OUTPUT.real"; ln -s "$ORKWAL_OUTPUT.real" "$ORKWAL_OUTPUT"`, wantOK: true, wantOutput: `7`},
		{name: "exit failure wins", script: `echo '"x"' > "$ORKWAL_OUTPUT"; exit 4`, wantErr: "exit status 4", wantOutput: `"x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			job := newTestJob(t, "sh", "-c", tt.script)
			job.Input = []byte(tt.input)
			job.MaxOutputBytes = tt.maxBytes
			fin := runJob(t, job)
			if fin.OK != tt.wantOK || fin.Err != tt.wantErr || string(fin.Output) != tt.wantOutput {
				t.Errorf("Finished = {OK:%v Err:%q Output:%q}, want {OK:%v Err:%q Output:%q}",
					fin.OK, fin.Err, fin.Output, tt.wantOK, tt.wantErr, tt.wantOutput)
			}
		})
	}
}

func TestProcessWorkdir(t *testing.T) {
	t.Parallel()
	wd := t.TempDir()
	job := newTestJob(t, "sh", "-c", "pwd; /bin/pwd -P")
	job.Workdir = wd
	if fin := runJob(t, job); !fin.OK {
		t.Fatalf("Finished = %+v", fin)
	}
	physical, err := filepath.EvalSymlinks(wd)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := readLog(t, job), wd+"\n"+physical+"\n"; got != want {
		t.Errorf("log = %q, want %q", got, want)
	}
}

// TestProcessMissingWorkdir: a workdir that does not exist (or is a file)
// failed the start with "fork/exec /usr/bin/sh: no such file or
// directory", naming the program instead of the folder.
func TestProcessMissingWorkdir(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(t.TempDir(), "gone")
	for wd, want := range map[string]string{
		gone: "workdir " + gone + ": no such file or directory",
		file: "workdir " + file + ": not a directory",
	} {
		job := newTestJob(t, "sh", "-c", "true")
		job.Workdir = wd
		if _, err := newTestProcess(ProcessConfig{}).Start(job, func(Event) {}); err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("Start = %v, want it to end with %q", err, want)
		}
	}
}

func TestProcessStopKillsWholeGroup(t *testing.T) {
	t.Parallel()
	job := newTestJob(t, "sh", "-c", `sleep 60 & echo "grandchild $!"; sleep 60; wait`)
	h, events := startJob(t, job)
	started := expectStarted(t, job, events)
	if st, err := ProcStartTime(started.PID); err != nil || st != started.StartTime || st == 0 {
		t.Errorf("Started.StartTime = %d, /proc says %d (%v)", started.StartTime, st, err)
	}
	if pgid, err := syscall.Getpgid(started.PID); err != nil || pgid != started.PID {
		t.Errorf("pgid of %d = %d (%v), want its own group", started.PID, pgid, err)
	}
	grandchild, err := strconv.Atoi(waitForLogLine(t, job, "grandchild "))
	if err != nil {
		t.Fatal(err)
	}
	gcStart, err := ProcStartTime(grandchild)
	if err != nil {
		t.Fatalf("grandchild: %v", err)
	}

	h.Stop(guard, "stopped by the test") // the TERM is enough: no escalation expected
	h.Stop(time.Millisecond, "stopped by the test")
	fin := expectFinished(t, job, events)
	if fin.OK || fin.ExitCode != -1 || fin.Err != "killed by signal: terminated" {
		t.Errorf("Finished = %+v, want killed by SIGTERM", fin)
	}
	waitGone(t, grandchild, gcStart)
	h.Stop(time.Millisecond, "stopped by the test") // after exit: a no-op
}

func TestProcessStopEscalatesToSIGKILL(t *testing.T) {
	t.Parallel()
	job := newTestJob(t, "sh", "-c", `trap '' TERM; echo ready; sleep 60`)
	h, events := startJob(t, job)
	expectStarted(t, job, events)
	waitForLogLine(t, job, "ready") // the trap is set

	const grace = 200 * time.Millisecond
	stopped := time.Now()
	h.Stop(grace, "stopped by the test")
	fin := expectFinished(t, job, events)
	if elapsed := time.Since(stopped); elapsed < grace {
		t.Errorf("finished %v after Stop, before the %v grace", elapsed, grace)
	}
	if fin.OK || fin.ExitCode != -1 || fin.Err != "killed by signal: killed" {
		t.Errorf("Finished = %+v, want killed by SIGKILL", fin)
	}
}

func TestProcessStartErrors(t *testing.T) {
	t.Parallel()
	for _, argv := range [][]string{{"orkwal-no-such-binary"}, {"/nonexistent/bin/tool", "arg"}, nil} {
		t.Run(fmt.Sprint(argv), func(t *testing.T) {
			t.Parallel()
			job := newTestJob(t, argv...)
			var reported atomic.Int32
			h, err := newTestProcess(ProcessConfig{}).Start(job, func(Event) { reported.Add(1) })
			if err == nil || h != nil {
				t.Fatalf("Start = %v, %v; want an error", h, err)
			}
			if !strings.Contains(err.Error(), job.TaskID) || (len(argv) > 0 && !strings.Contains(err.Error(), argv[0])) {
				t.Errorf("error %q lacks the task id or binary", err)
			}
			if len(argv) > 0 && !errors.Is(err, exec.ErrNotFound) && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("error %q does not wrap the cause", err)
			}
			if n := reported.Load(); n != 0 {
				t.Errorf("%d events reported for a job that never started", n)
			}
		})
	}
}

func TestProcessFinishedExactlyOnce(t *testing.T) {
	t.Parallel()
	const jobs = 50
	var (
		mu       sync.Mutex
		started  = map[string]int{}
		finished = map[string]int{}
		ok       = map[string]bool{}
		done     = make(chan struct{}, jobs)
	)
	report := func(ev Event) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.Kind {
		case Started:
			if finished[ev.TaskID] > 0 {
				t.Errorf("%s: Started after Finished", ev.TaskID)
			}
			started[ev.TaskID]++
		case Finished:
			finished[ev.TaskID]++
			ok[ev.TaskID] = ev.OK
			done <- struct{}{}
		}
	}
	p := newTestProcess(ProcessConfig{})
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Go(func() {
			job := Job{
				RunID: "r", TaskID: fmt.Sprintf("t%d", i), Attempt: 1,
				ParallelIndex: i, ParallelCount: jobs,
				Command: []string{"sh", "-c", "exit $((ORKWAL_PARALLEL_INDEX % 3))"},
				LogPath: filepath.Join(dir, "logs", fmt.Sprintf("t%d.log", i)),
				Scratch: filepath.Join(dir, "scratch", fmt.Sprintf("t%d", i)),
			}
			if _, err := p.Start(job, report); err != nil {
				t.Errorf("Start t%d: %v", i, err)
				done <- struct{}{}
			}
		})
	}
	wg.Wait()
	for range jobs {
		select {
		case <-done:
		case <-time.After(guard):
			t.Fatal("not every job finished")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range jobs {
		id := fmt.Sprintf("t%d", i)
		if started[id] != 1 || finished[id] != 1 {
			t.Errorf("%s: %d Started, %d Finished; want 1 and 1", id, started[id], finished[id])
		}
		if ok[id] != (i%3 == 0) {
			t.Errorf("%s: OK = %v, want %v", id, ok[id], i%3 == 0)
		}
	}
}

// osThreads is the number of OS threads of this process.
func osThreads(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(rest))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}

// TestProcessRunningHoldsNoThread: a running child is awaited through the
// runtime's poller, not by a thread blocked in waitid, so running many
// tasks does not cost a thread (and its stacks) each. Not parallel: it
// counts the threads of the whole test process.
func TestProcessRunningHoldsNoThread(t *testing.T) {
	const n = 64
	p := newTestProcess(ProcessConfig{})
	events := make(chan Event, 2*n)
	before := osThreads(t)
	var handles []Handle
	for i := range n {
		job := newTestJob(t, "sleep", "60")
		job.TaskID = fmt.Sprintf("t%d", i)
		job.MaxLogBytes = 1 << 20 // the capped log's pipe copier too
		h, err := p.Start(job, func(ev Event) { events <- ev })
		if err != nil {
			t.Fatal(err)
		}
		handles = append(handles, h)
	}
	for range n {
		if ev := nextEvent(t, events); ev.Kind != Started {
			t.Fatalf("event %+v, want Started", ev)
		}
	}
	after := osThreads(t)
	for _, h := range handles {
		h.Stop(time.Millisecond, "stopped by the test")
	}
	for range n {
		if ev := nextEvent(t, events); ev.Kind != Finished || ev.Err != "killed by signal: terminated" {
			t.Errorf("event %+v, want Finished by SIGTERM", ev)
		}
	}
	// A thread per child would add n; the runtime may add a few of its own.
	if after-before >= n/2 {
		t.Errorf("%d running children took %d more threads (%d → %d)", n, after-before, before, after)
	}
}

// TestPrepareThenStartOrAbort: Prepare creates the attempt's input file
// (and its log when it is not capped: a capped log waits for output) and
// starts nothing; Start then runs the job as Start would; Abort instead
// removes the input file and the empty log, and keeps a log that already
// had output (an earlier incarnation of the attempt).
func TestPrepareThenStartOrAbort(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	job := newTestJob(t, "sh", "-c", `cat "$ORKWAL_INPUT" > "`+marker+`"`)
	job.Input = []byte(`{"params":{"x":"1"}}`)
	job.MaxLogBytes = 1 << 20
	p := newTestProcess(ProcessConfig{})

	pp, err := p.Prepare(job)
	if err != nil {
		t.Fatal(err)
	}
	if in, err := os.ReadFile(contentInput(filepath.Dir(job.Scratch), job.Input)); err != nil || string(in) != string(job.Input) {
		t.Fatalf("input after Prepare: %q, %v", in, err)
	}
	if _, err := os.Stat(job.LogPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("capped log after Prepare: %v, want none before output", err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Prepare ran the command (%v)", err)
	}
	events := make(chan Event, 4)
	if _, err := pp.Start(func(ev Event) { events <- ev }); err != nil {
		t.Fatal(err)
	}
	expectStarted(t, job, events)
	if ev := expectFinished(t, job, events); !ev.OK {
		t.Fatalf("prepared job failed: %+v", ev)
	}
	if got, _ := os.ReadFile(marker); string(got) != string(job.Input) {
		t.Fatalf("the prepared job read input %q", got)
	}

	// Abort: a fresh attempt's empty log goes, its input is released.
	job2 := newTestJob(t, "true")
	job2.MaxLogBytes = 0 // uncapped: the child writes the log file, made by Prepare
	pp, err = p.Prepare(job2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(job2.LogPath); err != nil {
		t.Fatalf("uncapped log after Prepare: %v", err)
	}
	pp.Abort()
	if _, err := os.Stat(job2.LogPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after Abort: %v, want it removed", job2.LogPath, err)
	}
	if n := inputRefs(contentInput(filepath.Dir(job2.Scratch), []byte("{}"))); n != 0 {
		t.Errorf("input after Abort: %d attempts use it, want none", n)
	}

	// Abort of a capped job (the default): the input is released, and no
	// log was ever made.
	capped := newTestJob(t, "true")
	capped.MaxLogBytes = 1 << 20
	if pp, err = p.Prepare(capped); err != nil {
		t.Fatal(err)
	}
	pp.Abort()
	if _, err := os.Stat(filepath.Dir(capped.LogPath)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after Abort of a capped job: %v, want none", filepath.Dir(capped.LogPath), err)
	}
	if n := inputRefs(contentInput(filepath.Dir(capped.Scratch), []byte("{}"))); n != 0 {
		t.Errorf("input after Abort of a capped job: %d attempts use it, want none", n)
	}

	// Abort keeps a log that has output.
	job3 := newTestJob(t, "true")
	if err := os.MkdirAll(filepath.Dir(job3.LogPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(job3.LogPath, []byte("earlier output\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if pp, err = p.Prepare(job3); err != nil {
		t.Fatal(err)
	}
	pp.Abort()
	if got, err := os.ReadFile(job3.LogPath); err != nil || string(got) != "earlier output\n" {
		t.Fatalf("log with output after Abort: %q, %v", got, err)
	}
}

// TestPrepareFailureLeavesNothing: a Prepare that fails returns a nil
// Prepared (not a nil pointer in an interface) and releases the input it
// had written.
func TestPrepareFailureLeavesNothing(t *testing.T) {
	p := newTestProcess(ProcessConfig{})
	job := newTestJob(t, "orkwal-test-no-such-command")
	if pp, err := p.Prepare(job); err == nil || pp != nil {
		t.Fatalf("Prepare of a missing command: %#v, %v; want nil and an error", pp, err)
	}
	// The log's folder cannot be made (a file is in the way): the input
	// file is written by then.
	job = newTestJob(t, "true")
	if err := os.WriteFile(filepath.Dir(job.LogPath), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if pp, err := p.Prepare(job); err == nil || pp != nil {
		t.Fatalf("Prepare with an unusable log path: %#v, %v; want nil and an error", pp, err)
	}
	if n := inputRefs(contentInput(filepath.Dir(job.Scratch), []byte("{}"))); n != 0 {
		t.Fatalf("input after a failed Prepare: %d attempts use it, want none", n)
	}
}

// TestStopNoteEndsTheLog: an attempt the engine stopped ends its log with
// why, and with the signals it took, capped (through the reactor) or not.
func TestStopNoteEndsTheLog(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		capped bool
		script string
		want   string
	}{
		{"term", false, `echo ready; exec sleep 60`, "ready\n\n[orkwal: timeout after 30s]\n"},
		{"kill", false, `trap '' TERM; echo ready; sleep 60`, "ready\n\n[orkwal: timeout after 30s: SIGTERM, then SIGKILL]\n"},
		{"capped term", true, `echo ready; exec sleep 60`, "ready\n\n[orkwal: cancelled]\n"},
		{"capped kill", true, `trap '' TERM; echo ready; sleep 60`, "ready\n\n[orkwal: cancelled: SIGTERM, then SIGKILL]\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			job := newTestJob(t, "sh", "-c", c.script)
			if c.capped {
				job.MaxLogBytes = 1 << 20
			}
			h, events := startJob(t, job)
			expectStarted(t, job, events)
			waitForLogLine(t, job, "ready")
			reason := "timeout after 30s"
			if c.capped {
				reason = "cancelled"
			}
			h.Stop(100*time.Millisecond, reason)
			expectFinished(t, job, events)
			if got := readLog(t, job); got != c.want {
				t.Fatalf("log %q, want %q", got, c.want)
			}
		})
	}
}

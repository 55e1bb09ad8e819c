package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orkwal/orkwal/api"
	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/executors"
)

// runCLIStreaming runs the CLI with its stdout going to out (read by the
// test while the command runs) and returns its stderr and exit code.
func runCLIStreaming(t *testing.T, out io.Writer, args ...string) (string, int) {
	t.Helper()
	var errOut strings.Builder
	app := newApp()
	app.Writer, app.ErrWriter = out, &errOut
	err := app.Run(append([]string{"orkwal"}, args...))
	code := exitOK
	if err != nil {
		errOut.WriteString("orkwal: " + err.Error() + "\n")
		code = exitFailure
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
	}
	return errOut.String(), code
}

// cliGate is a FIFO a task blocks on (cat) until the test opens it.
func cliGate(t *testing.T) (path string, open func()) {
	path = filepath.Join(t.TempDir(), "gate")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	opened := false
	open = func() {
		if opened {
			return
		}
		opened = true
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	return path, open
}

func processDaemon(t *testing.T, opts ...api.Option) (*api.Server, string) {
	return cliDaemonServer(t, executors.NewProcess(executors.ProcessConfig{KillGrace: time.Second}), opts...)
}

func TestDelete(t *testing.T) {
	_, url := processDaemon(t)
	gate, open := cliGate(t)
	mustCLI(t, exitOK, "apply", "--addr", url, cliWriteFile(t, "etl.yaml", cliEtlYAML))
	mustCLI(t, exitOK, "apply", "--addr", url, cliWriteFile(t, "held.yaml", "name: held\ntasks:\n  t: {command: 'cat "+gate+"'}\n"))
	out, _ := mustCLI(t, exitOK, "delete", "--addr", url, "etl")
	if out != "workflow etl deleted\n" {
		t.Fatalf("delete: %q", out)
	}
	_, errOut := mustCLI(t, exitNotFound, "delete", "etl", "--addr", url)
	if !strings.Contains(errOut, `workflow "etl"`) {
		t.Fatalf("delete again: %s", errOut)
	}
	out, _ = mustCLI(t, exitOK, "trigger", "--addr", url, "held")
	id := strings.TrimSpace(out)
	_, errOut = mustCLI(t, exitFailure, "delete", "--addr", url, "held")
	if !strings.Contains(errOut, "has active run "+id) {
		t.Fatalf("delete with an active run: %s", errOut)
	}
	open()
	mustCLI(t, exitOK, "show", "--addr", url, id)
	mustCLI(t, exitUsage, "delete", "--addr", url)
	mustCLI(t, exitFailure, "delete", "--addr", url, "../x")
}

func TestLogsFollow(t *testing.T) {
	_, url := processDaemon(t)
	gate, open := cliGate(t)
	mustCLI(t, exitOK, "apply", "--addr", url, cliWriteFile(t, "talk.yaml",
		"name: talk\ntasks:\n  t: {command: 'echo first; cat "+gate+"; echo last'}\n"))
	out, _ := mustCLI(t, exitOK, "trigger", "--addr", url, "talk")
	id := strings.TrimSpace(out)

	pr, pw := io.Pipe()
	type result struct {
		stderr string
		code   int
	}
	done := make(chan result, 1)
	go func() {
		stderr, code := runCLIStreaming(t, pw, "logs", "-f", "--addr", url, id, "t")
		pw.Close()
		done <- result{stderr, code}
	}()
	r := bufio.NewReader(pr)
	if l, err := r.ReadString('\n'); l != "first\n" {
		t.Fatalf("first line %q %v", l, err)
	}
	open()
	rest, _ := io.ReadAll(r)
	res := <-done
	if string(rest) != "last\n" || res.code != exitOK {
		t.Fatalf("rest %q, exit %d %s", rest, res.code, res.stderr)
	}
	// An ended attempt: all of it, at once.
	out, _ = mustCLI(t, exitOK, "logs", "--addr", url, "--follow", id, "t")
	if out != "first\nlast\n" {
		t.Fatalf("logs -f of an ended attempt: %q", out)
	}
	mustCLI(t, exitNotFound, "logs", "-f", "--addr", url, id, "nope")
}

// TestLogsFollowDaemonStopping: a stream ended by a shutdown exits 4.
func TestLogsFollowDaemonStopping(t *testing.T) {
	a, url := processDaemon(t)
	gate, open := cliGate(t)
	defer open()
	mustCLI(t, exitOK, "apply", "--addr", url, cliWriteFile(t, "w.yaml",
		"name: w\ntasks:\n  t: {command: 'echo started; cat "+gate+"'}\n"))
	out, _ := mustCLI(t, exitOK, "trigger", "--addr", url, "w")
	id := strings.TrimSpace(out)
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var stderr string
	go func() {
		var code int
		stderr, code = runCLIStreaming(t, pw, "logs", "-f", "--addr", url, id, "t")
		pw.Close()
		done <- code
	}()
	r := bufio.NewReader(pr)
	if l, _ := r.ReadString('\n'); l != "started\n" {
		t.Fatalf("first line %q", l)
	}
	a.StopStreams()
	io.ReadAll(r)
	if code := <-done; code != exitServer || !strings.Contains(stderr, "is stopping") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

func TestRunsFiltersAndPages(t *testing.T) {
	defer func(n int) { runsPageSize = n }(runsPageSize)
	runsPageSize = 2
	url := cliDaemon(t, failingExec{})
	mustCLI(t, exitOK, "apply", "--addr", url, cliWriteFile(t, "etl.yaml", cliEtlYAML))
	mustCLI(t, exitOK, "apply", "--addr", url, cliWriteFile(t, "broken.yaml", cliFailingYAML))
	var ok, failed []string
	for i := 0; i < 3; i++ {
		ok = append(ok, cliTriggered(t, url))
	}
	for i := 0; i < 2; i++ {
		out, _ := mustCLI(t, exitFailure, "trigger", "--addr", url, "--wait", "broken")
		failed = append(failed, strings.SplitN(out, "\n", 2)[0])
	}
	countRows := func(out string) int { return strings.Count(out, "\n") - 1 }

	out, _ := mustCLI(t, exitOK, "runs", "--addr", url, "--limit", "0", "-o", "json")
	var runs []engine.RunView
	if err := json.Unmarshal([]byte(out), &runs); err != nil || len(runs) != 5 {
		t.Fatalf("--limit 0 over 3 pages: %v %d runs\n%s", err, len(runs), out)
	}
	if runs[0].ID != failed[1] || runs[4].ID != ok[0] {
		t.Fatalf("not newest first: %s ... %s", runs[0].ID, runs[4].ID)
	}
	if out, _ = mustCLI(t, exitOK, "runs", "--addr", url, "--limit", "3"); countRows(out) != 3 {
		t.Fatalf("--limit 3 over 2 pages:\n%s", out)
	}
	out, _ = mustCLI(t, exitOK, "runs", "--addr", url, "--status", "failed")
	if countRows(out) != 2 || !strings.Contains(out, failed[0]) || strings.Contains(out, ok[0]) {
		t.Fatalf("--status failed:\n%s", out)
	}
	if out, _ = mustCLI(t, exitOK, "runs", "--addr", url, "--since", "1h", "--workflow", "etl"); countRows(out) != 3 {
		t.Fatalf("--since 1h --workflow etl:\n%s", out)
	}
	if out, _ = mustCLI(t, exitOK, "runs", "--addr", url, "--since", "2999-01-01"); countRows(out) != 0 {
		t.Fatalf("--since 2999-01-01:\n%s", out)
	}
	if out, _ = mustCLI(t, exitOK, "runs", "--addr", url, "--since", "2999-01-01", "-o", "json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("no runs as JSON: %q", out)
	}
	mustCLI(t, exitUsage, "runs", "--addr", url, "--status", "done")
	mustCLI(t, exitUsage, "runs", "--addr", url, "--since", "last week")
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-03-01T08:00:00Z":      time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC),
		"2026-03-01T08:00:00+01:00": time.Date(2026, 3, 1, 7, 0, 0, 0, time.UTC),
		"2026-03-01":                time.Date(2026, 3, 1, 0, 0, 0, 0, time.Local),
		"90m":                       now.Add(-90 * time.Minute),
		"7d":                        now.AddDate(0, 0, -7),
		"0s":                        now,
	} {
		got, err := parseSince(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseSince(%q) = %v %v, want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "yesterday", "-5m", "3w", "2026-13-01", "d"} {
		if _, err := parseSince(bad, now); err == nil {
			t.Errorf("parseSince(%q) accepted", bad)
		}
	}
}

func TestToken(t *testing.T) {
	url := cliDaemon(t, executors.Noop{}, api.WithToken("tok-123"))
	_, errOut := mustCLI(t, exitFailure, "workflows", "--addr", url)
	if !strings.Contains(errOut, "unauthorized") || !strings.Contains(errOut, "ORKWAL_TOKEN") {
		t.Fatalf("without the token: %s", errOut)
	}
	mustCLI(t, exitFailure, "workflows", "--addr", url, "--token", "tok-12")
	mustCLI(t, exitOK, "workflows", "--addr", url, "--token", "tok-123")
	t.Setenv("ORKWAL_TOKEN", "tok-123")
	mustCLI(t, exitOK, "apply", "--addr", url, cliWriteFile(t, "etl.yaml", cliEtlYAML))
	id := cliTriggered(t, url)
	mustCLI(t, exitOK, "logs", "-f", "--addr", url, id, "load")
	mustCLI(t, exitOK, "runs", "--addr", url)
}

func TestListenExposure(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:7777": true, "127.1.2.3:80": true, "localhost:7777": true, "LOCALHOST:1": true,
		"[::1]:7777": true, "[fe80::1%lo]:1": false, "0.0.0.0:7777": false, ":7777": false,
		"[::]:7777": false, "192.168.1.5:7777": false, "example.com:80": false, "nonsense": false,
	} {
		if got := isLoopback(addr); got != want {
			t.Errorf("isLoopback(%q) = %v", addr, got)
		}
	}
	if checkExposure("0.0.0.0:7777", "t", false) != nil || checkExposure("0.0.0.0:7777", "", true) != nil ||
		checkExposure("127.0.0.1:7777", "", false) != nil {
		t.Fatal("refused an allowed setup")
	}
	data := filepath.Join(t.TempDir(), "data")
	_, errOut := mustCLI(t, exitUsage, "run", "--data", data, "--addr", "0.0.0.0:0")
	if !strings.Contains(errOut, "refusing to listen on 0.0.0.0:0 without a token") || !strings.Contains(errOut, "--insecure") {
		t.Fatalf("stderr %q", errOut)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("the refused daemon touched its data folder: %v", err)
	}
	mustCLI(t, exitUsage, "run", "--data", data, "--token", "has space")
	mustCLI(t, exitUsage, "run", "--data", data, "--log-level", "loud")
	t.Setenv("ORKWAL_TOKEN", "bad\ttoken")
	mustCLI(t, exitUsage, "run", "--data", data)
}

func TestCompletion(t *testing.T) {
	out, _ := mustCLI(t, exitOK, "completion", "bash")
	for _, want := range []string{"complete -o bashdefault -o default -F _orkwal_complete orkwal", "--generate-bash-completion"} {
		if !strings.Contains(out, want) {
			t.Errorf("bash script lacks %q", want)
		}
	}
	if bash, err := exec.LookPath("bash"); err == nil {
		cmd := exec.Command(bash, "-n")
		cmd.Stdin = strings.NewReader(out)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("bash -n: %v %s", err, b)
		}
	}
	if out, _ = mustCLI(t, exitOK, "completion", "zsh"); !strings.Contains(out, "compdef _orkwal orkwal") {
		t.Errorf("zsh script:\n%s", out)
	}
	if out, _ = mustCLI(t, exitOK, "completion", "fish"); !strings.Contains(out, "complete -c orkwal") {
		t.Errorf("fish script:\n%s", out)
	}
	mustCLI(t, exitUsage, "completion", "ksh")
	mustCLI(t, exitUsage, "completion")

	// Names come from the daemon.
	url := cliApplied(t)
	id := cliTriggered(t, url)
	if out, _ = mustCLI(t, exitOK, "trigger", "--addr", url, "--generate-bash-completion"); out != "etl\n" {
		t.Errorf("trigger completion: %q", out)
	}
	if out, _ = mustCLI(t, exitOK, "show", "--addr", url, "--generate-bash-completion"); out != id+"\n" {
		t.Errorf("show completion: %q", out)
	}
	if out, _ = mustCLI(t, exitOK, "logs", "--addr", url, id, "--generate-bash-completion"); out != "extract\nload\n" {
		t.Errorf("logs completion: %q", out)
	}
	// urfave/cli reads os.Args to complete commands and flags.
	defer func(args []string) { os.Args = args }(os.Args)
	os.Args = []string{"orkwal", "--generate-bash-completion"}
	if out, _ = mustCLI(t, exitOK, "--generate-bash-completion"); !strings.Contains(out, "delete\n") || !strings.Contains(out, "completion\n") {
		t.Errorf("command completion: %q", out)
	}
	os.Args = []string{"orkwal", "runs", "--st", "--generate-bash-completion"}
	if out, _ = mustCLI(t, exitOK, "runs", "--st", "--generate-bash-completion"); out != "--status\n" {
		t.Errorf("flag completion: %q", out)
	}
	// An unreachable daemon completes nothing, quietly.
	if out, _ = mustCLI(t, exitOK, "trigger", "--addr", "127.0.0.1:1", "--generate-bash-completion"); out != "" {
		t.Errorf("completion without a daemon: %q", out)
	}
}

func TestLiveView(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) *time.Time { t := start.Add(time.Duration(s) * time.Second); return &t }
	idx := func(i int) *int { return &i }
	run := engine.RunView{ID: "r", Workflow: "fan", Version: 2, Status: "running", StartedAt: at(0), Tasks: []engine.TaskView{
		{Name: "discover", Task: "discover", Status: "success", Attempt: 1, StartedAt: at(0), FinishedAt: at(2)},
		{Name: "each", Task: "each", Status: "running", Instances: 3},
		{Name: "each[0]", Task: "each", Status: "success", Instance: idx(0)},
		{Name: "each[1]", Task: "each", Status: "running", Instance: idx(1)},
		{Name: "each[2]", Task: "each", Status: "failed", Instance: idx(2)},
		{Name: "report", Task: "report", Status: "pending", WaitingOn: []string{"upstream each"}},
		{Name: "a-task-with-a-rather-long-name-indeed", Task: "x", Status: "failed", Attempt: 2, Error: strings.Repeat("boom ", 20)},
	}}
	var out strings.Builder
	v := newLiveView(&out, termSize{cols: 80, rows: 24})
	v.now = func() time.Time { return start.Add(5 * time.Second) }
	v.update(run)
	first := out.String()
	if regexp.MustCompile(`\x1b\[\d+A`).MatchString(first) {
		t.Fatalf("the first drawing moves the cursor up:\n%q", first)
	}
	lines := strings.Split(strings.TrimSuffix(strings.ReplaceAll(first, ansiClearDown, ""), "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines, want a header and 4 tasks (instances summed up):\n%s", len(lines), first)
	}
	for i, want := range []string{"» fan@2 running  5s", "✓ discover", "» each", "2/3 done, 1 running, 1 failed",
		"· report", "waiting on upstream each", "✗ a-task-with-a-rather-long-name-indeed"} {
		if !strings.Contains(first, want) {
			t.Errorf("view lacks %q (%d):\n%s", want, i, first)
		}
	}
	for _, l := range lines {
		if n := len([]rune(strings.TrimPrefix(l, ansiClearLine))); n > 79 {
			t.Errorf("line of %d runes, wider than the terminal: %q", n, l)
		}
	}
	out.Reset()
	run.Status, run.FinishedAt = "failed", at(9)
	v.update(run)
	if second := out.String(); !strings.HasPrefix(second, "\x1b[5A") || !strings.Contains(second, "✗ fan@2 failed  9s") {
		t.Fatalf("redraw:\n%q", second)
	}
	// More tasks than rows: the rest is counted.
	out.Reset()
	small := newLiveView(&out, termSize{cols: 80, rows: 4})
	small.update(run)
	if got := out.String(); strings.Count(got, "\n") != 3 || !strings.Contains(got, "… and 3 more tasks") {
		t.Fatalf("small terminal:\n%s", got)
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) || isTerminal(&strings.Builder{}) {
		t.Fatal("a file or a buffer is not a terminal")
	}
	if s := terminalSize(f); s.cols <= 0 || s.rows <= 0 {
		t.Fatalf("size %+v", s)
	}
	// /dev/null is a character device, not a terminal.
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if isTerminal(null) {
		t.Fatal("/dev/null is not a terminal")
	}
	_, tty := openPTY(t)
	t.Setenv("TERM", "xterm")
	if !isTerminal(tty) {
		t.Fatal("a pty is a terminal")
	}
	if s := terminalSize(tty); s != (termSize{cols: 100, rows: 30}) {
		t.Fatalf("pty size %+v, want 100x30", s)
	}
}

func TestTriggerIdempotencyKey(t *testing.T) {
	url := cliApplied(t)
	first, _ := mustCLI(t, exitOK, "trigger", "--addr", url, "--idempotency-key", "nightly-2026-03-01", "etl")
	again, errOut := mustCLI(t, exitOK, "trigger", "etl", "--addr", url, "--idempotency-key", "nightly-2026-03-01")
	if first != again || !strings.Contains(errOut, "created earlier with this idempotency key") {
		t.Fatalf("first %q, again %q (%s)", first, again, errOut)
	}
	other, _ := mustCLI(t, exitOK, "trigger", "--addr", url, "--idempotency-key", "nightly-2026-03-02", "etl")
	if other == first {
		t.Fatal("another key gave the same run")
	}
	mustCLI(t, exitUsage, "trigger", "--addr", url, "--idempotency-key", strings.Repeat("k", 129), "etl")
	mustCLI(t, exitUsage, "trigger", "--addr", url, "--idempotency-key", "clé", "etl")
}

// TestRunRefusesAnAddrThatIsNotHostPort: a URL or an address without a
// port was refused as "not a loopback address" (127.0.0.1 included), or,
// with a token, failed to listen only after the data folder was created.
func TestRunRefusesAnAddrThatIsNotHostPort(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	for _, args := range [][]string{
		{"--addr", "http://127.0.0.1:0"},
		{"--addr", "http://127.0.0.1:0", "--token", "t"},
		{"--addr", "127.0.0.1"},
		{"--addr", "127.0.0.1:"},
	} {
		_, errOut := mustCLI(t, exitUsage, append([]string{"run", "--data", data}, args...)...)
		if !strings.Contains(errOut, "host:port") || strings.Contains(errOut, "loopback") {
			t.Errorf("%v: stderr %q", args, errOut)
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Fatalf("%v: the refused daemon touched its data folder: %v", args, err)
		}
	}
}

// TestRunRefusesANonPositiveKillGrace: --kill-grace 0 or -1s was accepted
// and silently became the default 10s.
func TestRunRefusesANonPositiveKillGrace(t *testing.T) {
	// The data folder cannot be made (its parent is a file): a daemon
	// that got past the check fails to open it instead of serving until
	// the test's timeout.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, grace := range []string{"0s", "-1s"} {
		_, errOut := mustCLI(t, exitUsage, "run", "--data", filepath.Join(file, "data"), "--kill-grace", grace)
		if !strings.Contains(errOut, "--kill-grace must be above 0") {
			t.Errorf("--kill-grace %s: stderr %q", grace, errOut)
		}
	}
}

// TestRunRefusesABoundBelowOne: the bounds on pending runs are at least
// 1, and the environment sets them as the flags do.
func TestRunRefusesABoundBelowOne(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file") // as above: a daemon past the check fails
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--max-pending-runs", "--max-pending-runs-per-workflow"} {
		_, errOut := mustCLI(t, exitUsage, "run", "--data", filepath.Join(file, "data"), flag, "0")
		if !strings.Contains(errOut, flag+" must be at least 1") {
			t.Errorf("%s 0: stderr %q", flag, errOut)
		}
	}
	t.Setenv("ORKWAL_MAX_PENDING_RUNS", "0")
	if _, errOut := mustCLI(t, exitUsage, "run", "--data", filepath.Join(file, "data")); !strings.Contains(errOut, "--max-pending-runs must be at least 1") {
		t.Errorf("ORKWAL_MAX_PENDING_RUNS=0: stderr %q", errOut)
	}
}

// TestUsageNamesTheWholeCommand: a subcommand's usage error showed
// "usage: orkwal pause [options] NAME (see orkwal pause --help)", a
// command that does not exist.
func TestUsageNamesTheWholeCommand(t *testing.T) {
	for args, want := range map[string]string{
		"schedule pause":        "orkwal: schedule pause: expected 1 argument(s), got 0\nusage: orkwal schedule pause [options] NAME (see orkwal schedule pause --help)\n",
		"schedule resume --bad": "orkwal: schedule resume: flag provided but not defined: -bad\nusage: orkwal schedule resume [options] NAME (see orkwal schedule resume --help)\n",
		"wal inspect --limit x": "usage: orkwal wal inspect [options] (see orkwal wal inspect --help)\n",
		"trigger":               "usage: orkwal trigger [options] NAME (see orkwal trigger --help)\n",
	} {
		_, errOut := mustCLI(t, exitUsage, strings.Fields(args)...)
		if !strings.HasSuffix(errOut, want) {
			t.Errorf("orkwal %s: stderr %q, want it to end with %q", args, errOut, want)
		}
	}
}

// TestFlagOnlyCommandsRefuseArguments: `orkwal run data` started a daemon
// on ./orkwal-data and `orkwal wal verify data` verified ./orkwal-data,
// the argument silently ignored.
func TestFlagOnlyCommandsRefuseArguments(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, args := range [][]string{
		// --max-concurrent 0 ends a run that took no notice of its argument.
		{"run", "--max-concurrent", "0", "data"},
		{"wal", "verify", "data"},
		{"wal", "verify", "data", "--data", "data"},
		{"wal", "inspect", "data"},
		{"wal", "repair", "--truncate-at", "2", "data"},
		{"wal", "compact", "data"},
	} {
		_, errOut := mustCLI(t, exitUsage, args...)
		if !strings.Contains(errOut, "expected no arguments, got 1") {
			t.Errorf("%v: stderr %q", args, errOut)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a refused command wrote %s", entries[0].Name())
	}
}

// TestUnknownCommand: `orkwal foo`, `orkwal wal foo` and `orkwal schedule
// stop` answered "No help topic for 'foo'" and exit code 3 (not found).
func TestUnknownCommand(t *testing.T) {
	for args, want := range map[string]string{
		"foo":           `orkwal: unknown command "foo": use run, exec, wal, apply,`,
		"wal foo":       `orkwal: wal: unknown command "foo": use verify, inspect, repair, compact (see orkwal wal --help)`,
		"schedule stop": `orkwal: schedule: unknown command "stop": use pause, resume (see orkwal schedule --help)`,
	} {
		_, errOut := mustCLI(t, exitUsage, strings.Fields(args)...)
		if !strings.HasPrefix(errOut, want) {
			t.Errorf("orkwal %s: stderr %q, want it to start with %q", args, errOut, want)
		}
	}
	for _, args := range []string{"", "wal", "schedule"} {
		if out, _ := mustCLI(t, exitOK, strings.Fields(args)...); !strings.Contains(out, "USAGE:") {
			t.Errorf("orkwal %s: no help: %q", args, out)
		}
	}
}

// TestProgressLines: the lines `trigger --wait` prints when piped. A failed
// attempt going back to pending for its retry was printed as "pending
// (interrupted, will run again)", a running fan-out as "running (attempt
// 0)", and a fan-out's end before its last instances' ends.
func TestProgressLines(t *testing.T) {
	at := func(s int) *time.Time { v := time.Date(2026, 3, 1, 12, 0, s, 0, time.Local); return &v }
	one := func(i int) *int { return &i }
	var out strings.Builder
	p := newProgress(&out)
	p.update(engine.RunView{Tasks: []engine.TaskView{
		{Name: "r", Status: "running", Attempt: 1, StartedAt: at(1)},
		{Name: "i", Status: "running", Attempt: 1, StartedAt: at(1)},
		{Name: "f", Status: "running", Instances: 2},
	}})
	p.update(engine.RunView{Tasks: []engine.TaskView{
		{Name: "r", Status: "pending", Attempt: 1, Failures: 1, Error: "exit status 3", StartedAt: at(1)},
		{Name: "i", Status: "pending", Attempt: 1, Interruptions: 1, StartedAt: at(1)},
		{Name: "f", Status: "success", Instances: 2, FinishedAt: at(5)},
		{Name: "f[0]", Status: "success", Attempt: 1, Instance: one(0), FinishedAt: at(3)},
		{Name: "f[1]", Status: "success", Attempt: 1, Instance: one(1), FinishedAt: at(5)}, // the commit that ends f
	}})
	want := []string{
		"12:00:01 r running (attempt 1)",
		"12:00:01 i running (attempt 1)",
		"f running (2 instances)",
		"12:00:03 f[0] success",
		"12:00:05 f[1] success",
		"12:00:05 f success",
		"r attempt 1 failed: exit status 3; will retry",
		"i pending (interrupted, will run again)",
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("lines:\n%s", out.String())
	}
	for i, w := range want {
		if !strings.HasSuffix(lines[i], w) {
			t.Errorf("line %d: %q, want %q", i, lines[i], w)
		}
	}
}

// TestAddrHelpNamesHTTPS: the clients' --addr help and errors said
// "host:port or an http:// URL", while an https:// URL (a daemon behind a
// TLS proxy, as docs/api.md advises) is taken too.
func TestAddrHelpNamesHTTPS(t *testing.T) {
	help, _ := mustCLI(t, exitOK, "runs", "--help")
	_, errOut := mustCLI(t, exitUsage, "runs", "--addr", "ftp://x")
	for _, s := range []string{help, errOut} {
		if !strings.Contains(s, "https:// URL") {
			t.Errorf("no https:// in %q", s)
		}
	}
}

// TestRunThatCannotBindTouchesNothing: a daemon whose address was taken
// created and locked its data folder (and replayed it) before failing to
// listen. It binds first and leaves no trace.
func TestRunThatCannotBindTouchesNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	data := filepath.Join(t.TempDir(), "data")
	_, errOut := mustCLI(t, exitFailure, "run", "--data", data, "--addr", ln.Addr().String())
	if !strings.Contains(errOut, "listen:") {
		t.Errorf("stderr %q, want the listen error", errOut)
	}
	if _, err := os.Stat(data); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("data folder after a failed bind: %v, want it absent", err)
	}
}

// TestInsecureWarnsAtEveryBoot: --insecure on an address others may reach
// served without a word.
func TestInsecureWarnsAtEveryBoot(t *testing.T) {
	for _, tc := range []struct {
		addr, token string
		insecure    bool
		warn        bool
	}{
		{"0.0.0.0:7777", "", true, true},
		{"[::]:7777", "", true, true},
		{"127.0.0.1:7777", "", true, false},
		{"0.0.0.0:7777", "secret-token-0123456789", true, false},
	} {
		var buf strings.Builder
		warnExposure(slog.New(slog.NewTextHandler(&buf, nil)), tc.addr, tc.token, tc.insecure)
		if got := strings.Contains(buf.String(), "WITHOUT a token"); got != tc.warn {
			t.Errorf("%+v: warned %v, want %v (%q)", tc, got, tc.warn, buf.String())
		}
	}
}

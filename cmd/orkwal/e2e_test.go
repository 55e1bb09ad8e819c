package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The end-to-end tests drive the real binary over HTTP, the way a user does.
// Waiting on an external process is by polling with a deadline: there is no
// signal to wait on across a process boundary.

func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "orkwal")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

type daemon struct {
	t    *testing.T
	cmd  *exec.Cmd
	addr string
	logs *lockedBuffer // its stdout and stderr, readable while it runs
}

func startDaemon(t *testing.T, bin, data, addr string, env ...string) *daemon {
	return startDaemonOn(t, bin, data, addr, "../../testdata/e2e", env...)
}

func startDaemonOn(t *testing.T, bin, data, addr, workflows string, env ...string) *daemon {
	t.Helper()
	return startDaemonArgs(t, bin, data, addr, []string{"--workflows", workflows}, env...)
}

// startDaemonArgs starts `orkwal run --data data --addr addr args...`.
func startDaemonArgs(t *testing.T, bin, data, addr string, args []string, env ...string) *daemon {
	t.Helper()
	d := &daemon{t: t, addr: addr, logs: &lockedBuffer{}}
	d.cmd = exec.Command(bin, append([]string{"run", "--data", data, "--addr", addr}, args...)...)
	d.cmd.Env = append(os.Environ(), env...)
	d.cmd.Stdout, d.cmd.Stderr = d.logs, d.logs
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.cmd.Process.Kill(); d.cmd.Wait() })
	d.eventually("daemon healthy", func() bool {
		code, _ := d.call("GET", "/healthz", "")
		return code == 200
	})
	return d
}

func (d *daemon) call(method, path, body string) (int, []byte) {
	req, _ := http.NewRequest(method, "http://"+d.addr+path, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (d *daemon) eventually(what string, cond func() bool) {
	d.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			d.t.Fatalf("timed out waiting for %s; daemon log:\n%s", what, d.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type runJSON struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Tasks  []struct {
		Name          string `json:"name"`
		Status        string `json:"status"`
		Attempt       int    `json:"attempt"`
		Interruptions int    `json:"interruptions"`
	} `json:"tasks"`
}

func (d *daemon) trigger(name string) string {
	d.t.Helper()
	code, body := d.call("POST", "/workflows/"+name+"/runs", "")
	if code != 201 {
		d.t.Fatalf("trigger %s: %d %s", name, code, body)
	}
	var r runJSON
	json.Unmarshal(body, &r)
	return r.ID
}

func (d *daemon) run(id string) runJSON {
	_, body := d.call("GET", "/runs/"+id, "")
	var r runJSON
	json.Unmarshal(body, &r)
	return r
}

func (d *daemon) waitStatus(id, status string) runJSON {
	d.t.Helper()
	var r runJSON
	d.eventually("run "+id+" "+status, func() bool { r = d.run(id); return r.Status == status })
	return r
}

func TestEndToEndDAGAndKill9Recovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	work := t.TempDir()
	data := filepath.Join(work, "data")
	ledger := filepath.Join(work, "ledger")
	pidfile := filepath.Join(work, "pid")
	env := []string{"LEDGER=" + ledger, "PIDFILE=" + pidfile}
	addr := freeAddr(t)
	d := startDaemon(t, bin, data, addr, env...)

	// 1. A 3-task DAG runs in dependency order.
	dagRun := d.trigger("e2e-dag")
	d.waitStatus(dagRun, "success")
	b, _ := os.ReadFile(ledger)
	want := fmt.Sprintf("%[1]s extract 1\n%[1]s transform 1\n%[1]s load 1\n", dagRun)
	if string(b) != want {
		t.Fatalf("ledger:\n%s\nwant:\n%s", b, want)
	}

	// 2. kill -9 the daemon while a task runs.
	sleepRun := d.trigger("e2e-sleeper")
	d.eventually("nap running", func() bool {
		r := d.run(sleepRun)
		_, err := os.Stat(pidfile)
		return len(r.Tasks) == 1 && r.Tasks[0].Status == "running" && err == nil
	})
	pidText, _ := os.ReadFile(pidfile)
	taskPID, _ := strconv.Atoi(strings.TrimSpace(string(pidText)))
	d.cmd.Process.Signal(syscall.SIGKILL)
	d.cmd.Wait()
	d.eventually("the interrupted attempt's process to die with the daemon", func() bool {
		return syscall.Kill(taskPID, 0) != nil
	})

	// 3. Restart on the same folder: the task runs again as attempt 2.
	d2 := startDaemon(t, bin, data, addr, env...)
	r := d2.waitStatus(sleepRun, "success")
	if nap := r.Tasks[0]; nap.Attempt != 2 || nap.Interruptions != 1 {
		t.Fatalf("nap after restart: attempt %d interruptions %d, want 2 and 1", nap.Attempt, nap.Interruptions)
	}
	if first := d2.run(dagRun); first.Status != "success" || len(first.Tasks) != 3 {
		t.Fatalf("first run after restart: %+v", first)
	}
	if b, _ := os.ReadFile(ledger); !strings.HasSuffix(string(b), sleepRun+" nap 2\n") {
		t.Fatalf("ledger has no line for nap attempt 2:\n%s", b)
	}

	// 4. A second daemon on the same folder is refused.
	out, err := exec.Command(bin, "run", "--data", data, "--addr", freeAddr(t)).CombinedOutput()
	wantMsg := fmt.Sprintf("data folder %s is in use by pid %d", data, d2.cmd.Process.Pid)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), wantMsg) {
		t.Fatalf("second daemon: %v %s, want exit 1 with %q", err, out, wantMsg)
	}

	// 5. SIGTERM shuts down cleanly.
	d2.cmd.Process.Signal(syscall.SIGTERM)
	if err := d2.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, d2.logs)
	}
	if !strings.Contains(d2.logs.String(), "stopped cleanly") {
		t.Fatalf("no clean stop in the log:\n%s", d2.logs)
	}
}

// TestEndToEndCron runs an @every 1s schedule on the real binary, kill -9s
// it, restarts it, and checks every fire time made exactly one run.
func TestEndToEndCron(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	data := filepath.Join(t.TempDir(), "data")
	addr := freeAddr(t)
	d := startDaemonOn(t, bin, data, addr, "../../testdata/e2e-cron")
	runs := func(d *daemon) []struct {
		ID          string     `json:"id"`
		Trigger     string     `json:"trigger"`
		Status      string     `json:"status"`
		ScheduledAt *time.Time `json:"scheduled_at"`
	} {
		_, body := d.call("GET", "/runs?workflow=e2e-tick", "")
		var out []struct {
			ID          string     `json:"id"`
			Trigger     string     `json:"trigger"`
			Status      string     `json:"status"`
			ScheduledAt *time.Time `json:"scheduled_at"`
		}
		json.Unmarshal(body, &out)
		return out
	}
	d.eventually("two cron runs", func() bool { return len(runs(d)) >= 2 })
	d.cmd.Process.Signal(syscall.SIGKILL)
	d.cmd.Wait()
	d2 := startDaemonOn(t, bin, data, addr, "../../testdata/e2e-cron")
	before := len(runs(d2))
	d2.eventually("fires after the restart", func() bool { return len(runs(d2)) >= before+2 })
	seen := map[time.Time]string{}
	for _, r := range runs(d2) {
		if r.Trigger != "cron" || r.ScheduledAt == nil {
			t.Fatalf("run %s: trigger %q scheduled_at %v", r.ID, r.Trigger, r.ScheduledAt)
		}
		if other, dup := seen[*r.ScheduledAt]; dup {
			t.Fatalf("fire time %s made two runs: %s and %s", r.ScheduledAt, other, r.ID)
		}
		seen[*r.ScheduledAt] = r.ID
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// lockedBuffer is a daemon's log, written by exec's copier and read by the
// test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (d *daemon) workflowVersion(name string) (version int, managedBy string) {
	_, body := d.call("GET", "/workflows/"+name, "")
	var w struct {
		Version   int    `json:"version"`
		ManagedBy string `json:"managed_by"`
	}
	json.Unmarshal(body, &w)
	return w.Version, w.ManagedBy
}

// TestWorkflowsFolderLifecycle: SIGHUP killed the daemon (counted as a
// crash), the folder was loaded only at boot, re-recorded over the API's
// versions, and a bad file kept the daemon down. Now: the API cannot
// replace a file's workflow (409 naming the file); a changed file is
// reloaded on its own; a bad file keeps the whole folder out while the
// daemon serves and says so (/healthz, /metrics, its log); SIGHUP reloads;
// SIGTERM stops it cleanly.
func TestWorkflowsFolderLifecycle(t *testing.T) {
	bin := buildBinary(t)
	folder := t.TempDir()
	file := filepath.Join(folder, "a.yaml")
	os.WriteFile(file, []byte("name: a\ntasks:\n  t: {executor: noop}\n"), 0o600)
	d := startDaemonOn(t, bin, t.TempDir(), freeAddr(t), folder)
	logs := d.logs
	if v, by := d.workflowVersion("a"); v != 1 || by != file {
		t.Fatalf("a: version %d managed by %q, want 1 by %s", v, by, file)
	}
	for _, req := range [][2]string{{"POST", "/workflows"}, {"DELETE", "/workflows/a"}} {
		code, body := d.call(req[0], req[1], "name: a\ntasks:\n  t: {executor: noop}\n  u: {executor: noop}\n")
		if code != 409 || !strings.Contains(string(body), file) {
			t.Errorf("%s %s of a managed workflow: %d %s, want 409 naming %s", req[0], req[1], code, body, file)
		}
	}

	os.WriteFile(file, []byte("name: a\ndescription: edited\ntasks:\n  t: {executor: noop}\n"), 0o600)
	d.eventually("the edited file reloaded", func() bool { v, _ := d.workflowVersion("a"); return v == 2 })

	os.WriteFile(filepath.Join(folder, "b.yaml"), []byte("name: b\ntasks: [oops]\n"), 0o600)
	os.WriteFile(file, []byte("name: a\ndescription: edited twice\ntasks:\n  t: {executor: noop}\n"), 0o600)
	d.eventually("the bad folder reported", func() bool {
		_, body := d.call("GET", "/healthz", "")
		return strings.Contains(string(body), `"degraded"`) && strings.Contains(string(body), "b.yaml")
	})
	if _, metrics := d.call("GET", "/metrics", ""); !strings.Contains(string(metrics), "orkwal_workflows_folder_loaded 0") {
		t.Errorf("metrics do not say the folder is not loaded")
	}
	if !strings.Contains(logs.String(), "workflows folder NOT loaded") {
		t.Errorf("the daemon log does not say the folder was not loaded:\n%s", logs)
	}
	if v, _ := d.workflowVersion("a"); v != 2 {
		t.Errorf("a is version %d while the folder has a bad file, want 2 (its change waits)", v)
	}

	os.Remove(filepath.Join(folder, "b.yaml"))
	d.eventually("the folder loaded again", func() bool { v, _ := d.workflowVersion("a"); return v == 3 })
	d.cmd.Process.Signal(syscall.SIGHUP)
	d.eventually("the SIGHUP reload", func() bool { return strings.Contains(logs.String(), "trigger=SIGHUP") })
	if code, _ := d.call("GET", "/healthz", ""); code != 200 {
		t.Fatalf("after SIGHUP: healthz %d", code)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := d.cmd.Wait(); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, logs)
	}
	if !strings.Contains(logs.String(), "stopped cleanly") {
		t.Errorf("no clean stop:\n%s", logs)
	}
}

// TestStrictWorkflowsRefusesToBoot: --strict-workflows keeps the refusal
// to boot on a bad folder, naming every bad file, before the data folder
// is touched.
func TestStrictWorkflowsRefusesToBoot(t *testing.T) {
	folder := t.TempDir()
	os.WriteFile(filepath.Join(folder, "a.yaml"), []byte("name: a\nschedule: \"CRON_TZ=Europe/Berlin\"\ntasks:\n  t: {executor: noop}\n"), 0o600)
	os.WriteFile(filepath.Join(folder, "b.yaml"), []byte("name: b\ntasks: [x]\n"), 0o600)
	data := filepath.Join(t.TempDir(), "data")
	_, errOut := mustCLI(t, exitFailure, "run", "--data", data, "--addr", "127.0.0.1:0", "--workflows", folder, "--strict-workflows")
	if !strings.Contains(errOut, "a.yaml: schedule") || !strings.Contains(errOut, "b.yaml: tasks") {
		t.Errorf("stderr %q, want both bad files named", errOut)
	}
	if _, err := os.Stat(data); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("data folder: %v, want none", err)
	}
}

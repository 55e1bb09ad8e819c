package main

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/orkwal/orkwal/api"
)

// TestEndToEndTokenAndShutdown: the real binary with ORKWAL_TOKEN refuses
// requests without it, serves the CLI that sends it, and on SIGTERM ends a
// log stream with the daemon-stopping trailer (the stream does not hold
// the shutdown) before stopping cleanly.
func TestEndToEndTokenAndShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	work := t.TempDir()
	addr := freeAddr(t)
	d := startDaemon(t, bin, filepath.Join(work, "data"), addr, "ORKWAL_TOKEN=e2e-token",
		"LEDGER="+filepath.Join(work, "ledger"), "PIDFILE="+filepath.Join(work, "pid"))
	if code, body := d.call("GET", "/workflows", ""); code != 401 || !strings.Contains(string(body), "unauthorized") {
		t.Fatalf("without the token: %d %s", code, body)
	}
	t.Setenv("ORKWAL_TOKEN", "e2e-token")
	out, _ := mustCLI(t, exitOK, "trigger", "--addr", addr, "e2e-sleeper")
	id := strings.TrimSpace(out)

	req, _ := http.NewRequest("GET", "http://"+addr+"/runs/"+id+"/tasks/nap/logs?follow=1", nil)
	req.Header.Set("Authorization", "Bearer e2e-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("follow: %v %v", resp, err)
	}
	defer resp.Body.Close()
	d.cmd.Process.Signal(syscall.SIGTERM)
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatalf("the stream broke off: %v", err)
	}
	if end := resp.Trailer.Get(api.FollowEndTrailer); end != api.FollowEndStopping {
		t.Fatalf("stream end %q, want %q", end, api.FollowEndStopping)
	}
	if err := d.cmd.Wait(); err != nil || !strings.Contains(d.logs.String(), "stopped cleanly") {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, d.logs)
	}
}

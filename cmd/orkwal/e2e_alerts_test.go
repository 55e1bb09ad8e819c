package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/orkwal/orkwal/executors/notify"
	"github.com/orkwal/orkwal/executors/notify/smtptest"
)

const e2eHookSecret = "e2e-hook-secret-value"

// hookRecorder keeps what a webhook receiver got; while held, it answers
// nothing (the daemon's send stays in flight).
type hookRecorder struct {
	mu   sync.Mutex
	got  []hookRequest
	hold chan struct{}
}

type hookRequest struct {
	id, sig string
	raw     []byte
}

func (h *hookRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.got = append(h.got, hookRequest{id: r.Header.Get("X-Orkwal-Alert-Id"), sig: r.Header.Get("X-Orkwal-Signature"), raw: raw})
	hold := h.hold
	h.mu.Unlock()
	if hold != nil {
		<-hold
	}
}

func (h *hookRecorder) requests() []hookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookRequest(nil), h.got...)
}

type alertJSON struct {
	ID         string `json:"id"`
	Event      string `json:"event"`
	Deliveries []struct {
		Target   string `json:"target"`
		Status   string `json:"status"`
		Attempts int    `json:"attempts"`
	} `json:"deliveries"`
}

func (d *daemon) alerts(id string) []alertJSON {
	_, body := d.call("GET", "/runs/"+id, "")
	var r struct {
		Alerts []alertJSON `json:"alerts"`
	}
	json.Unmarshal(body, &r)
	return r.Alerts
}

// TestEndToEndAlertsThroughKill9 runs the real binary with three targets
// of a failing workflow: its own webhook, which receives the alert but
// never answers, its own email, whose SMTP server is down, and the
// daemon's default webhook (--alerts), which is down too. The daemon is
// killed with -9 while every delivery is unfinished. After a restart,
// every receiver (now up) gets the alert: the first a second time, with
// the same id (a duplicate it can drop), the SMTP server a mail with the
// id in its headers, every webhook request signed,
// the body naming the failed task, its error, its log's tail and the run's
// page; nothing of the secret is in the WAL, the logs or the API.
func TestEndToEndAlertsThroughKill9(t *testing.T) {
	bin := buildBinary(t)
	work := t.TempDir()
	data, wfDir := filepath.Join(work, "data"), filepath.Join(work, "workflows")
	hook := &hookRecorder{hold: make(chan struct{})}
	srv := &http.Server{Handler: hook}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	downAddr, smtpAddr := freeAddr(t), freeAddr(t) // nothing listens there until the restart
	_, smtpPort, _ := net.SplitHostPort(smtpAddr)
	os.MkdirAll(wfDir, 0o755)
	os.WriteFile(filepath.Join(wfDir, "boom.yaml"), []byte(`name: e2e-alert
alerts:
  - {on: [failure], webhook: "http://`+ln.Addr().String()+`/hook", secret: "${env:HOOK_SECRET}"}
  - {on: [failure], email: {to: [oncall@example.com], host: 127.0.0.1, port: `+smtpPort+`, starttls: false}}
tasks:
  boom: {command: "echo the last words; exit 3"}
`), 0o644)
	defaults := filepath.Join(work, "alerts.yaml")
	os.WriteFile(defaults, []byte(`alerts:
  - {on: [failure], webhook: "http://`+downAddr+`/down", secret: "${env:HOOK_SECRET}"}
`), 0o644)
	addr := freeAddr(t)
	start := func() *daemon {
		return startDaemonArgs(t, bin, data, addr, []string{"--workflows", wfDir, "--alerts", defaults, "--log-format", "json"},
			"HOOK_SECRET="+e2eHookSecret)
	}
	d := start()
	id := d.trigger("e2e-alert")
	d.waitStatus(id, "failed")
	d.eventually("the first send to reach the receiver, and the other to fail", func() bool {
		a := d.alerts(id)
		return len(hook.requests()) == 1 && len(a) == 1 && a[0].Deliveries[1].Attempts >= 1 && a[0].Deliveries[2].Attempts >= 1
	})
	d.cmd.Process.Signal(syscall.SIGKILL)
	d.cmd.Wait()
	close(hook.hold) // the daemon is gone: whatever the receiver answers now is lost
	hook.mu.Lock()
	hook.hold = nil
	hook.mu.Unlock()
	down := &hookRecorder{}
	dln, err := net.Listen("tcp", downAddr)
	if err != nil {
		t.Fatal(err)
	}
	dsrv := &http.Server{Handler: down}
	go dsrv.Serve(dln)
	t.Cleanup(func() { dsrv.Close() })
	smtpd, err := smtptest.NewAt(smtpAddr, "", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(smtpd.Close)

	d2 := start()
	var alerts []alertJSON
	d2.eventually("every delivery delivered after the restart", func() bool {
		alerts = d2.alerts(id)
		return len(alerts) == 1 && len(alerts[0].Deliveries) == 3 && alerts[0].Deliveries[0].Status == "delivered" &&
			alerts[0].Deliveries[1].Status == "delivered" && alerts[0].Deliveries[2].Status == "delivered"
	})
	alertID := alerts[0].ID
	if mails := smtpd.Messages(); len(mails) != 1 || !strings.Contains(mails[0].Data, "X-Orkwal-Alert-Id: "+alertID) ||
		!strings.Contains(mails[0].Data, "the last words") || mails[0].To[0] != "oncall@example.com" {
		t.Errorf("mails: %+v", mails)
	}
	got := append(hook.requests(), down.requests()...)
	if len(hook.requests()) != 2 || len(down.requests()) != 1 {
		t.Fatalf("the receiver got %d requests and the one that was down %d, want 2 (a duplicate) and 1", len(hook.requests()), len(down.requests()))
	}
	for _, r := range got {
		var body notify.Payload
		json.Unmarshal(r.raw, &body)
		if r.id != alertID || body.ID != alertID || !notify.Verify([]byte(e2eHookSecret), r.raw, r.sig) {
			t.Errorf("request: id %q body id %q (want %q), signature valid: %v", r.id, body.ID, alertID, notify.Verify([]byte(e2eHookSecret), r.raw, r.sig))
		}
		if body.Event != "failure" || body.Run == nil || body.Run.URL != "http://"+addr+"/ui/runs/"+id || len(body.FailedTasks) != 1 ||
			body.FailedTasks[0].Name != "boom" || body.FailedTasks[0].ExitCode != 3 || !strings.Contains(body.FailedTasks[0].LogTail, "the last words") {
			t.Errorf("body: %s", r.raw)
		}
	}
	show, err := exec.Command(bin, "show", id, "--addr", addr).CombinedOutput()
	if err != nil || !strings.Contains(string(show), alertID) || !strings.Contains(string(show), "delivered") {
		t.Errorf("orkwal show: %v\n%s", err, show)
	}
	_, metrics := d2.call("GET", "/metrics", "")
	if !strings.Contains(string(metrics), "orkwal_alerts_sent_total 3") {
		t.Errorf("metrics: %s", grepLines(string(metrics), "orkwal_alerts"))
	}
	if !strings.Contains(d.logs.String(), `"msg":"task failed"`) || !strings.Contains(d.logs.String(), `"task":"boom"`) {
		t.Errorf("no task failed line in the daemon's log:\n%s", d.logs)
	}
	_, api := d2.call("GET", "/runs/"+id, "")
	d2.cmd.Process.Signal(syscall.SIGTERM) // its log is read below
	d2.cmd.Wait()
	for what, b := range map[string][]byte{"the first daemon's log": []byte(d.logs.String()), "the second's": []byte(d2.logs.String()), "the API": api, "the WAL": walBytes(t, data)} {
		if bytes.Contains(b, []byte(e2eHookSecret)) {
			t.Errorf("the secret is in %s", what)
		}
	}
}

func walBytes(t *testing.T, data string) []byte {
	var all []byte
	filepath.Walk(data, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			all = append(all, b...)
		}
		return nil
	})
	return all
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

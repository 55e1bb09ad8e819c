package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orkwal/orkwal/executors/notify"
)

// TestEndToEndAlertsTestCommand runs `orkwal alerts test` with the real
// binary against a daemon whose workflows name loopback receivers: the
// sample reaches a good receiver with its id in X-Orkwal-Alert-Id and the
// body, signed with the secret, and the command says "ok" (exit 0); a
// receiver answering 500 is reported FAILED with its code (exit 1); an
// unknown workflow exits 3.
func TestEndToEndAlertsTestCommand(t *testing.T) {
	bin := buildBinary(t)
	work := t.TempDir()
	data, wfDir := filepath.Join(work, "data"), filepath.Join(work, "workflows")
	good := &hookRecorder{}
	goodSrv := httptest.NewServer(good)
	t.Cleanup(goodSrv.Close)
	badSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }))
	t.Cleanup(badSrv.Close)
	os.MkdirAll(wfDir, 0o755)
	for name, url := range map[string]string{"hooked": goodSrv.URL, "broken": badSrv.URL} {
		os.WriteFile(filepath.Join(wfDir, name+".yaml"), []byte(`name: `+name+`
alerts:
  - {on: [failure], webhook: "`+url+`/hook", secret: "${env:HOOK_SECRET}"}
tasks:
  a: {command: "true"}
`), 0o644)
	}
	addr := freeAddr(t)
	startDaemonArgs(t, bin, data, addr, []string{"--workflows", wfDir}, "HOOK_SECRET="+e2eHookSecret)
	cli := func(args ...string) (string, int) {
		out, err := exec.Command(bin, append(append([]string{"alerts", "test"}, args...), "--addr", addr)...).CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}

	out, code := cli("hooked")
	reqs := good.requests()
	if code != 0 || len(reqs) != 1 || !strings.Contains(out, "webhook 127.0.0.1") || !strings.Contains(out, " ok ") {
		t.Fatalf("alerts test hooked: exit %d, %d requests, output:\n%s", code, len(reqs), out)
	}
	var body notify.Payload
	if err := json.Unmarshal(reqs[0].raw, &body); err != nil {
		t.Fatalf("the sample's body: %v: %s", err, reqs[0].raw)
	}
	if r := reqs[0]; r.id == "" || body.ID != r.id || body.Event != "test" || body.Workflow != "hooked" ||
		!strings.HasPrefix(r.sig, "sha256=") || !notify.Verify([]byte(e2eHookSecret), r.raw, r.sig) {
		t.Errorf("the sample: id %q, signature %q (valid: %v), body %s", r.id, r.sig, notify.Verify([]byte(e2eHookSecret), r.raw, r.sig), r.raw)
	}

	out, code = cli("broken")
	if code != exitFailure || !strings.Contains(out, "FAILED") || !strings.Contains(out, "500") {
		t.Errorf("alerts test broken: exit %d, output:\n%s", code, out)
	}
	out, code = cli("no-such-workflow")
	if code != exitNotFound {
		t.Errorf("alerts test no-such-workflow: exit %d, want %d; output:\n%s", code, exitNotFound, out)
	}
	if len(good.requests()) != 1 {
		t.Errorf("the good receiver got %d requests, want 1", len(good.requests()))
	}
}

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSystemdUnitVerifies: deploy/orkwal.service passes systemd-analyze
// verify (with ExecStart pointing at a real build) and keeps what the
// README promises of it.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatalf("systemd-analyze is needed to check deploy/orkwal.service (Debian package systemd; .ci/run installs it): %v", err)
	}
	unit, err := os.ReadFile(filepath.Join("..", "..", "deploy", "orkwal.service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Type=notify", "WatchdogSec=", "StateDirectory=orkwal", "NoNewPrivileges=yes",
		"ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes", "Restart=on-failure", "ExecReload=/bin/kill -HUP $MAINPID",
		"ExecStart=/usr/local/bin/orkwal run --data /var/lib/orkwal"} {
		if !strings.Contains(string(unit), "\n"+want) {
			t.Errorf("deploy/orkwal.service lacks %q", want)
		}
	}
	// A graceful stop takes at most --kill-grace (the tasks) plus the API's
	// 5 s shutdown: TimeoutStopSec must leave it that time.
	if stop := unitDuration(t, string(unit), "TimeoutStopSec"); stop < 10*time.Second+5*time.Second {
		t.Errorf("TimeoutStopSec %v is shorter than a graceful stop (kill grace 10s + 5s)", stop)
	}
	bin := buildBinary(t)
	path := filepath.Join(t.TempDir(), "orkwal.service")
	os.WriteFile(path, []byte(strings.ReplaceAll(string(unit), "/usr/local/bin/orkwal", bin)), 0o644)
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) != 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

func unitDuration(t *testing.T, unit, key string) time.Duration {
	t.Helper()
	for _, line := range strings.Split(unit, "\n") {
		if v, ok := strings.CutPrefix(line, key+"="); ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatalf("%s=%s: %v", key, v, err)
			}
			return d
		}
	}
	t.Fatalf("the unit has no %s", key)
	return 0
}

// TestContainerImages checks the two Dockerfiles' promises without a Docker
// daemon: the default image is FROM scratch; both run as a non-root user,
// keep the data folder in a volume, check health with `orkwal health`, and
// start `orkwal run`.
func TestContainerImages(t *testing.T) {
	for _, c := range []struct{ file, base, entry string }{
		{"Dockerfile", "scratch", `["/orkwal", "run"]`},
		{"Dockerfile.python", "debian:bookworm-slim", `["tini", "--", "orkwal", "run"]`},
	} {
		b, err := os.ReadFile(filepath.Join("..", "..", "deploy", c.file))
		if err != nil {
			t.Fatal(err)
		}
		final := map[string]string{}
		for _, line := range strings.Split(string(b), "\n") {
			word, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
			switch word {
			case "FROM":
				final = map[string]string{"FROM": rest} // a new stage: only the last one counts
			case "USER", "VOLUME", "HEALTHCHECK", "ENTRYPOINT", "ENV":
				final[word] += rest
			}
		}
		if final["FROM"] != c.base {
			t.Errorf("%s: final stage FROM %q, want %q", c.file, final["FROM"], c.base)
		}
		if u := final["USER"]; u == "" || u == "root" || strings.HasPrefix(u, "0") {
			t.Errorf("%s: runs as %q, want a non-root user", c.file, u)
		}
		if final["VOLUME"] != "/data" || !strings.Contains(final["ENV"], "ORKWAL_DATA=/data") {
			t.Errorf("%s: data folder: VOLUME %q, ENV %q; want /data as both", c.file, final["VOLUME"], final["ENV"])
		}
		if !strings.Contains(final["HEALTHCHECK"], `"health"]`) {
			t.Errorf("%s: HEALTHCHECK %q does not run orkwal health", c.file, final["HEALTHCHECK"])
		}
		if final["ENTRYPOINT"] != c.entry {
			t.Errorf("%s: ENTRYPOINT %s, want %s", c.file, final["ENTRYPOINT"], c.entry)
		}
	}
}

package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, _ := mustCLI(t, exitOK, args...)
		for _, want := range []string{"orkwal (devel)\n", "commit: ", "go: " + runtime.Version() + "\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("orkwal %s: no %q in\n%s", args[0], want, out)
			}
		}
	}
	mustCLI(t, exitUsage, "version", "extra")
}

// TestVersionStamp builds the binary as a release would, stamping the
// version and commit with -ldflags -X.
func TestVersionStamp(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "orkwal")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v1.2.3 -X main.commit=0123abc", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("orkwal --version: %v\n%s", err, out)
	}
	want := "orkwal v1.2.3\ncommit: 0123abc\ngo: " + runtime.Version() + "\n"
	if string(out) != want {
		t.Fatalf("orkwal --version:\n%s\nwant:\n%s", out, want)
	}
}

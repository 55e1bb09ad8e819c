package main

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReleaseBuild: `make build` gives a static, stripped binary with the
// version and commit stamped and urfave/cli's docs generators left out, and
// the same source gives the same bytes (reproducible).
func TestReleaseBuild(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a", "orkwal"), filepath.Join(dir, "b", "orkwal")
	for _, bin := range []string{a, b} {
		if err := makeBuild(bin, "VERSION=v9.8.7-test", "COMMIT=0123abcd"); err != nil {
			t.Fatal(err)
		}
	}
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if len(ab) == 0 || !bytes.Equal(ab, bb) {
		t.Fatalf("two builds of the same source differ (%d and %d bytes): not reproducible", len(ab), len(bb))
	}
	f, err := elf.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Fatalf("the binary is dynamically linked (%v)", p.Type)
		}
	}
	if f.Section(".symtab") != nil {
		t.Fatalf("the binary has a symbol table: not stripped (-s)")
	}
	out, err := exec.Command("go", "version", "-m", a).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, out)
	}
	for _, want := range []string{"-trimpath=true", "CGO_ENABLED=0", "-tags=urfave_cli_no_docs"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("build settings lack %q:\n%s", want, out)
		}
	}
	version, err := exec.Command(a, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(version), "v9.8.7-test") || !strings.Contains(string(version), "0123abcd") {
		t.Errorf("orkwal version of a stamped build: %v %q, want the version and commit given to make", err, version)
	}
	if strings.Contains(string(out), "go-md2man") {
		t.Errorf("the binary still carries urfave/cli's man page generator (go-md2man)")
	}
}

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/orkwal/orkwal/engine"
)

// TestOrkFixture runs testdata/ork (orkwal's own workflow in the style of
// Ork's examples: see ork.yaml) with orkwal exec, in a copy of its folder
// where its library is built with gcc, and checks every task's output.
func TestOrkFixture(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"ork.yaml", "orktasks.py", "triple.py", "native.c"} {
		data, err := os.ReadFile(filepath.Join("testdata", "ork", name))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, name), data, 0o644)
	}
	gcc := exec.Command("gcc", "-shared", "-fPIC", "-o", "libnative.so", "native.c")
	gcc.Dir = dir
	if out, err := gcc.CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	out, _ := mustCLI(t, exitOK, "exec", "-o", "json", filepath.Join(dir, "ork.yaml"))
	var run engine.RunView
	if err := json.Unmarshal([]byte(out), &run); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := map[string]string{
		"start":   `{"values":[1,2,3],"at":"2026-01-02T03:04:05"}`,
		"triple":  `{"tripled":[3,6,9],"sum":18}`,
		"summary": `"total=18 over 3"`,
		"flaky":   `{"attempt":2}`,
		"native":  `{"has_values":true}`,
	}
	for _, task := range run.Tasks {
		var got, w any
		json.Unmarshal(task.Output, &got)
		json.Unmarshal([]byte(want[task.Name]), &w)
		if task.Status != "success" || !jsonSame(got, w) {
			t.Errorf("%s: %s, output %s, want success, %s (%s)", task.Name, task.Status, task.Output, want[task.Name], task.Error)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "flaky.txt")); err != nil {
		t.Errorf("flaky's file is not beside the workflow: %v", err)
	}
}

func jsonSame(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

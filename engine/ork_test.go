package engine

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orkwal/orkwal/replay/workflow"
)

// TestTypesCheckedAtLoadForEveryExecutor: a type expression that does not
// parse is refused when the workflow is recorded, whatever the executor
// (Ork checks types when the file loads); a good one on a process task is
// accepted.
func TestTypesCheckedAtLoadForEveryExecutor(t *testing.T) {
	e := openEngine(t, t.TempDir(), newManual(t, ""), 1)
	defer e.Close()
	bad := &workflow.Spec{Name: "bad", Tasks: []*workflow.Task{
		{Name: "a", Executor: "process", Command: []string{"true"}, OutputType: []byte(`{"n": "integer"}`)}}}
	_, _, err := e.PutWorkflow(bad, "")
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `tasks.a: output_type: field "n": unknown type "integer"`) {
		t.Errorf("bad type on a process task: %v", err)
	}
	good := &workflow.Spec{Name: "good", Tasks: []*workflow.Task{
		{Name: "a", Executor: "process", Command: []string{"true"}, OutputType: []byte(`{"n": "int", "tags": ["str"]}`)}}}
	put(t, e, good)
}

// TestOrkProcessContract: an Ork process task reads its resolved inputs
// from ORK_INPUT_JSON and gives its output as an ORK_OUTPUT:<json> line;
// the output reaches the next task's inputs.
func TestOrkProcessContract(t *testing.T) {
	e, err := Open(Config{DataDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	defer e.Close()
	spec, err := workflow.Parse("", []byte(`name: ork
tasks:
  gen:
    command: |
      echo "ORK_OUTPUT:{\"numbers\": [1, 2, 3], \"by\": \"$ORK_TASK_NAME\"}"
    input_type: {}
    output_type: {numbers: [int], by: str}
  sum:
    command: |
      echo "ORK_OUTPUT:{\"input\": $ORK_INPUT_JSON, \"run\": \"$ORK_RUN_ID\", \"id\": \"$EXECUTION_ID\"}"
    depends_on: [gen]
    input_type: {gen: {numbers: [int], by: str}, k: int}
    inputs:
      gen: {ref: tasks.gen.output}
      k: {const: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	put(t, e, spec)
	id := trigger(t, e, "ork")
	run, err := e.WaitRun(t.Context(), id)
	if err != nil || run.Status != "success" {
		t.Fatalf("run: %+v, %v", run, err)
	}
	var got string
	for _, task := range run.Tasks {
		if task.Name == "sum" {
			got = string(task.Output)
			// The API shows the inputs the attempt received.
			if in := task.Inputs; string(in["k"]) != "2" || string(in["gen"]) != `{"numbers": [1, 2, 3], "by": "gen"}` {
				t.Errorf("sum's resolved inputs = %s", in)
			}
		}
	}
	want := `{"input": {"gen":{"numbers": [1, 2, 3], "by": "gen"},"k":2}, "run": "` + id + `", "id": "` + id + `:sum:1"}`
	if got != want {
		t.Errorf("sum's output = %s, want %s", got, want)
	}
}

// TestOrkLibraryTask: executor library (Ork's) runs ork_task_run of a
// shared object, given relative to the workflow's folder, with the
// task's inputs; its answer is the output.
func TestOrkLibraryTask(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "double.c")
	os.WriteFile(src, []byte(`#include <stdlib.h>
#include <string.h>
char *ork_task_run(const char *in) { char *s = malloc(strlen(in) + 16); strcpy(s, "[" ); strcat(s, in); strcat(s, "," ); strcat(s, in); strcat(s, "]"); return s; }
void ork_task_free(char *p) { free(p); }
`), 0o644)
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-o", filepath.Join(dir, "libdouble.so"), src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	spec, err := workflow.Parse(filepath.Join(dir, "lib.yaml"), []byte(`name: lib
tasks:
  twice:
    executor: library
    file: libdouble.so
    inputs: {n: {const: 21}}
`))
	if err != nil {
		t.Fatal(err)
	}
	e, err := Open(Config{DataDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	defer e.Close()
	put(t, e, spec)
	run, err := e.WaitRun(t.Context(), trigger(t, e, "lib"))
	if err != nil || run.Status != "success" || string(run.Tasks[0].Output) != `[{"n":21},{"n":21}]` {
		t.Fatalf("run: %+v, %v", run, err)
	}
}

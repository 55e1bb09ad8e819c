package engine

import (
	"errors"
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

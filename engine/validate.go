package engine

import (
	"bytes"
	"cmp"
	"fmt"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
)

// CheckWorkflow is the one validation of a workflow file, whichever way it
// arrives: orkwal validate and apply, POST /workflows and the --workflows
// folder all call it, so that they give the same verdict. It parses data
// (workflow.Parse: the format, and the limits of workflow.MaxBytes and
// workflow.MaxTasks) and checks what only the executors know (python
// tasks' type descriptions). file names the workflow in errors and gives
// its folder ("" for none); errors are ErrInvalid, their message the
// reason alone ("etl.yaml: tasks.load.depends_on: unknown task ...").
func CheckWorkflow(file string, data []byte) (spec *workflow.Spec, err error) {
	defer func() { // whatever a user hands the daemon, it never dies of it
		if r := recover(); r != nil {
			spec, err = nil, invalidWorkflow{fmt.Errorf("%s: internal error while checking it (please report it): %v", cmp.Or(file, "workflow"), r)}
		}
	}()
	spec, err = workflow.Parse(file, data)
	if err != nil {
		return nil, invalidWorkflow{err}
	}
	if file == "" {
		file = "workflow" // as Parse names a workflow without a file
	}
	if err := validateExecutors(spec, file); err != nil {
		return nil, err
	}
	return spec, nil
}

// validateExecutors checks what only the executors know: the type
// descriptions of the tasks (of every executor: Ork checks them when the
// file loads).
func validateExecutors(spec *workflow.Spec, file string) error {
	for _, t := range spec.Tasks {
		if t.InputType == nil && t.OutputType == nil && t.Executor != "python" {
			continue
		}
		job := pythonJob(&replay.Task{Run: &replay.Run{Spec: spec}, SpecIndex: indexOf(spec, t)})
		if err := executors.ValidatePythonTypes(job); err != nil {
			return invalidWorkflow{fmt.Errorf("%s: tasks.%s: %w", file, t.Name, err)}
		}
	}
	return nil
}

func indexOf(spec *workflow.Spec, t *workflow.Task) int {
	for i, x := range spec.Tasks {
		if x == t {
			return i
		}
	}
	return -1
}

func sameSpec(a, b *workflow.Spec) bool {
	ea, err1 := a.Canonical()
	eb, err2 := b.Canonical()
	return err1 == nil && err2 == nil && bytes.Equal(ea, eb)
}

// invalidWorkflow is ErrInvalid with the workflow's own message.
type invalidWorkflow struct{ error }

func (e invalidWorkflow) Is(target error) bool { return target == ErrInvalid }
func (e invalidWorkflow) Unwrap() error        { return e.error }

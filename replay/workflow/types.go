package workflow

import (
	"encoding/json"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Ork checks a workflow's types when the file loads, not while its tasks
// run. A workflow that declares any type (top-level types, or an
// input_type or output_type on any task) is "typed" and is held to Ork's
// rules (crates/ork-core/src/workflow.rs, validate_types), for every
// executor:
//
//  1. a task another task depends on declares output_type;
//  2. a task with depends_on declares input_type;
//  3. an input_type with fields names exactly the task's inputs (orkwal
//     also lets an optional field, T? or optional[T], go without one).
//
// A ref naming a task outside depends_on is refused in every workflow
// (checkTask). A workflow that declares no type is an untyped orkwal
// workflow: its tasks read each other's outputs from ORKWAL_INPUT, and
// none of these rules applies. Whether values match their types while the
// tasks run is checked only with check_types (see CheckTypes).

// typed reports whether the workflow declares any type.
func typed(spec *Spec, tasks []parsedTask) bool {
	if len(spec.Types) > 0 {
		return true
	}
	for _, pt := range tasks {
		if pt.task.InputType != nil || pt.task.OutputType != nil {
			return true
		}
	}
	return false
}

// checkTypes applies Ork's load-time rules to a typed workflow, in Ork's
// order: output types, input types, then the inputs of each input type.
func (p *parser) checkTypes(spec *Spec, tasks []parsedTask) error {
	if !typed(spec, tasks) {
		return nil
	}
	byName := make(map[string]parsedTask, len(tasks))
	for _, pt := range tasks {
		byName[pt.task.Name] = pt
	}
	for _, pt := range tasks {
		for _, dep := range pt.task.DependsOn {
			if up := byName[dep]; up.task.OutputType == nil {
				return p.fail(up.node, joinPath(joinPath("tasks", dep), "output_type"),
					"required: task %q depends on this task, and a workflow that declares types names the output of every task others depend on (Ork's rule)", pt.task.Name)
			}
		}
		if len(pt.task.DependsOn) > 0 && pt.task.InputType == nil {
			return p.fail(pt.node, joinPath(joinPath("tasks", pt.task.Name), "input_type"),
				"required: this task has depends_on, and a workflow that declares types names the inputs of every such task (Ork's rule; input_type: {} for none)")
		}
	}
	for _, pt := range tasks {
		if err := p.checkInputBindings(spec, pt); err != nil {
			return err
		}
	}
	return nil
}

// checkInputBindings checks that the inputs of a task name exactly the
// fields of its input_type, when it has fields.
func (p *parser) checkInputBindings(spec *Spec, pt parsedTask) error {
	t := pt.task
	if t.InputType == nil {
		return nil
	}
	path := joinPath("tasks", t.Name)
	fields, ok := objectFields(spec, t.InputType)
	if !ok {
		return p.fail(pt.nodes["input_type"], joinPath(path, "input_type"),
			"must be an object of named arguments ({name: type, ...}, {} for none), or name one in types")
	}
	for _, name := range sortedKeys(fields) {
		if _, bound := t.Inputs[name]; !bound && !optionalType(fields[name]) {
			return p.fail(pt.node, joinPath(path, "inputs"),
				"missing input %q, which input_type declares (give it {const: ...} or {ref: ...})", name)
		}
	}
	if len(fields) == 0 {
		return nil // Ork checks the inputs only against an input_type with fields
	}
	for _, name := range sortedKeys(t.Inputs) {
		if _, declared := fields[name]; !declared {
			return p.fail(pt.nodes["inputs"], joinPath(joinPath(path, "inputs"), name),
				"not declared in input_type (declare it there, or remove it)")
		}
	}
	return nil
}

// objectFields returns the fields of an object type, following one name
// of the workflow's types ("types.Args" or "Args"); false when the type
// is not an object.
func objectFields(spec *Spec, raw []byte) (map[string]json.RawMessage, bool) {
	var name string
	if json.Unmarshal(raw, &name) == nil {
		named, ok := spec.Types[strings.TrimPrefix(strings.TrimSpace(name), "types.")]
		if !ok {
			return nil, false
		}
		raw = named
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, false
	}
	return fields, true
}

// optionalType reports whether a type expression is optional: "T?" or
// "optional[T]".
func optionalType(raw json.RawMessage) bool {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return false
	}
	s = strings.TrimSpace(s)
	return strings.HasSuffix(s, "?") || strings.HasPrefix(s, "optional[")
}

// checkTypesKey decodes check_types (workflow or task): whether values are
// checked against their types while the task runs.
func (p *parser) checkTypesKey(e entry) (*bool, error) {
	v, err := p.boolean(e.val, e.path)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// boolean decodes a YAML boolean.
func (p *parser) boolean(n *yaml.Node, path string) (bool, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != tagBool {
		return false, p.fail(n, path, "expected true or false, got %s", describe(n))
	}
	var v bool
	if err := n.Decode(&v); err != nil {
		return false, p.fail(n, path, "%v", err)
	}
	return v, nil
}

// resolveCheckTypes sets each task's CheckTypes: its own check_types, or
// the workflow's.
func (p *parser) resolveCheckTypes(tasks []parsedTask) {
	for _, pt := range tasks {
		switch {
		case pt.checkTypes != nil:
			pt.task.CheckTypes = *pt.checkTypes
		case p.wfCheckTypes != nil:
			pt.task.CheckTypes = *p.wfCheckTypes
		}
	}
}

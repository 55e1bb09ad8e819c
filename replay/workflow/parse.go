package workflow

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The limits of a workflow, whichever way it arrives (a file of the
// --workflows folder, POST /workflows, orkwal validate or apply): Parse
// refuses more. A 1 MiB file of short tasks holds about 50,000 of them,
// which would take about 120 MB of memory once parsed; 10,000 tasks is far
// beyond a workflow a person writes (a fan-out's instances are not counted:
// parallel and foreach have their own cap).
const (
	MaxBytes = 1 << 20 // the YAML text
	MaxTasks = 10_000  // tasks in the file
)

// anonymousFile names, in error messages, a workflow that came without a file
// (posted through the API).
const anonymousFile = "workflow"

// Parse reads a workflow file and returns its validated Spec, or an *Error
// naming the file, the line and column, the key and the reason; a file
// with several errors gets them all at once, as Errors in file order
// (what a single key can tell, then missing required keys). Only when each
// key reads well come, one at a time, the checks of the whole: dependencies,
// then cycles, then the rest. A YAML syntax error stops the reading: it is
// the only one.
//
// filename is used in error messages and, when non-empty, to set Spec.Dir to
// the absolute folder of the file, against which relative workdirs are
// resolved. With filename "" (a workflow posted through the API) errors say
// "workflow", Dir stays "" and workdirs are kept as written.
//
// Parse is deterministic: the same input gives the same Spec, with Tasks in
// topological order, ties broken by the order of the tasks in the file.
func Parse(filename string, data []byte) (spec *Spec, err error) {
	p := &parser{file: filename}
	if filename == "" {
		p.file = anonymousFile
	}
	// A panic inside a library the parser calls (the YAML decoder, the cron
	// parser, each guarded on its own too) refuses the file: whatever a user
	// hands the daemon, it never dies of it.
	defer func() {
		if r := recover(); r != nil {
			spec, err = nil, &Error{File: p.file, Msg: fmt.Sprintf("internal error while parsing (please report it): %v", r)}
		}
	}()
	if len(data) > MaxBytes {
		return nil, &Error{File: p.file, Msg: fmt.Sprintf("%d bytes or more, above the limit of %d (1 MiB)", len(data), MaxBytes)}
	}
	if filename != "" {
		dir, err := filepath.Abs(filepath.Dir(filename))
		if err != nil {
			return nil, &Error{File: p.file, Msg: fmt.Sprintf("resolving folder: %v", err), Err: err}
		}
		p.dir = dir
	}
	root, err := p.document(data)
	if err != nil {
		return nil, err
	}
	return p.workflow(root)
}

// parser carries what error messages and path resolution need.
type parser struct {
	file         string   // as shown in messages
	dir          string   // Spec.Dir
	wfCheckTypes *bool    // the workflow's check_types, nil when absent
	errs         []*Error // the errors kept so far (see keep)
}

// fail builds the error for the node n at key path path.
func (p *parser) fail(n *yaml.Node, path, format string, args ...any) error {
	return &Error{File: p.file, Path: path, Line: lineOf(n), Col: columnOf(n), Msg: fmt.Sprintf(format, args...)}
}

// errKept stands for errors already kept: the caller goes on, and the
// caller's caller knows the file is bad.
var errKept = errors.New("workflow: errors kept")

// keep records err, to be reported with the file's other errors, and
// reports whether there was one.
func (p *parser) keep(err error) bool {
	var pe *Error
	switch {
	case err == nil:
		return false
	case errors.Is(err, errKept):
	case errors.As(err, &pe):
		p.errs = append(p.errs, pe)
	default:
		p.errs = append(p.errs, &Error{File: p.file, Msg: err.Error(), Err: err})
	}
	return true
}

// document decodes data as exactly one YAML document and returns its root
// node.
func (p *parser) document(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	err := decodeNode(dec, &doc)
	if errors.Is(err, io.EOF) {
		return nil, &Error{File: p.file, Msg: "empty workflow"}
	}
	if err != nil {
		return nil, p.yamlError(data, err)
	}
	var next yaml.Node
	switch err := decodeNode(dec, &next); {
	case err == nil:
		return nil, &Error{File: p.file, Line: lineOf(&next),
			Msg: fmt.Sprintf("several YAML documents (a second starts at line %d): a workflow file holds exactly one", next.Line)}
	case !errors.Is(err, io.EOF):
		return nil, p.yamlError(data, err)
	}
	var root *yaml.Node
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root = resolve(doc.Content[0])
	}
	if isNull(root) {
		return nil, &Error{File: p.file, Line: lineOf(&doc), Msg: "empty workflow"}
	}
	return root, nil
}

// decodeNode decodes the next document, turning a panic inside the YAML
// library into an error so that Parse never panics.
func decodeNode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: internal error: %v", r)
		}
	}()
	return dec.Decode(n)
}

func (p *parser) yamlError(data []byte, err error) error {
	e := &Error{File: p.file, Msg: err.Error(), Err: err}
	explainSyntax(e, data)
	return e
}

// entries returns the pairs of the mapping n in file order. It rejects keys
// that are not scalars, merge keys and duplicate keys (which yaml.v3 only
// catches when decoding into Go values, not into a yaml.Node).
func (p *parser) entries(n *yaml.Node, path string) ([]entry, error) {
	if len(n.Content)%2 != 0 {
		return nil, p.fail(n, path, "malformed mapping")
	}
	out := make([]entry, 0, len(n.Content)/2)
	firstLine := make(map[string]int, len(n.Content)/2)
	for i := 0; i < len(n.Content); i += 2 {
		k := resolve(n.Content[i])
		if isNull(k) || k.Kind != yaml.ScalarNode {
			return nil, p.fail(n.Content[i], path, "keys must be strings, got %s", describe(k))
		}
		kp := joinPath(path, k.Value)
		if k.ShortTag() == tagMerge {
			return nil, p.fail(k, kp, "merge keys are not supported")
		}
		if line, dup := firstLine[k.Value]; dup {
			return nil, p.fail(k, kp, "duplicate key (first defined at line %d)", line)
		}
		firstLine[k.Value] = k.Line
		out = append(out, entry{key: k.Value, path: kp, keyN: k, val: resolve(n.Content[i+1])})
	}
	return out, nil
}

// mapping returns the entries of n, which must be a mapping or null (no
// entries). what describes the expected mapping in the type error.
func (p *parser) mapping(n *yaml.Node, path, what string) ([]entry, error) {
	if isNull(n) {
		return nil, nil
	}
	if n.Kind == yaml.SequenceNode {
		return nil, p.fail(n, path, "expected %s, got a list (a '- ' starts a list item: write 'key: value' lines here, without the dash)", what)
	}
	if n.Kind != yaml.MappingNode {
		return nil, p.fail(n, path, "expected %s, got %s", what, describe(n))
	}
	return p.entries(n, path)
}

// unknownKey is the error for a key the parser does not handle at level lv.
func (p *parser) unknownKey(e entry, lv level) error {
	if notSupportedYet[e.key] == lv {
		return p.fail(e.keyN, e.path, "not supported yet in this version")
	}
	return p.fail(e.keyN, e.path, "unknown key")
}

// workflow decodes the top-level mapping.
func (p *parser) workflow(root *yaml.Node) (*Spec, error) {
	if root.Kind != yaml.MappingNode {
		return nil, p.fail(root, "", "expected a mapping with name and tasks at the top level, got %s", describe(root))
	}
	entries, err := p.entries(root, "")
	if err != nil {
		return nil, err
	}
	spec := &Spec{Dir: p.dir}
	var tasks []parsedTask
	badName, badTasks := false, false
	for _, e := range entries {
		switch e.key {
		case "name":
			spec.Name, err = p.name(e.val, e.path)
		case "description":
			spec.Description, err = p.str(e.val, e.path)
		case "params":
			spec.Params, err = p.params(e.val, e.path)
		case "tasks":
			tasks, err = p.tasks(e.val, e.path)
		default:
			var known bool
			if known, err = p.workflowKey(spec, e); !known {
				err = p.unknownKey(e, levelWorkflow)
			}
		}
		if p.keep(err) {
			badName = badName || e.key == "name"
			badTasks = badTasks || e.key == "tasks"
		}
	}
	if spec.Name == "" && !badName {
		p.keep(p.fail(nil, "name", "required"))
	}
	if tasks == nil && !badTasks {
		p.keep(p.fail(nil, "tasks", "required"))
	}
	if err := errorsOf(p.file, p.errs); err != nil {
		return nil, err
	}
	spec.Tasks, err = p.order(tasks)
	if err != nil {
		return nil, err
	}
	p.resolveCheckTypes(tasks)
	if err := p.checkSemantics(spec, tasks); err != nil {
		return nil, err
	}
	if err := p.checkSchedule(spec, root); err != nil {
		return nil, err
	}
	return spec, nil
}

// params decodes the params mapping: parameter name to default value.
func (p *parser) params(n *yaml.Node, path string) (map[string]string, error) {
	entries, err := p.mapping(n, path, "a mapping of parameter names to default values")
	if err != nil || len(entries) == 0 {
		return nil, err
	}
	out := make(map[string]string, len(entries))
	for _, e := range entries {
		if !validName(e.key) {
			return nil, p.fail(e.keyN, e.path, "invalid parameter name: %s", nameRule)
		}
		if isNull(e.val) {
			out[e.key] = ""
			continue
		}
		v, err := p.text(e.val, e.path)
		if err != nil {
			return nil, err
		}
		out[e.key] = v
	}
	return out, nil
}

// parsedTask is a task with the YAML nodes later checks point at.
type parsedTask struct {
	task       *Task
	node       *yaml.Node            // the task's mapping (or its key when the value is null)
	dependsOn  *yaml.Node            // the depends_on value, nil when absent
	nodes      map[string]*yaml.Node // values of the semantics keys, for later checks
	checkTypes *bool                 // the task's check_types, nil when absent
}

// tasks decodes the tasks mapping, in file order.
func (p *parser) tasks(n *yaml.Node, path string) ([]parsedTask, error) {
	if isNull(n) {
		return nil, nil
	}
	entries, err := p.mapping(n, path, "a mapping of task names to tasks")
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, p.fail(n, path, "must define at least one task")
	}
	if len(entries) > MaxTasks {
		return nil, p.fail(n, path, "%d tasks, above the limit of %d", len(entries), MaxTasks)
	}
	out := make([]parsedTask, 0, len(entries))
	bad := false
	for _, e := range entries {
		if !validName(e.key) {
			bad = p.keep(p.fail(e.keyN, e.path, "invalid task name: %s", nameRule))
			continue
		}
		t, err := p.task(e)
		if p.keep(err) {
			bad = true
			continue
		}
		out = append(out, t)
	}
	if bad {
		return nil, errKept
	}
	return out, nil
}

// task decodes one task. A null task (`extract:`) is an empty mapping.
func (p *parser) task(te entry) (parsedTask, error) {
	pt := parsedTask{task: &Task{Name: te.key}, node: te.val}
	if isNull(te.val) {
		pt.node = te.keyN
	}
	entries, err := p.mapping(te.val, te.path, "a mapping of task keys")
	if err != nil {
		return pt, err
	}
	t := pt.task
	bad := false
	for _, e := range entries {
		switch e.key {
		case "executor":
			t.Executor, err = p.executor(e.val, e.path)
		case "command":
			t.Command, err = p.command(e.val, e.path)
		case "env":
			t.Env, err = p.env(e.val, e.path)
		case "workdir":
			t.Workdir, err = p.workdir(e.val, e.path)
		case "depends_on":
			t.DependsOn, err = p.dependsOn(e.val, e.path)
			pt.dependsOn = e.val
		default:
			var known bool
			if known, err = p.taskKey(&pt, e); !known {
				err = p.unknownKey(e, levelTask)
			}
		}
		bad = p.keep(err) || bad
	}
	if bad {
		return pt, errKept
	}
	if t.Executor == "" {
		t.Executor = executors[0]
	}
	return pt, p.checkCommand(pt, te.path)
}

// checkCommand enforces that a process task has a command and a noop task
// has none.
func (p *parser) checkCommand(pt parsedTask, path string) error {
	t := pt.task
	switch {
	case t.Executor == "process" && len(t.Command) == 0 && t.File == "":
		return p.fail(pt.node, joinPath(path, "command"), "required for executor process (or Ork's file: the program to run)")
	case (t.Executor == "noop" || t.Executor == "http" || t.Executor == "library" || t.Executor == "cloudrun") && len(t.Command) != 0:
		return p.fail(pt.node, joinPath(path, "command"), "not allowed for executor %s", t.Executor)
	}
	return nil
}

// executor decodes the executor name; null leaves the default.
func (p *parser) executor(n *yaml.Node, path string) (string, error) {
	s, err := p.str(n, path)
	if err != nil || isNull(n) {
		return "", err
	}
	if target, ok := executorAliases[s]; ok {
		s = target
	}
	for _, x := range executors {
		if s == x {
			return s, nil
		}
	}
	allowed := strings.Join(executors, ", ")
	if executorsNotSupportedYet[s] {
		return "", p.fail(n, path, "executor %q is not supported yet in this version (allowed: %s)", s, allowed)
	}
	return "", p.fail(n, path, "unknown executor %q (allowed: %s)", s, allowed)
}

// command decodes an argv list, or a string run by `sh -c`.
func (p *parser) command(n *yaml.Node, path string) ([]string, error) {
	switch {
	case isNull(n):
		return nil, nil
	case n.Kind == yaml.ScalarNode && n.ShortTag() == tagStr:
		if strings.TrimSpace(n.Value) == "" {
			return nil, p.fail(n, path, "must not be blank")
		}
		if err := p.noNUL(n, path, n.Value); err != nil {
			return nil, err
		}
		return []string{"sh", "-c", n.Value}, nil
	case n.Kind == yaml.SequenceNode:
		return p.argv(n, path)
	}
	return nil, p.fail(n, path, "expected a list of strings or a string, got %s", describe(n))
}

// argv decodes a command list.
func (p *parser) argv(n *yaml.Node, path string) ([]string, error) {
	if len(n.Content) == 0 {
		return nil, p.fail(n, path, "must not be empty")
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		ip := indexPath(path, i)
		s, err := p.text(resolve(item), ip)
		if err != nil {
			return nil, err
		}
		if err := p.noNUL(item, ip, s); err != nil {
			return nil, err
		}
		if i == 0 && strings.TrimSpace(s) == "" {
			return nil, p.fail(item, ip, "program must not be blank")
		}
		out = append(out, s)
	}
	return out, nil
}

// env decodes environment variables: name to value.
func (p *parser) env(n *yaml.Node, path string) (map[string]string, error) {
	entries, err := p.mapping(n, path, "a mapping of variable names to values")
	if err != nil || len(entries) == 0 {
		return nil, err
	}
	out := make(map[string]string, len(entries))
	for _, e := range entries {
		if !validEnvName(e.key) {
			return nil, p.fail(e.keyN, e.path, "invalid variable name: use letters, digits and '_', not starting with a digit")
		}
		v := ""
		if !isNull(e.val) {
			if v, err = p.text(e.val, e.path); err != nil {
				return nil, err
			}
		}
		if err := p.noNUL(e.val, e.path, v); err != nil {
			return nil, err
		}
		out[e.key] = v
	}
	return out, nil
}

// workdir decodes the working folder, made absolute against the workflow's
// folder when there is one.
func (p *parser) workdir(n *yaml.Node, path string) (string, error) {
	s, err := p.str(n, path)
	if err != nil || s == "" {
		return "", err
	}
	if err := p.noNUL(n, path, s); err != nil {
		return "", err
	}
	if p.dir == "" {
		return s, nil
	}
	if filepath.IsAbs(s) {
		return filepath.Clean(s), nil
	}
	return filepath.Join(p.dir, s), nil
}

// dependsOn decodes a list of task names, or a single name.
func (p *parser) dependsOn(n *yaml.Node, path string) ([]string, error) {
	switch {
	case isNull(n):
		return nil, nil
	case n.Kind == yaml.SequenceNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		out := make([]string, 0, len(n.Content))
		for i, item := range n.Content {
			s, err := p.text(resolve(item), indexPath(path, i))
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	case isText(n):
		return []string{n.Value}, nil
	}
	return nil, p.fail(n, path, "expected a list of task names or a task name, got %s", describe(n))
}

// name decodes a workflow name; null leaves it empty (and so "required").
func (p *parser) name(n *yaml.Node, path string) (string, error) {
	if isNull(n) {
		return "", nil
	}
	s, err := p.text(n, path)
	if err != nil {
		return "", err
	}
	if s != "" && !validName(s) {
		return "", p.fail(n, path, "invalid name %q: %s", s, nameRule)
	}
	return s, nil
}

// str decodes a value that must be a YAML string; null gives "".
func (p *parser) str(n *yaml.Node, path string) (string, error) {
	if isNull(n) {
		return "", nil
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != tagStr {
		return "", p.fail(n, path, "expected a string, got %s", describe(n))
	}
	return n.Value, nil
}

// text decodes a scalar that stands for a string: strings as they are,
// numbers, booleans and timestamps as their YAML text.
func (p *parser) text(n *yaml.Node, path string) (string, error) {
	if !isText(n) {
		return "", p.fail(n, path, "expected a string, got %s", describe(n))
	}
	return n.Value, nil
}

// noNUL rejects strings that cannot be passed to a process.
func (p *parser) noNUL(n *yaml.Node, path, s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return p.fail(n, path, "must not contain a NUL character")
	}
	return nil
}

package workflow

import (
	"encoding/json"

	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// maxInstances caps a static fan-out.
const maxInstances = 100_000

// taskKey decodes one of the task keys of the semantics (retries, fan-out,
// gates). It reports false for a key it does not know.
func (p *parser) taskKey(pt *parsedTask, e entry) (bool, error) {
	t := pt.task
	var err error
	switch e.key {
	case "retries":
		t.Retries, err = p.intIn(e.val, e.path, 0, 1000)
	case "retry_backoff":
		t.RetryBackoff, err = p.backoff(e.val, e.path)
	case "timeout":
		t.Timeout, err = p.duration(e.val, e.path)
	case "heartbeat_timeout":
		t.HeartbeatTimeout, err = p.duration(e.val, e.path)
	case "start_timeout":
		t.StartTimeout, err = p.duration(e.val, e.path)
	case "on_failure":
		t.OnFailure, err = p.choice(e.val, e.path, map[string]string{"run": "run", "skip": ""})
	case "on_interrupt":
		t.OnInterrupt, err = p.choice(e.val, e.path, map[string]string{"fail": "fail", "rerun": ""})
	case "inputs":
		t.Inputs, err = p.inputs(e.val, e.path)
	case "parallel":
		err = p.parallel(t, e.val, e.path)
	case "foreach":
		t.Foreach, err = p.source(e.val, e.path)
	case "concurrency":
		t.Concurrency, err = p.intIn(e.val, e.path, 1, maxInstances)
	case "mutex":
		t.Mutex, err = p.str(e.val, e.path)
	case "priority":
		t.Priority, err = p.intIn(e.val, e.path, -1_000_000, 1_000_000)
	case "delay":
		t.Delay, err = p.duration(e.val, e.path)
	case "check_types":
		pt.checkTypes, err = p.checkTypesKey(e)
	default:
		return p.executorKey(pt, e)
	}
	if pt.nodes == nil {
		pt.nodes = map[string]*yaml.Node{}
	}
	pt.nodes[e.key] = e.val
	return true, err
}

// intIn decodes an integer in [lo, hi].
func (p *parser) intIn(n *yaml.Node, path string, lo, hi int) (int, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return 0, p.fail(n, path, "expected an integer, got %s", describe(n))
	}
	v, err := strconv.ParseInt(n.Value, 0, 64)
	if err != nil || v < int64(lo) || v > int64(hi) {
		return 0, p.fail(n, path, "must be an integer from %d to %d, got %s", lo, hi, n.Value)
	}
	return int(v), nil
}

// duration decodes a positive duration: a Go duration string ("30s",
// "1h30m") or a number of seconds (Ork's form).
func (p *parser) duration(n *yaml.Node, path string) (time.Duration, error) {
	if n.Kind == yaml.ScalarNode && (n.ShortTag() == "!!int" || n.ShortTag() == "!!float") {
		secs, err := strconv.ParseFloat(n.Value, 64)
		if err != nil || secs <= 0 || secs > math.MaxInt64/float64(time.Second) {
			return 0, p.fail(n, path, "must be a positive number of seconds, got %s", n.Value)
		}
		return time.Duration(secs * float64(time.Second)), nil
	}
	s, err := p.str(n, path)
	if err != nil {
		return 0, err
	}
	d, perr := time.ParseDuration(s)
	if perr != nil || d <= 0 {
		return 0, p.fail(n, path, "must be a positive duration such as 30s or 5m, got %q", s)
	}
	return d, nil
}

func (p *parser) choice(n *yaml.Node, path string, allowed map[string]string) (string, error) {
	s, err := p.str(n, path)
	if err != nil {
		return "", err
	}
	if v, ok := allowed[s]; ok {
		return v, nil
	}
	names := make([]string, 0, len(allowed))
	for k := range allowed {
		names = append(names, k)
	}
	sortStrings(names)
	return "", p.fail(n, path, "must be one of %s, got %q", strings.Join(names, ", "), s)
}

func (p *parser) backoff(n *yaml.Node, path string) (*Backoff, error) {
	entries, err := p.mapping(n, path, "a mapping with initial, max and factor")
	if err != nil {
		return nil, err
	}
	b := DefaultBackoff
	for _, e := range entries {
		switch e.key {
		case "initial":
			b.Initial, err = p.duration(e.val, e.path)
		case "max":
			b.Max, err = p.duration(e.val, e.path)
		case "factor":
			b.Factor, err = p.factor(e.val, e.path)
		default:
			err = p.fail(e.keyN, e.path, "unknown key (retry_backoff has initial, max, factor)")
		}
		if err != nil {
			return nil, err
		}
	}
	if b.Max < b.Initial {
		return nil, p.fail(n, path, "max (%s) is less than initial (%s)", b.Max, b.Initial)
	}
	return &b, nil
}

func (p *parser) factor(n *yaml.Node, path string) (float64, error) {
	f, err := strconv.ParseFloat(n.Value, 64)
	if n.Kind != yaml.ScalarNode || err != nil || !(f >= 1 && f <= 100) { // NaN is neither
		got := describe(n)
		if err == nil {
			got = n.Value // a number: which one ("a number" is what was asked for)
		}
		return 0, p.fail(n, path, "must be a number from 1 to 100, got %s", got)
	}
	return f, nil
}

// parallel decodes `parallel: 4` or `parallel: task.field`.
func (p *parser) parallel(t *Task, n *yaml.Node, path string) error {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int" {
		var err error
		t.Parallel, err = p.intIn(n, path, 1, maxInstances)
		return err
	}
	var err error
	t.ParallelFrom, err = p.source(n, path)
	return err
}

var sourceRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*\.[A-Za-z_][A-Za-z0-9_]*$`)

// source decodes "task.field": a field of an upstream task's output.
func (p *parser) source(n *yaml.Node, path string) (string, error) {
	s, err := p.str(n, path)
	if err != nil {
		return "", err
	}
	if !sourceRe.MatchString(s) {
		return "", p.fail(n, path, "expected <task>.<field> (a field of an upstream task's output), got %q", s)
	}
	return s, nil
}

// inputs decodes name → {const: value} | {ref: tasks.<name>.output[.field]}.
func (p *parser) inputs(n *yaml.Node, path string) (map[string]Input, error) {
	entries, err := p.mapping(n, path, "a mapping of input names to {const: ...} or {ref: ...}")
	if err != nil || len(entries) == 0 {
		return nil, err
	}
	out := make(map[string]Input, len(entries))
	for _, e := range entries {
		if !validEnvName(e.key) {
			return nil, p.fail(e.keyN, e.path, "invalid input name (use [A-Za-z_][A-Za-z0-9_]*)")
		}
		in, err := p.input(e.val, e.path)
		if err != nil {
			return nil, err
		}
		out[e.key] = in
	}
	return out, nil
}

var refRe = regexp.MustCompile(`^tasks\.[A-Za-z0-9][A-Za-z0-9_-]*\.output(\.[A-Za-z0-9_-]+)*$`)

func (p *parser) input(n *yaml.Node, path string) (Input, error) {
	entries, err := p.mapping(n, path, "{const: value} or {ref: tasks.<name>.output}")
	if err != nil {
		return Input{}, err
	}
	if len(entries) != 1 || (entries[0].key != "const" && entries[0].key != "ref") {
		return Input{}, p.fail(n, path, "expected exactly one of const or ref")
	}
	e := entries[0]
	if e.key == "ref" {
		s, err := p.str(e.val, e.path)
		if err == nil && !refRe.MatchString(s) {
			err = p.fail(e.val, e.path, "expected tasks.<name>.output or a field below it, got %q", s)
		}
		return Input{Ref: s}, err
	}
	var v any
	if err := e.val.Decode(&v); err != nil {
		return Input{}, p.fail(e.val, e.path, "%v", err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return Input{}, p.fail(e.val, e.path, "cannot be given as JSON: %v", err)
	}
	return Input{Const: b}, nil
}

// checkSemantics runs the checks that need the whole file: references to
// other tasks and to parameters.
func (p *parser) checkSemantics(spec *Spec, tasks []parsedTask) error {
	for _, pt := range tasks {
		if err := p.checkTask(spec, pt); err != nil {
			return err
		}
	}
	return p.checkTypes(spec, tasks)
}

func (p *parser) checkTask(spec *Spec, pt parsedTask) error {
	t := pt.task
	path := joinPath("tasks", t.Name)
	deps := map[string]bool{}
	for _, d := range t.DependsOn {
		deps[d] = true
	}
	if t.Parallel > 0 && t.Foreach != "" || t.ParallelFrom != "" && t.Foreach != "" {
		return p.fail(pt.nodes["foreach"], joinPath(path, "foreach"), "cannot be combined with parallel")
	}
	if t.Concurrency > 0 && !t.FansOut() {
		return p.fail(pt.nodes["concurrency"], joinPath(path, "concurrency"), "only applies with parallel or foreach")
	}
	if src, _ := t.FanOutSource(); src != "" && !deps[src] {
		key := "foreach"
		if t.ParallelFrom != "" {
			key = "parallel"
		}
		return p.fail(pt.nodes[key], joinPath(path, key), "task %q must be listed in depends_on", src)
	}
	for _, name := range sortedKeys(t.Inputs) {
		if up, _ := t.Inputs[name].RefTask(); up != "" && !deps[up] {
			return p.fail(pt.nodes["inputs"], joinPath(joinPath(path, "inputs"), name),
				"refers to task %q, which is not in depends_on", up)
		}
	}
	if err := p.checkMutex(spec, pt, joinPath(path, "mutex")); err != nil {
		return err
	}
	if err := p.checkExecutor(pt, path); err != nil {
		return err
	}
	if err := p.checkCommandTemplates(spec, pt, path); err != nil {
		return err
	}
	return p.checkTemplates(spec, pt, path)
}

// placeholderRe matches a {{ REF }} placeholder; group 1 is REF, trimmed.
var placeholderRe = regexp.MustCompile(`\{\{\s*([^}]*?)\s*\}\}`)

// checkMutex allows {{params.NAME}} placeholders naming declared params.
func (p *parser) checkMutex(spec *Spec, pt parsedTask, path string) error {
	for _, m := range placeholderRe.FindAllStringSubmatch(pt.task.Mutex, -1) {
		name, ok := strings.CutPrefix(m[1], "params.")
		if _, declared := spec.Params[name]; !ok || !declared {
			return p.fail(pt.nodes["mutex"], path, "placeholder {{%s}}: only {{params.NAME}} of a declared param is allowed", m[1])
		}
	}
	return nil
}

// RenderMutex fills the {{params.NAME}} placeholders of a mutex template
// (a mutex key has no other kind of reference).
func RenderMutex(template string, params map[string]string) string {
	return placeholderRe.ReplaceAllStringFunc(template, func(m string) string {
		name, _ := strings.CutPrefix(strings.TrimSpace(m[2:len(m)-2]), "params.")
		return params[name]
	})
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortStrings(keys)
	return keys
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// workflowKey decodes workflow-level keys of the semantics.
func (p *parser) workflowKey(spec *Spec, e entry) (bool, error) {
	var err error
	switch e.key {
	case "max_active_runs":
		spec.MaxActiveRuns, err = p.intIn(e.val, e.path, 1, 1_000_000)
	case "python":
		spec.Python, err = p.str(e.val, e.path)
	case "types":
		spec.Types, err = p.types(e.val, e.path)
	case "alerts":
		spec.Alerts, err = p.alerts(e.val, e.path)
	case "sla":
		spec.SLA, err = p.duration(e.val, e.path)
	case "check_types":
		p.wfCheckTypes, err = p.checkTypesKey(e)
	default:
		return p.scheduleKey(spec, e)
	}
	return true, err
}

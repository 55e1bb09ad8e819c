package executors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Type descriptions of Python tasks (PythonJob.InputType, OutputType and
// Types) are the workflow's YAML values converted to JSON, unchanged. A type
// expression is one of:
//
//   - a string naming a type:
//     "str", "int", "float" (an int is accepted), "bool", "any",
//     "date" (ISO 8601 "2024-01-15"),
//     "datetime" (ISO 8601 with a time zone, "2024-01-15T10:00:00+02:00" or
//     "...Z"; "datetime_tz" is Ork's name for it),
//     "datetime_utc" (with a zero offset, "Z" or "+00:00"),
//     "datetime_notz" (ISO 8601 without a time zone),
//     "list" (any array), "dict" (any object),
//     "list[T]" (an array of T), "optional[T]" or "T?" (T or null/None),
//     "types.Name" or "Name" (a named type of PythonJob.Types);
//   - an object {"field": <type expression>, ...}: a JSON object having
//     those fields (a field whose type is optional may be absent; fields not
//     listed are allowed);
//   - an array of exactly one type expression, [T]: Ork's form of list[T].
//
// Named types (the workflow's top-level `types:`) map a name to a type
// expression, usually an object. A name may not be a builtin's, and named
// types may not refer to themselves, directly or not.
//
// InputType, when set, must be an object (or name one): it declares the
// function's keyword arguments, and an input it does not declare is an
// error. OutputType may be any type expression. Example (YAML, as the
// workflow has it):
//
//	types:
//	  Row: {a: int, when: datetime}
//	tasks:
//	  load:
//	    input_type: {count: int, tags: "list[str]", row: types.Row, note: "str?"}
//	    output_type: {rows: [types.Row], total: int}

// typeNode is a compiled type expression, in the form the runner reads
// (runner.py's check function). Name is how messages show it.
type typeNode struct {
	Kind   string               `json:"kind"`
	Name   string               `json:"name"`
	Of     *typeNode            `json:"of,omitempty"`     // optional, list
	Fields map[string]*typeNode `json:"fields,omitempty"` // object
	Ref    string               `json:"ref,omitempty"`    // named
}

// compiledTypes is what the runner gets: the checks to apply, nil = none.
type compiledTypes struct {
	Input  *typeNode            `json:"input"`
	Output *typeNode            `json:"output"`
	Types  map[string]*typeNode `json:"types"`
}

// builtinTypes maps each builtin name to its kind.
var builtinTypes = map[string]string{
	"str": "str", "int": "int", "float": "float", "bool": "bool", "any": "any",
	"date": "date", "datetime": "datetime", "datetime_tz": "datetime",
	"datetime_utc": "datetime_utc", "datetime_notz": "datetime_notz",
	"list": "list", "dict": "dict",
}

// ValidatePythonTypes checks the type descriptions of p (see the grammar
// above) as the python executor will at Start, so that a workflow parser can
// reject a bad one early. Errors name the offending expression.
func ValidatePythonTypes(p *PythonJob) error {
	_, err := compilePythonTypes(p)
	return err
}

// compilePythonTypes compiles p's type descriptions for the runner.
func compilePythonTypes(p *PythonJob) (compiledTypes, error) {
	c := typeCompiler{raw: p.Types}
	out := compiledTypes{Types: map[string]*typeNode{}}
	for _, name := range sortedKeys(p.Types) {
		node, err := c.named(name)
		if err != nil {
			return compiledTypes{}, err
		}
		out.Types[name] = node
	}
	var err error
	if out.Input, err = c.top(p.InputType); err != nil {
		return compiledTypes{}, fmt.Errorf("input_type: %w", err)
	}
	if out.Input != nil && c.resolve(out.Input).Kind != "object" {
		return compiledTypes{}, fmt.Errorf("input_type: %s is not an object of named arguments", out.Input.Name)
	}
	if out.Output, err = c.top(p.OutputType); err != nil {
		return compiledTypes{}, fmt.Errorf("output_type: %w", err)
	}
	return out, nil
}

// typeCompiler compiles expressions against the named types in raw,
// compiling each named type once and refusing cycles.
type typeCompiler struct {
	raw      map[string]json.RawMessage
	done     map[string]*typeNode
	visiting []string // named types being compiled, outermost first
}

// top compiles an optional top-level expression: empty or null is nil.
func (c *typeCompiler) top(raw json.RawMessage) (*typeNode, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	return c.expr(raw)
}

// named compiles the named type name.
func (c *typeCompiler) named(name string) (*typeNode, error) {
	if node, ok := c.done[name]; ok {
		return node, nil
	}
	if _, ok := builtinTypes[name]; ok {
		return nil, fmt.Errorf("type %q: a builtin's name", name)
	}
	if i := indexOf(c.visiting, name); i >= 0 {
		cycle := append(append([]string{}, c.visiting[i:]...), name)
		return nil, fmt.Errorf("type %q refers to itself (%s)", name, strings.Join(cycle, " -> "))
	}
	c.visiting = append(c.visiting, name)
	defer func() { c.visiting = c.visiting[:len(c.visiting)-1] }()
	node, err := c.expr(c.raw[name])
	if err != nil {
		return nil, fmt.Errorf("type %q: %w", name, err)
	}
	if c.done == nil {
		c.done = map[string]*typeNode{}
	}
	c.done[name] = node
	return node, nil
}

// expr compiles one JSON type expression.
func (c *typeCompiler) expr(raw json.RawMessage) (*typeNode, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("not a JSON type expression: %w", err)
	}
	switch v := v.(type) {
	case string:
		return c.str(v)
	case map[string]any:
		return c.object(raw)
	case []any:
		if len(v) != 1 {
			return nil, fmt.Errorf("a list type has exactly one element type, not %d", len(v))
		}
		var elems []json.RawMessage
		_ = json.Unmarshal(raw, &elems) // it decoded as an array above
		return c.listOf(elems[0])
	default:
		return nil, fmt.Errorf("%s is not a type expression (a name, an object or [type])", bytes.TrimSpace(raw))
	}
}

// object compiles {"field": expr, ...}.
func (c *typeCompiler) object(raw json.RawMessage) (*typeNode, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("object type: %w", err)
	}
	node := &typeNode{Kind: "object", Name: "object", Fields: make(map[string]*typeNode, len(fields))}
	for _, name := range sortedKeys(fields) {
		f, err := c.expr(fields[name])
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", name, err)
		}
		node.Fields[name] = f
	}
	return node, nil
}

// listOf compiles Ork's [T].
func (c *typeCompiler) listOf(elem json.RawMessage) (*typeNode, error) {
	of, err := c.expr(elem)
	if err != nil {
		return nil, err
	}
	return &typeNode{Kind: "list", Name: "list[" + of.Name + "]", Of: of}, nil
}

// str compiles a type written as a string.
func (c *typeCompiler) str(s string) (*typeNode, error) {
	s = strings.TrimSpace(s)
	if inner, ok := strings.CutSuffix(s, "?"); ok {
		return c.wrap("optional", s, inner)
	}
	if inner, ok := cutBrackets(s, "optional"); ok {
		return c.wrap("optional", s, inner)
	}
	if inner, ok := cutBrackets(s, "list"); ok {
		return c.wrap("list", s, inner)
	}
	if kind, ok := builtinTypes[s]; ok {
		return &typeNode{Kind: kind, Name: s}, nil
	}
	name := strings.TrimPrefix(s, "types.")
	if _, ok := c.raw[name]; !ok || name == "" {
		return nil, fmt.Errorf("unknown type %q", s)
	}
	if _, err := c.named(name); err != nil {
		return nil, err
	}
	return &typeNode{Kind: "named", Name: name, Ref: name}, nil
}

// wrap compiles inner and wraps it in a node of kind (optional or list).
func (c *typeCompiler) wrap(kind, name, inner string) (*typeNode, error) {
	of, err := c.str(inner)
	if err != nil {
		return nil, err
	}
	return &typeNode{Kind: kind, Name: name, Of: of}, nil
}

// resolve follows named references to the type they stand for.
func (c *typeCompiler) resolve(node *typeNode) *typeNode {
	for node.Kind == "named" {
		node = c.done[node.Ref]
	}
	return node
}

// cutBrackets returns X from "prefix[X]".
func cutBrackets(s, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(s, prefix+"[")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "]")
}

// indexOf returns the index of s in list, or -1.
func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// sortedKeys returns the keys of m in order (deterministic errors, and
// the order of a task's own env layer).
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

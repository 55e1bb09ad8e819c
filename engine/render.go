package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/orkwal/orkwal/replay/workflow"
)

// render fills a template at dispatch (see workflow.Expand):
// {{params.NAME}}, {{inputs.NAME}} (a JSON string input gives its text, any
// other value its JSON) and ${env:NAME} from the daemon's environment, in
// one pass, so a param or an input holding "${env:...}" is not expanded.
// The result is handed to the executor and never recorded, so secrets read
// from the environment stay out of the WAL. The parser has checked the
// references' names.
func render(tmpl string, in *taskInput) (string, error) {
	env, err := envReader()
	out := workflow.Expand(tmpl, in.placeholder, env)
	return out, *err
}

// renderURL is render for a URL: a param or an input is escaped for where
// it lands (workflow.ExpandURL), so it cannot change the URL's host, path
// or query structure.
func renderURL(tmpl string, in *taskInput) (string, error) {
	env, err := envReader()
	out := workflow.ExpandURL(tmpl, in.placeholder, env)
	return out, *err
}

// placeholder is the value of a {{ REF }}: a param, or an input's text.
func (in *taskInput) placeholder(ref string) string {
	if name, ok := strings.CutPrefix(ref, "params."); ok {
		return in.Params[name]
	}
	name, _ := strings.CutPrefix(ref, "inputs.")
	return inputText(in.Inputs[name])
}

// envReader reads ${env:NAME} from the daemon's environment; err is the
// first variable that is not set.
func envReader() (env func(string) string, err *error) {
	err = new(error)
	return func(name string) string {
		v, ok := os.LookupEnv(name)
		if !ok && *err == nil {
			*err = fmt.Errorf("${env:%s}: %s is not set in the daemon's environment", name, name)
		}
		return v
	}, err
}

func inputText(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}

// renderMap renders every value of a map.
func renderMap(m map[string]string, in *taskInput) (map[string]string, error) {
	if len(m) == 0 {
		return m, nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		r, err := render(v, in)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = r
	}
	return out, nil
}

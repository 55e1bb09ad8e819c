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
	var err error
	out := workflow.Expand(tmpl, func(ref string) string {
		if name, ok := strings.CutPrefix(ref, "params."); ok {
			return in.Params[name]
		}
		name, _ := strings.CutPrefix(ref, "inputs.")
		return inputText(in.Inputs[name])
	}, func(name string) string {
		v, ok := os.LookupEnv(name)
		if !ok && err == nil {
			err = fmt.Errorf("${env:%s}: %s is not set in the daemon's environment", name, name)
		}
		return v
	})
	return out, err
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

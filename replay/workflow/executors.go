package workflow

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// executorKey decodes the keys of the python and http executors.
func (p *parser) executorKey(pt *parsedTask, e entry) (bool, error) {
	t := pt.task
	var err error
	switch e.key {
	case "file":
		t.File, err = p.str(e.val, e.path)
	case "module":
		t.Module, err = p.str(e.val, e.path)
	case "function":
		t.Function, err = p.str(e.val, e.path)
	case "python":
		t.Python, err = p.str(e.val, e.path)
	case "input_type":
		t.InputType, err = p.asJSON(e.val, e.path)
	case "output_type":
		t.OutputType, err = p.asJSON(e.val, e.path)
	case "method", "url", "headers", "body", "request_timeout", "async":
		if t.HTTP == nil {
			t.HTTP = &HTTPSpec{}
		}
		err = p.httpKey(t.HTTP, e)
	case "job", "project", "region":
		if t.CloudRun == nil {
			t.CloudRun = &CloudRunSpec{}
		}
		err = p.cloudRunKey(t.CloudRun, e)
	default:
		return false, nil
	}
	if pt.nodes == nil {
		pt.nodes = map[string]*yaml.Node{}
	}
	pt.nodes[e.key] = e.val
	return true, err
}

// asJSON converts a YAML value to JSON as it is (type descriptions).
func (p *parser) asJSON(n *yaml.Node, path string) ([]byte, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, p.fail(n, path, "%v", err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, p.fail(n, path, "cannot be written as JSON: %v", err)
	}
	return b, nil
}

func (p *parser) httpKey(h *HTTPSpec, e entry) error {
	var err error
	switch e.key {
	case "method":
		h.Method, err = p.str(e.val, e.path)
		h.Method = strings.ToUpper(h.Method)
	case "url":
		h.URL, err = p.str(e.val, e.path)
	case "headers":
		h.Headers, err = p.stringMap(e.val, e.path)
	case "body":
		h.Body, err = p.str(e.val, e.path)
	case "request_timeout":
		h.RequestTimeout, err = p.duration(e.val, e.path)
	case "async":
		h.Async, err = p.async(e.val, e.path)
	}
	return err
}

func (p *parser) stringMap(n *yaml.Node, path string) (map[string]string, error) {
	entries, err := p.mapping(n, path, "a mapping of names to strings")
	if err != nil || len(entries) == 0 {
		return nil, err
	}
	out := make(map[string]string, len(entries))
	for _, e := range entries {
		if out[e.key], err = p.text(e.val, e.path); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (p *parser) async(n *yaml.Node, path string) (*HTTPAsyncSpec, error) {
	entries, err := p.mapping(n, path, "a mapping (status_url or status_url_field, status_field, success, ...)")
	if err != nil {
		return nil, err
	}
	a := &HTTPAsyncSpec{}
	for _, e := range entries {
		switch e.key {
		case "status_url":
			a.StatusURL, err = p.str(e.val, e.path)
		case "id_field":
			a.IDField, err = p.str(e.val, e.path)
		case "status_url_field":
			a.StatusURLField, err = p.str(e.val, e.path)
		case "status_field":
			a.StatusField, err = p.str(e.val, e.path)
		case "success":
			a.Success, err = p.dependsOn(e.val, e.path) // a list of strings, or one
		case "failure":
			a.Failure, err = p.dependsOn(e.val, e.path)
		case "poll_interval":
			a.PollInterval, err = p.duration(e.val, e.path)
		case "poll_timeout":
			a.PollTimeout, err = p.duration(e.val, e.path)
		default:
			err = p.fail(e.keyN, e.path, "unknown key")
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case a.StatusField == "" || len(a.Success) == 0:
		return nil, p.fail(n, path, "status_field and success are required")
	case (a.IDField == "") == (a.StatusURLField == ""):
		return nil, p.fail(n, path, "exactly one of id_field (with status_url) and status_url_field is required")
	case a.IDField != "" && !strings.Contains(a.StatusURL, "{id}"):
		return nil, p.fail(n, path, "status_url must contain {id} when id_field is given")
	}
	return a, nil
}

// checkExecutor checks that a task has what its executor needs, and only
// that.
func (p *parser) checkExecutor(pt parsedTask, path string) error {
	t := pt.task
	if t.Executor != "python" && (t.Module != "" || t.Function != "" || t.Python != "") {
		return p.fail(pt.node, path, "module, function and python are for executor python")
	}
	if t.File != "" && t.Executor != "python" && t.Executor != "process" && t.Executor != "library" {
		return p.fail(pt.nodes["file"], joinPath(path, "file"), "is for executors python, process and library")
	}
	if t.Executor != "http" && t.HTTP != nil {
		return p.fail(pt.node, path, "method, url, headers, body, request_timeout and async are for executor http")
	}
	if t.Executor != "cloudrun" && t.CloudRun != nil {
		return p.fail(pt.node, path, "job, project and region are for executor cloudrun")
	}
	switch t.Executor {
	case "python":
		return p.checkPython(pt, path)
	case "process":
		return p.checkProcessFile(pt, path)
	case "library":
		if t.File == "" {
			return p.fail(pt.node, joinPath(path, "file"), "required for executor library (the shared object exporting ork_task_run and ork_task_free)")
		}
		return p.resolveFile(pt, path)
	case "cloudrun":
		return p.checkCloudRun(pt, path)
	case "http":
		if t.HTTP == nil || t.HTTP.URL == "" {
			return p.fail(pt.node, joinPath(path, "url"), "required for executor http")
		}
		if err := p.checkURLScheme(pt, joinPath(path, "url"), t.HTTP.URL); err != nil {
			return err
		}
		if a := t.HTTP.Async; a != nil && a.StatusURL != "" {
			return p.checkURLScheme(pt, joinPath(joinPath(path, "async"), "status_url"), a.StatusURL)
		}
	}
	return nil
}

// checkURLScheme refuses a URL template that does not start as an http or
// https URL. One that starts with a placeholder or a ${env:NAME} is
// checked when it is filled, at dispatch.
func (p *parser) checkURLScheme(pt parsedTask, path, url string) error {
	var parts int
	var kind tokenKind
	var head string // the template's first part
	scanTemplate(url, func(k tokenKind, text string) {
		if parts++; parts == 1 {
			kind, head = k, text
		}
	})
	if kind != tokLiteral {
		return nil
	}
	head = strings.ToLower(head)
	for _, prefix := range []string{"http://", "https://"} {
		// What follows the first part may complete the scheme ("http{{
		// params.s }}://..."); a URL all literal must hold it, and a host.
		if len(head) > len(prefix) && strings.HasPrefix(head, prefix) || parts > 1 && strings.HasPrefix(prefix, head) {
			return nil
		}
	}
	return p.fail(pt.node, path, "%q: not an absolute http or https URL", url)
}

func (p *parser) checkPython(pt parsedTask, path string) error {
	t := pt.task
	if (t.File == "") == (t.Module == "") {
		return p.fail(pt.node, path, "executor python needs exactly one of file and module")
	}
	if len(t.Command) > 0 {
		return p.fail(pt.node, joinPath(path, "command"), "not allowed for executor python (it runs function)")
	}
	return p.resolveFile(pt, path)
}

// checkProcessFile resolves Ork's file of a process task: the program to
// run when the task has no command (with one, the command runs, as in
// Ork, and the file must still exist).
func (p *parser) checkProcessFile(pt parsedTask, path string) error {
	t := pt.task
	if t.File == "" {
		return nil
	}
	if err := p.resolveFile(pt, path); err != nil {
		return err
	}
	if len(t.Command) == 0 {
		t.Command = []string{t.File}
	}
	return nil
}

// resolveFile makes the task's file, if any, absolute against the
// workflow's folder, and checks that it exists.
func (p *parser) resolveFile(pt parsedTask, path string) error {
	t := pt.task
	if t.File == "" {
		return nil
	}
	if !filepath.IsAbs(t.File) {
		if p.dir == "" {
			return p.fail(pt.nodes["file"], joinPath(path, "file"),
				"%q is relative, and this workflow has no folder: load it with orkwal run --workflows or orkwal apply (which sends the file's path), or use an absolute path", t.File)
		}
		t.File = filepath.Join(p.dir, t.File)
	}
	if _, err := os.Stat(t.File); err != nil {
		return p.fail(pt.nodes["file"], joinPath(path, "file"), "%s: no such file", t.File)
	}
	return nil
}

// checkTemplates checks the templates of a task (see Expand): its env
// values and an http task's url, header values, body and async
// status_url. A {{ REF }} must name a declared param or input and a ${...}
// must be ${env:NAME} with a valid NAME: anything else is refused rather
// than filled with nothing at dispatch.
func (p *parser) checkTemplates(spec *Spec, pt parsedTask, path string) error {
	t := pt.task
	fields := map[string]string{} // path of each template → its text
	for k, v := range t.Env {
		fields[joinPath(joinPath(path, "env"), k)] = v
	}
	if t.HTTP != nil {
		fields[joinPath(path, "url")], fields[joinPath(path, "body")] = t.HTTP.URL, t.HTTP.Body
		for k, v := range t.HTTP.Headers {
			fields[joinPath(joinPath(path, "headers"), k)] = v
		}
		if t.HTTP.Async != nil {
			fields[joinPath(joinPath(path, "async"), "status_url")] = t.HTTP.Async.StatusURL
		}
	}
	for _, at := range sortedKeys(fields) {
		var err error
		scanTemplate(fields[at], func(kind tokenKind, text string) {
			if err != nil {
				return
			}
			switch kind {
			case tokPlaceholder:
				if !knownPlaceholder(spec, t, text) {
					err = p.fail(pt.node, at, "placeholder {{%s}}: use {{params.NAME}} of a declared param or {{inputs.NAME}} of a declared input ({{ \"{{\" }} for a literal {{)", text)
				}
			case tokEnvRef:
				if name, ok := strings.CutPrefix(text, "env:"); !ok || !validEnvName(name) {
					err = p.fail(pt.node, at, "${%s}: use ${env:NAME} to read NAME from the daemon's environment at dispatch ($${ for a literal ${)", text)
				}
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func knownPlaceholder(spec *Spec, t *Task, ref string) bool {
	if name, ok := strings.CutPrefix(ref, "params."); ok {
		_, declared := spec.Params[name]
		return declared
	}
	if name, ok := strings.CutPrefix(ref, "inputs."); ok {
		_, declared := t.Inputs[name]
		return declared
	}
	return false
}

// types decodes the workflow's named types.
func (p *parser) types(n *yaml.Node, path string) (map[string][]byte, error) {
	entries, err := p.mapping(n, path, "a mapping of type names to type descriptions")
	if err != nil || len(entries) == 0 {
		return nil, err
	}
	out := make(map[string][]byte, len(entries))
	for _, e := range entries {
		if out[e.key], err = p.asJSON(e.val, e.path); err != nil {
			return nil, err
		}
	}
	return out, nil
}

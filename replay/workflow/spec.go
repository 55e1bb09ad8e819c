// Package workflow is the workflow file format: the Spec types that a run pins,
// and Parse, which turns a YAML file into a validated Spec.
//
// Invariants:
//   - A Spec returned by Parse is runnable: every dependency names a task of
//     the same workflow, the dependency graph has no cycle, every command is
//     non-empty, every name uses the safe charset.
//   - Parse never panics and rejects what it cannot run, naming the file, the
//     key and the reason. Unknown keys are errors, never ignored.
//   - Spec values are immutable once parsed: runs share them by pointer.
package workflow

// Spec is one version of a workflow, as parsed from its file.
type Spec struct {
	Name        string            `msgpack:"name" json:"name"`
	Description string            `msgpack:"description,omitempty" json:"description,omitempty"`
	Params      map[string]string `msgpack:"params,omitempty" json:"params,omitempty"` // defaults, overridable at trigger time
	// Tasks in a deterministic order: topological, ties broken by the order
	// in which they appear in the file. Task creation order follows it.
	Tasks []*Task `msgpack:"tasks" json:"tasks"`
	// Dir is the folder of the workflow file, used to resolve relative paths
	// (workdir). Empty when the workflow came through the API.
	Dir string `msgpack:"dir,omitempty" json:"dir,omitempty"`
}

// Task is one node of the DAG.
type Task struct {
	Name     string `msgpack:"name" json:"name"`
	Executor string `msgpack:"executor" json:"executor"` // "process" (default) or "noop"
	// Command is the argv. A YAML string becomes ["sh", "-c", string].
	Command   []string          `msgpack:"command,omitempty" json:"command,omitempty"`
	Env       map[string]string `msgpack:"env,omitempty" json:"env,omitempty"`
	Workdir   string            `msgpack:"workdir,omitempty" json:"workdir,omitempty"` // absolute after Parse when Dir is set
	DependsOn []string          `msgpack:"depends_on,omitempty" json:"depends_on,omitempty"`
}

// Lookup returns the task named name, or nil.
func (s *Spec) Lookup(name string) *Task {
	for _, t := range s.Tasks {
		if t.Name == name {
			return t
		}
	}
	return nil
}

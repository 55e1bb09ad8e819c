package workflow

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics and that whatever it accepts keeps
// the package invariants: valid unique names, runnable commands, known
// dependencies, tasks in topological order (hence no cycle), determinism.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"valid.yaml", "cycle.yaml", "unknown_dep.yaml", "malformed.yaml"} {
		data, err := os.ReadFile(fixture(name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(validDAG))
	f.Add([]byte("name: a\ntasks:\n  a: {executor: noop}\n  b: {command: x, depends_on: a}\n"))
	f.Add([]byte("name: a\nx: &r {command: [echo]}\ntasks: {a: *r}\n---\n"))
	f.Add([]byte(""))

	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err != nil {
			if s != nil {
				t.Fatalf("Parse returned a Spec along with error %v", err)
			}
			if !strings.HasPrefix(err.Error(), "fuzz.yaml: ") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		checkSpec(t, s)
		again, err := Parse("fuzz.yaml", data)
		if err != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("second Parse differs: %v", err)
		}
	})
}

// checkSpec asserts the invariants of a parsed Spec, independently of the
// parser's own checks.
func checkSpec(t *testing.T, s *Spec) {
	t.Helper()
	if !validName(s.Name) {
		t.Fatalf("invalid workflow name %q", s.Name)
	}
	if len(s.Tasks) == 0 {
		t.Fatal("no tasks")
	}
	before := make(map[string]bool, len(s.Tasks)) // tasks earlier in s.Tasks
	for _, task := range s.Tasks {
		if !validName(task.Name) || before[task.Name] {
			t.Fatalf("invalid or duplicate task name %q", task.Name)
		}
		checkCommand(t, task)
		for _, dep := range task.DependsOn {
			if s.Lookup(dep) == nil {
				t.Fatalf("task %q depends on unknown task %q", task.Name, dep)
			}
			if !before[dep] {
				t.Fatalf("task %q comes before its dependency %q: not topological, or a cycle", task.Name, dep)
			}
		}
		before[task.Name] = true
	}
}

func checkCommand(t *testing.T, task *Task) {
	t.Helper()
	switch task.Executor {
	case "process":
		if len(task.Command) == 0 || strings.TrimSpace(task.Command[0]) == "" {
			t.Fatalf("task %q: unrunnable command %q", task.Name, task.Command)
		}
	case "noop":
		if len(task.Command) != 0 {
			t.Fatalf("noop task %q has a command", task.Name)
		}
	default:
		t.Fatalf("task %q: executor %q", task.Name, task.Executor)
	}
}

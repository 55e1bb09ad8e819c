package workflow

import (
	"strings"
	"testing"
)

// TestOrkTypeRules: a workflow that declares types is checked by Ork's
// rules when it loads, for every executor; one that declares none is not.
func TestOrkTypeRules(t *testing.T) {
	for _, tc := range []struct {
		name, tasks, types, want string // want "" = accepted
	}{
		{name: "untyped DAG", tasks: `
  a: {command: "true"}
  b: {command: "true", depends_on: [a]}`},
		{name: "Ork's process tasks with types", tasks: `
  a: {command: "true", output_type: {users: [str], count: int}}
  b: {command: "true", depends_on: [a], input_type: {up: {users: [str], count: int}}, inputs: {up: {ref: tasks.a.output}}}`},
		{name: "upstream without output_type", tasks: `
  a: {command: "true"}
  b: {command: "true", depends_on: [a], input_type: {}}`,
			want: `tasks.a.output_type: required: task "b" depends on this task`},
		{name: "dependent without input_type", tasks: `
  a: {command: "true", output_type: int}
  b: {command: "true", depends_on: [a]}`,
			want: `tasks.b.input_type: required: this task has depends_on`},
		{name: "types alone make it typed", types: "T: {a: int}", tasks: `
  a: {command: "true"}
  b: {executor: noop, depends_on: [a]}`,
			want: `tasks.a.output_type: required`},
		{name: "input without binding", tasks: `
  a: {command: "true", input_type: {x: int, y: str}, inputs: {x: {const: 1}}}`,
			want: `tasks.a.inputs: missing input "y", which input_type declares`},
		{name: "binding not declared", tasks: `
  a: {command: "true", input_type: {x: int}, inputs: {x: {const: 1}, z: {const: 2}}}`,
			want: `tasks.a.inputs.z: not declared in input_type`},
		{name: "no inputs at all", tasks: `
  a: {command: "true", input_type: {x: int}}`,
			want: `tasks.a.inputs: missing input "x"`},
		{name: "empty input_type takes any inputs, as Ork's does", tasks: `
  a: {command: "true", input_type: {}, inputs: {x: {const: 1}}}`},
		{name: "optional input may go unbound", tasks: `
  a: {command: "true", input_type: {x: int, note: "str?", tag: "optional[str]"}, inputs: {x: {const: 1}}}`},
		{name: "named input_type", types: "Args: {x: int}", tasks: `
  a: {command: "true", input_type: types.Args, inputs: {}}`,
			want: `tasks.a.inputs: missing input "x"`},
		{name: "input_type not an object", tasks: `
  a: {command: "true", input_type: [int]}`,
			want: `tasks.a.input_type: must be an object of named arguments`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "name: w\n"
			if tc.types != "" {
				src += "types:\n  " + tc.types + "\n"
			}
			_, err := Parse("", []byte(src+"tasks:"+tc.tasks+"\n"))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestCheckTypesKey(t *testing.T) {
	s, err := Parse("", []byte(`name: w
check_types: true
tasks:
  a: {command: "true"}
  b: {command: "true", check_types: false}
`))
	if err != nil {
		t.Fatal(err)
	}
	if !s.Lookup("a").CheckTypes || s.Lookup("b").CheckTypes {
		t.Errorf("CheckTypes a=%v b=%v, want true (the workflow's) and false (its own)", s.Lookup("a").CheckTypes, s.Lookup("b").CheckTypes)
	}
	s, err = Parse("", []byte("name: w\ntasks:\n  a: {command: \"true\", check_types: true}\n"))
	if err != nil || !s.Lookup("a").CheckTypes {
		t.Errorf("task check_types: %v", err)
	}
	_, err = Parse("", []byte("name: w\ncheck_types: yes please\ntasks:\n  a: {command: \"true\"}\n"))
	if err == nil || !strings.Contains(err.Error(), "check_types: expected true or false") {
		t.Errorf("bad check_types: %v", err)
	}
}

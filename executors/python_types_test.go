package executors

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestValidatePythonTypes(t *testing.T) {
	t.Parallel()
	row := json.RawMessage(`{"a": "int", "tags": "list[str]", "at": "datetime_tz?"}`)
	tests := []struct {
		name    string
		in, out string
		types   map[string]json.RawMessage
		wantErr string // "" = valid
	}{
		{name: "none"},
		{name: "null", in: `null`, out: `null`},
		{name: "builtins", in: `{"a": "str", "b": "int", "c": "float", "d": "bool", "e": "date", "f": "datetime",
			"g": "datetime_tz", "h": "datetime_utc", "i": "datetime_notz", "j": "list", "k": "dict", "l": "any"}`},
		{name: "wrappers", in: `{"a": "optional[list[int]]", "b": "list[str?]", "c": " int? ", "d": [["str"]]}`, out: `"list[dict]"`},
		{name: "named", in: `{"r": "types.Row", "s": "Row?"}`, out: `["Row"]`, types: map[string]json.RawMessage{"Row": row}},
		{name: "named input_type", in: `"types.Args"`, types: map[string]json.RawMessage{"Args": row}},
		{name: "alias of alias", in: `"A"`, types: map[string]json.RawMessage{"A": json.RawMessage(`"B"`), "B": row}},
		{name: "empty object input", in: `{}`, out: `{}`},
		{name: "unknown", in: `{"a": "integer"}`, wantErr: `input_type: field "a": unknown type "integer"`},
		{name: "unknown in output", out: `"types.Nope"`, wantErr: `output_type: unknown type "types.Nope"`},
		{name: "empty name", out: `"types."`, wantErr: `unknown type "types."`},
		{name: "input not an object", in: `"int"`, wantErr: `input_type: int is not an object of named arguments`},
		{name: "input list", in: `["int"]`, wantErr: `input_type: list[int] is not an object`},
		{name: "input named non-object", in: `"N"`, types: map[string]json.RawMessage{"N": json.RawMessage(`"int"`)},
			wantErr: `input_type: N is not an object`},
		{name: "two-element list", out: `["int", "str"]`, wantErr: "exactly one element type, not 2"},
		{name: "number", out: `3`, wantErr: "3 is not a type expression"},
		{name: "bad json", out: `{`, wantErr: "not a JSON type expression"},
		{name: "builtin name", types: map[string]json.RawMessage{"int": row}, wantErr: `type "int": a builtin's name`},
		{name: "self cycle", types: map[string]json.RawMessage{"Node": json.RawMessage(`{"next": "Node?"}`)},
			wantErr: `type "Node" refers to itself (Node -> Node)`},
		{name: "long cycle", types: map[string]json.RawMessage{"A": json.RawMessage(`{"b": "B"}`), "B": json.RawMessage(`["A"]`)},
			wantErr: `refers to itself (A -> B -> A)`},
		{name: "bad named type", types: map[string]json.RawMessage{"A": json.RawMessage(`{"x": "wat"}`)},
			wantErr: `type "A": field "x": unknown type "wat"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := ValidatePythonTypes(&PythonJob{InputType: rawJSON(tt.in), OutputType: rawJSON(tt.out), Types: tt.types})
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("error %v, want none", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestCompiledTypesForm(t *testing.T) {
	t.Parallel()
	got, err := compilePythonTypes(&PythonJob{
		InputType:  json.RawMessage(`{"row": "types.Row", "tags": "list[str]", "n": "int?"}`),
		OutputType: json.RawMessage(`["Row"]`),
		Types:      map[string]json.RawMessage{"Row": json.RawMessage(`{"a": "datetime_tz"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"input":{"kind":"object","name":"object","fields":{` +
		`"n":{"kind":"optional","name":"int?","of":{"kind":"int","name":"int"}},` +
		`"row":{"kind":"named","name":"Row","ref":"Row"},` +
		`"tags":{"kind":"list","name":"list[str]","of":{"kind":"str","name":"str"}}}},` +
		`"output":{"kind":"list","name":"list[Row]","of":{"kind":"named","name":"Row","ref":"Row"}},` +
		`"types":{"Row":{"kind":"object","name":"object","fields":{"a":{"kind":"datetime","name":"datetime_tz"}}}}}`
	if string(data) != want {
		t.Errorf("compiled =\n%s\nwant\n%s", data, want)
	}
}

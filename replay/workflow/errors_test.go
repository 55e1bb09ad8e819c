package workflow

import (
	"errors"
	"strings"
	"testing"
)

// TestYAMLErrorsSayWhereAndWhat: the common YAML mistakes are named with
// their line and column and what YAML expected there.
func TestYAMLErrorsSayWhereAndWhat(t *testing.T) {
	for _, c := range []struct{ name, yaml, want string }{
		{"tab", "name: a\ntasks:\n\ta: {command: x}\n",
			"etl.yaml: invalid YAML: a tab indents this line: YAML indents with spaces only (line 3, column 1)"},
		{"key out of line", "name: a\ntasks:\n  a:\n    command: x\n   env: {}\n",
			"etl.yaml: invalid YAML: wrong indentation: this line is not aligned with the keys above it (expected a key at the column of its siblings, or a value indented under its key) (line 5, column 4)"},
		{"key too deep", "name: a\ntasks:\n  a:\n    command: x\n      env: {}\n",
			"etl.yaml: invalid YAML: unexpected 'key:' here: this line is indented deeper than a key of the mapping above, or a value holds ': ' (quote the value) (line 5, column 7)"},
		{"list for a map", "name: a\ntasks:\n  - a: {command: x}\n",
			"etl.yaml: tasks: expected a mapping of task names to tasks, got a list (a '- ' starts a list item: write 'key: value' lines here, without the dash) (line 3, column 3)"},
		{"wrong type", "name: a\ntasks:\n  a: {command: x, env: [A]}\n",
			"etl.yaml: tasks.a.env: expected a mapping of variable names to values, got a list (a '- ' starts a list item: write 'key: value' lines here, without the dash) (line 3, column 24)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("etl.yaml", []byte(c.yaml))
			if err == nil || err.Error() != c.want {
				t.Fatalf("error:\n%v\nwant:\n%s", err, c.want)
			}
		})
	}
}

// TestParseReportsEveryError: every key that is wrong is reported at once,
// in file order, each with its position.
func TestParseReportsEveryError(t *testing.T) {
	doc := "name: a b\ntasks:\n  a: {comand: x}\n  b: {command: 5}\n  c/d: {command: x}\n  e: {}\nbogus: 1\n"
	_, err := Parse("etl.yaml", []byte(doc))
	want := []string{
		`etl.yaml: name: invalid name "a b": use letters, digits`,
		"etl.yaml: tasks.a.comand: unknown key (line 3, column 7)",
		"etl.yaml: tasks.b.command: expected a list of strings or a string, got a number (line 4, column 16)",
		`etl.yaml: tasks."c/d": invalid task name`,
		"etl.yaml: tasks.e.command: required for executor process",
		"etl.yaml: bogus: unknown key (line 7, column 1)",
	}
	var list Errors
	if !errors.As(err, &list) || len(list) != len(want) {
		t.Fatalf("errors:\n%v\nwant %d of them", err, len(want))
	}
	lines := strings.Split(err.Error(), "\n")
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("error %d:\n%s\nwant it to start with:\n%s", i, lines[i], w)
		}
	}
	var first *Error
	if !errors.As(err, &first) || first.Path != "name" {
		t.Errorf("errors.As finds %+v, want the first error", first)
	}
}

func TestParseErrorsCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: a\ntasks:\n")
	for i := range 80 {
		b.WriteString("  t" + strings.Repeat("x", i) + ": {bad: 1}\n")
	}
	_, err := Parse("etl.yaml", []byte(b.String()))
	var list Errors
	if !errors.As(err, &list) || len(list) != maxErrors || list[maxErrors-1].Msg != "and 31 more errors" {
		t.Fatalf("%d errors, the last %v", len(list), list[len(list)-1])
	}
}

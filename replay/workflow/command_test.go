package workflow

import (
	"os/exec"
	"strings"
	"testing"
)

// hostile are values a trigger may give a param.
var hostile = []string{"plain", "two words", `it's`, `say "hi"`, "$(touch pwned)", "`id`", `back\slash`, "; echo injected",
	"'; echo injected; '", `"; echo injected; "`, "$HOME", "new\nline", "", "*"}

// TestExpandCommandShellWord: {{params.x}} in a command was passed through
// literally. In a shell script it becomes one word, quoted for where it
// stands, so sh prints the value exactly and runs nothing of it.
func TestExpandCommandShellWord(t *testing.T) {
	for _, tc := range []struct{ script, before, after string }{
		{`printf %s {{params.x}}`, "", ""},
		{`printf %s '<{{params.x}}>'`, "<", ">"},
		{`printf %s "<{{ params.x }}>"`, "<", ">"},
		{`printf %s pre-{{params.x}}`, "pre-", ""},
		{`printf %s "$(printf %s {{params.x}})"`, "", ""},
		{"printf %s \"`printf %s {{params.x}}`\"", "", ""},
		{`printf %s "<$(printf %s "{{params.x}}")>"`, "<", ">"},
	} {
		for _, v := range hostile {
			argv := ExpandCommand([]string{"sh", "-c", tc.script}, func(ref string) string {
				if ref != "params.x" {
					t.Fatalf("ref %q", ref)
				}
				return v
			})
			want := tc.before + v + tc.after
			if strings.Contains(tc.script, "$(") || strings.Contains(tc.script, "`") {
				want = tc.before + strings.TrimRight(v, "\n") + tc.after // a substitution drops trailing newlines
			}
			out, err := exec.Command(argv[0], argv[1:]...).Output()
			if err != nil || string(out) != want {
				t.Errorf("%s with x=%q: %q (%v), want %q (script %q)", tc.script, v, out, err, want, argv[2])
			}
		}
	}
}

// TestExpandCommandArgv: in an argv list a value is part of its argument,
// never split, and the spec's argv is not changed.
func TestExpandCommandArgv(t *testing.T) {
	spec := []string{"tool", "--name={{params.x}}", "{{ inputs.y }}", "${HOME}", `{{ "{{" }}`}
	got := ExpandCommand(spec, func(ref string) string { return map[string]string{"params.x": "a b; c", "inputs.y": "$(id)"}[ref] })
	want := []string{"tool", "--name=a b; c", "$(id)", "${HOME}", "{{"}
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("got %q, want %q", got, want)
	}
	if spec[1] != "--name={{params.x}}" {
		t.Error("the spec's argv was changed")
	}
}

// TestCommandPlaceholdersChecked: a placeholder that cannot be filled is
// refused at load, naming the key.
func TestCommandPlaceholdersChecked(t *testing.T) {
	base := "name: w\nparams: {x: 1}\ntasks:\n  t:\n    "
	for _, tc := range []struct{ src, want string }{
		{"command: echo {{params.x}} ${HOME} $$ {{ \"{{\" }}\n", ""},
		{"command: [echo, '{{params.x}}']\n", ""},
		{"command: echo {{params.nope}}\n", `w.yaml: tasks.t.command: placeholder {{params.nope}}`},
		{"command: [echo, '{{run.id}}']\n", `w.yaml: tasks.t.command[1]: placeholder {{run.id}}`},
		{"command: docker inspect --format '{{.State}}' x\n", `tasks.t.command: placeholder {{.State}}`},
		{"command: echo \\{{params.x}}\n", "tasks.t.command: a placeholder right after a backslash"},
	} {
		_, err := Parse("w.yaml", []byte(base+tc.src))
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: got %v, want %q", tc.src, err, tc.want)
		}
	}
}

// TestExpandURLEscapesForThePlace: a param in an http task's url could
// change the request's host, path or query structure. Each value is
// escaped for where it lands.
func TestExpandURLEscapesForThePlace(t *testing.T) {
	params := map[string]string{"id": "a/b?c=d#e", "q": "x&admin=1", "host": "evil.com@", "sp": "a b"}
	for tmpl, want := range map[string]string{
		"https://api.example.com/items/{{params.id}}":             "https://api.example.com/items/a%2Fb%3Fc=d%23e",
		"https://api.example.com/s?q={{params.q}}&page=1":         "https://api.example.com/s?q=x%26admin%3D1&page=1",
		"https://api.example.com/s?q={{params.sp}}#{{params.id}}": "https://api.example.com/s?q=a+b#a%2Fb%3Fc=d%23e",
		"https://{{params.host}}api.example.com/x":                "https://evil.com%40api.example.com/x",
		"${env:BASE}/items/{{params.id}}?q={{params.q}}":          "http://127.0.0.1:7777/items/a%2Fb%3Fc=d%23e?q=x%26admin%3D1",
	} {
		got := ExpandURL(tmpl, func(ref string) string { return params[strings.TrimPrefix(ref, "params.")] },
			func(string) string { return "http://127.0.0.1:7777" })
		if got != want {
			t.Errorf("%s: got %s, want %s", tmpl, got, want)
		}
	}
}

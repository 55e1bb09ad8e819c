package workflow

import (
	"strings"
	"testing"
)

// TestExpand: one pass, left to right; escapes give their literal text and
// what is filled in is never scanned again.
func TestExpand(t *testing.T) {
	params := map[string]string{"who": "bob", "evil": "${env:SECRET}", "braces": "{{params.who}}", "esc": "$${"}
	env := map[string]string{"SECRET": "s3cr3t", "HOME": "/root"}
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"hi {{params.who}}!", "hi bob!"},
		{"hi {{ params.who }}", "hi bob"},
		{"${env:HOME}/x", "/root/x"},
		{"{{params.evil}}", "${env:SECRET}"},
		{"{{params.braces}}", "{{params.who}}"},
		{"{{params.esc}}{env:HOME}", "$${{env:HOME}"},
		{`{{ "{{" }}params.who}}`, "{{params.who}}"},
		{`{{'{{'}}x`, "{{x"},
		{"$${env:HOME}", "${env:HOME}"},
		{"$${HOME} and ${env:HOME}", "${HOME} and /root"},
		{"$$HOME $5 ${ {{", "$$HOME $5 ${ {{"},
		{"a}}b{{", "a}}b{{"},
		{"$${{params.who}}", "${{params.who}}"},
	} {
		got := Expand(tc.in, func(ref string) string {
			name, ok := strings.CutPrefix(ref, "params.")
			if !ok {
				t.Errorf("%q: placeholder %q", tc.in, ref)
			}
			return params[name]
		}, func(name string) string { return env[name] })
		if got != tc.want {
			t.Errorf("Expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestTemplateEscapesParse: the escapes pass the parser; what they do not
// cover is still refused, with the escape named in the error.
func TestTemplateEscapesParse(t *testing.T) {
	checkTaskParses(t, []taskCase{
		{"literal braces", `{command: x, env: {A: '{{ "{{" }} .Name }}'}}`, ""},
		{"literal dollar brace", `{command: x, env: {A: '$${HOME}/bin'}}`, ""},
		{"http body", `{executor: http, url: 'http://x', body: '{"t": "{{"{{"}}x}}", "h": "$${env:NOPE"}'}`, ""},
		{"go template", `{command: x, env: {A: '{{ .Name }}'}}`, `placeholder {{.Name}}: use {{params.NAME}} of a declared param or {{inputs.NAME}} of a declared input ({{ "{{" }} for a literal {{)`},
		{"shell reference", `{command: x, env: {A: '${HOME}/bin'}}`, "${HOME}: use ${env:NAME} to read NAME from the daemon's environment at dispatch ($${ for a literal ${)"},
	})
}

// TestHTTPURLScheme: an http task's url and async status_url must be http
// or https URLs, checked at load when the template starts with literal
// text (at dispatch when it starts with a reference).
func TestHTTPURLScheme(t *testing.T) {
	checkTaskParses(t, []taskCase{
		{"http", `{executor: http, url: 'http://x/y'}`, ""},
		{"HTTPS", `{executor: http, url: 'HTTPS://x'}`, ""},
		{"from an env", `{executor: http, url: '${env:BASE}/x'}`, ""},
		{"scheme then env", `{executor: http, url: 'https://${env:HOST}/x'}`, ""},
		{"ftp", `{executor: http, url: 'ftp://x'}`, `tasks.t.url: "ftp://x": not an absolute http or https URL`},
		{"no scheme", `{executor: http, url: 'x.example/y'}`, `tasks.t.url: "x.example/y": not an absolute http or https URL`},
		{"scheme cut short", `{executor: http, url: 'https:/'}`, `tasks.t.url: "https:/": not an absolute http or https URL`},
		{"the scheme alone", `{executor: http, url: 'http://'}`, `tasks.t.url: "http://": not an absolute http or https URL`},
		{"part of a scheme alone", `{executor: http, url: 'http'}`, `tasks.t.url: "http": not an absolute http or https URL`},
		{"part of a scheme, then a reference", `{executor: http, url: 'http${env:S}://x'}`, ""},
		{"status url", `{executor: http, url: 'http://x', async: {id_field: id, status_url: 'file:///{id}', status_field: s, success: [ok]}}`,
			`tasks.t.async.status_url: "file:///{id}": not an absolute http or https URL`},
	})
}

// taskCase is a task (YAML) and the error Parse must give ("" = none).
type taskCase struct{ name, task, want string }

// checkTaskParses parses a workflow of each case's task, named t.
func checkTaskParses(t *testing.T, cases []taskCase) {
	t.Helper()
	for _, tc := range cases {
		_, err := Parse("w.yaml", []byte("name: w\ntasks:\n  t: "+tc.task+"\n"))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

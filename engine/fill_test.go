package engine

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/orkwal/orkwal/replay/workflow"
)

// TestParamsFillCommandAndURL: {{params.x}} in a command reached the task
// literally, and a param in an http task's url could change the request's
// path and query. The command gets the value as one word (nothing of it
// runs), an argv gets it as its argument, and the url gets it escaped for
// its place.
func TestParamsFillCommandAndURL(t *testing.T) {
	var gotPath, gotQuery string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotQuery = r.URL.EscapedPath(), r.URL.RawQuery
	}))
	defer srv.Close()
	folder := t.TempDir()
	spec, err := workflow.Parse(filepath.Join(folder, "w.yaml"), []byte(`name: w
params: {x: "", id: ""}
tasks:
  shell: {command: "printf %s {{params.x}} > shell.out"}
  argv: {command: [sh, -c, 'printf %s "$1" > argv.out', sh, "{{params.x}}"]}
  call: {executor: http, url: "`+srv.URL+`/items/{{params.id}}?q={{params.x}}"}
`))
	e := openDefault(t, spec, err)
	defer e.Close()
	x := `a b'; touch pwned; echo "$(touch pwned2)` + "`touch pwned3`&admin=1"
	id, err := e.Trigger("w", map[string]string{"x": x, "id": "../admin?all=1"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, e, "the run", finished(e, id))
	if r, _ := e.Run(id); r.Status != "success" {
		t.Fatalf("run %s: %+v", r.Status, r.Tasks)
	}
	for _, out := range []string{"shell.out", "argv.out"} {
		if data, err := os.ReadFile(filepath.Join(folder, out)); err != nil || string(data) != x {
			t.Errorf("%s: %q (%v), want the param as it is: %q", out, data, err, x)
		}
	}
	for _, f := range []string{"pwned", "pwned2", "pwned3"} {
		if _, err := os.Stat(filepath.Join(folder, f)); err == nil {
			t.Errorf("the param ran a command: %s exists", f)
		}
	}
	if gotPath != "/items/..%2Fadmin%3Fall=1" || gotQuery != "q=a+b%27%3B+touch+pwned%3B+echo+%22%24%28touch+pwned2%29%60touch+pwned3%60%26admin%3D1" {
		t.Errorf("request path %q query %q: a param changed the URL's structure", gotPath, gotQuery)
	}
}

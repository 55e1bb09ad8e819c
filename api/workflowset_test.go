package api

import (
	"encoding/json"
	"strings"
	"testing"
)

func batchBody(sources ...string) string {
	type item struct {
		File   string `json:"file,omitempty"`
		Source string `json:"source"`
	}
	var items []item
	for _, s := range sources {
		items = append(items, item{Source: s})
	}
	b, _ := json.Marshal(map[string]any{"workflows": items})
	return string(b)
}

// TestPutWorkflowsAllOrNone: POST /workflows/batch records a set of
// workflows in one frame of the log, or, when any is bad, none of them
// and names every bad one.
func TestPutWorkflowsAllOrNone(t *testing.T) {
	f := newFixture(t)
	a := "name: a\ntasks:\n  t: {executor: noop}\n"
	b := "name: b\ntasks:\n  t: {executor: noop}\n"
	frames := f.walFrames()
	code, body := f.do("POST", "/workflows/batch", batchBody(a, b))
	if code != 200 || !strings.Contains(body, `"name": "a"`) || !strings.Contains(body, `"changed": true`) {
		t.Fatalf("batch: %d %s", code, body)
	}
	if n := f.walFrames(); n != frames+1 {
		t.Fatalf("%d frames for a batch of two, want one", n-frames)
	}
	frames++
	for _, c := range []struct{ name, body, want string }{
		{"one bad of three", batchBody(a+"description: new\n", "name: c\ntasks:\n  t: {comand: x}\n", "name: d\n"),
			"2 of 3 workflows are invalid, none was recorded"},
		{"a name twice", batchBody(a, a), "is given twice"},
		{"empty", `{"workflows": []}`, "give at least one"},
		{"not a batch", `{"files": []}`, "unknown field"},
		{"relative file", `{"workflows": [{"file": "x.yaml", "source": "name: a"}]}`, "not a clean absolute path"},
	} {
		code, body := f.do("POST", "/workflows/batch", c.body)
		if code != 400 || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s, want 400 with %q", c.name, code, body, c.want)
		}
	}
	if n := f.walFrames(); n != frames {
		t.Fatalf("refused batches wrote %d frames", n-frames)
	}
	code, body = f.do("POST", "/workflows/batch", batchBody(a, b))
	if code != 200 || strings.Contains(body, `"changed": true`) {
		t.Fatalf("the same set again: %d %s, want unchanged", code, body)
	}
}

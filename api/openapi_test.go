package api

import (
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/orkwal/orkwal/replay/workflow"
)

// TestOpenAPIAndDocsDescribeEveryRoute: openapi.json and docs/api.md name
// every registered route, and openapi.json names no route that is not.
func TestOpenAPIAndDocsDescribeEveryRoute(t *testing.T) {
	f := newFixture(t)
	code, body := f.do("GET", "/openapi.json", "")
	if code != 200 {
		t.Fatalf("openapi.json: %d", code)
	}
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil || !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi.json: %v %q", err, doc.OpenAPI)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			if method != "parameters" {
				documented[strings.ToUpper(method)+" "+path] = true
			}
		}
	}
	routes := f.api.Routes()
	sort.Strings(routes)
	md, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		r = strings.Replace(r, "{$}", "", 1) // an exact path: "GET /ui/{$}" is GET /ui/
		if !documented[r] {
			t.Errorf("openapi.json does not describe %s", r)
		}
		if !strings.Contains(string(md), "`"+r) {
			t.Errorf("docs/api.md does not describe %s", r)
		}
		delete(documented, r)
	}
	for r := range documented {
		t.Errorf("openapi.json describes %s, which is not a route", r)
	}
}

// TestServesTheWorkflowSchema: GET /schema/workflow.json answers the schema
// replay/workflow embeds, for editors to fetch from the daemon.
func TestServesTheWorkflowSchema(t *testing.T) {
	f := newFixture(t)
	code, body := f.do("GET", "/schema/workflow.json", "")
	if code != 200 || body != string(workflow.Schema) {
		t.Fatalf("GET /schema/workflow.json: %d, %d bytes; want 200 and the %d bytes of workflow.Schema", code, len(body), len(workflow.Schema))
	}
}

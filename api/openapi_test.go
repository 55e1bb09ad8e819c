package api

import (
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/orkwal/orkwal/engine"
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

// TestOpenAPINamesEveryViewField: every JSON field of the engine's views
// (what the API writes) is a property of its schema in openapi.json, and
// every property of those schemas is a field: a field set only in states
// TestOpenAPIIsTrue does not reach (ahead, ready) is checked here.
func TestOpenAPINamesEveryViewField(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Items struct {
						Properties map[string]json.RawMessage `json:"properties"`
					} `json:"items"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc.Components.Schemas
	props := func(schema, array string) map[string]bool {
		out := map[string]bool{}
		if array == "" {
			for k := range schemas[schema].Properties {
				out[k] = true
			}
			return out
		}
		for k := range schemas[schema].Properties[array].Items.Properties {
			out[k] = true
		}
		return out
	}
	for _, c := range []struct {
		schema, array string
		view          any
	}{
		{"Task", "", engine.TaskView{}},
		{"Task", "attempts", engine.AttemptView{}},
		{"Run", "", engine.RunView{}},
		{"Workflow", "", engine.WorkflowView{}},
		{"Schedule", "", engine.ScheduleView{}},
		{"Schedule", "fires", engine.FireView{}},
		{"Alert", "", engine.AlertView{}},
		{"Delivery", "", engine.DeliveryView{}},
	} {
		documented := props(c.schema, c.array)
		name := c.schema
		if c.array != "" {
			name += "." + c.array
		}
		for _, f := range jsonFields(reflect.TypeOf(c.view)) {
			if !documented[f] {
				t.Errorf("openapi.json: %s has no property %q, which %T writes", name, f, c.view)
			}
			delete(documented, f)
		}
		for f := range documented {
			t.Errorf("openapi.json: %s has a property %q that %T never writes", name, f, c.view)
		}
	}
}

// jsonFields are the JSON names of a struct's exported fields.
func jsonFields(typ reflect.Type) []string {
	var out []string
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

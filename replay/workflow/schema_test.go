package workflow

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// schemaBlind are workflow files Parse refuses for what no JSON Schema can
// see: relations between values. Every other file Parse refuses must fail
// the schema too.
var schemaBlind = map[string]string{
	"testdata/workflows/cycle.yaml":             "a dependency cycle",
	"testdata/workflows/unknown_dep.yaml":       "depends_on names a task that does not exist",
	"testdata/workflows/python_list_input.yaml": "input_type names a type of types that is a list, not an object",
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema))
	if err != nil {
		t.Fatalf("schema.json: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatalf("schema.json does not compile: %v", err)
	}
	return s
}

// schemaVerdict validates a YAML file against the schema: nil when valid.
func schemaVerdict(s *jsonschema.Schema, data []byte) error {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return err
	}
	j, err := json.Marshal(v)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

// TestSchemaAgreesWithParse: every file of examples/ and testdata/ that
// Parse accepts validates against the schema, and every file Parse refuses
// fails it, but for the relations a schema cannot see (schemaBlind).
func TestSchemaAgreesWithParse(t *testing.T) {
	s := compileSchema(t)
	root := filepath.Join("..", "..")
	var files []string
	for _, dir := range []string{"examples", "testdata"} {
		filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
				files = append(files, path)
			}
			return nil
		})
	}
	if len(files) < 10 {
		t.Fatalf("found %d workflow files under examples/ and testdata/", len(files))
	}
	for _, path := range files {
		rel, _ := filepath.Rel(root, path)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		_, parseErr := Parse(path, data)
		schemaErr := schemaVerdict(s, data)
		switch {
		case parseErr == nil && schemaErr != nil:
			t.Errorf("%s: Parse accepts it, the schema refuses it (fix replay/workflow/schema.json): %v", rel, schemaErr)
		case parseErr != nil && schemaErr == nil && schemaBlind[filepath.ToSlash(rel)] == "":
			t.Errorf("%s: Parse refuses it (%v), the schema accepts it: make schema.json refuse it, or list it in schemaBlind with what the schema cannot see", rel, parseErr)
		case parseErr == nil && schemaBlind[filepath.ToSlash(rel)] != "":
			t.Errorf("%s is listed in schemaBlind but Parse accepts it", rel)
		}
	}
}

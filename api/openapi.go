package api

import (
	_ "embed"
	"net/http"

	"github.com/orkwal/orkwal/replay/workflow"
)

// openAPI describes every endpoint (OpenAPI 3.1); docs/api.md is its prose
// form. A test checks that it names every registered route.
//
//go:embed openapi.json
var openAPI []byte

func serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(openAPI)
}

// serveWorkflowSchema answers the JSON Schema of workflow files (owned by
// replay/workflow, which parses them).
func serveWorkflowSchema(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/schema+json")
	w.WriteHeader(http.StatusOK)
	w.Write(workflow.Schema)
}

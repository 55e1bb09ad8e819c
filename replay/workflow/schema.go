package workflow

import _ "embed"

// Schema is the JSON Schema (draft 2020-12) of workflow files: their shape,
// for editors (yaml-language-server) and other tools. The daemon serves it
// at GET /schema/workflow.json. Parse stays the one validation: it checks
// all the schema does and what a schema cannot (dependencies, cycles,
// references, templates, types); TestSchemaAgreesWithParse keeps the two
// in step over every file of examples/ and testdata/.
//
//go:embed schema.json
var Schema []byte

package main

import (
	"encoding/json"
	"io"

	"github.com/kmapindex/kmapindex/bench"
	"github.com/kmapindex/kmapindex/ingest/attrib"
)

// jsonSchema names the version of the JSON documents kbench writes
// (docs/json.md; docs/kbench.schema.json validates them). A change that
// removes or redefines a field takes a new version; added fields do not.
const jsonSchema = "kbench/v1"

// jsonDocument is what "kbench run -json" and "kbench report -format
// json" write: the schema version and one of the two results.
type jsonDocument struct {
	Schema string             `json:"schema"`
	Run    []bench.RunResult  `json:"run,omitempty"`
	Report *attrib.JSONReport `json:"report,omitempty"`
}

// writeJSON writes doc, indented, with its schema version.
func writeJSON(w io.Writer, doc jsonDocument) error {
	doc.Schema = jsonSchema
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

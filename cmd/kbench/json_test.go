package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaPath is the JSON Schema of kbench's JSON documents.
const schemaPath = "../../docs/kbench.schema.json"

// schemaErr returns why doc is not valid against docs/kbench.schema.json
// (nil: valid).
func schemaErr(t *testing.T, doc []byte) error {
	t.Helper()
	sch, err := jsonschema.NewCompiler().Compile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	return sch.Validate(v)
}

// validate checks doc against docs/kbench.schema.json.
func validate(t *testing.T, doc []byte) {
	t.Helper()
	if err := schemaErr(t, doc); err != nil {
		t.Errorf("not valid against %s: %v", schemaPath, err)
	}
}

// Both JSON outputs are documents of the one schema, and the schema
// rejects what is not.
func TestJSONSchema(t *testing.T) {
	for _, name := range reportRecordings {
		out := mustReport(t, nil, "-format", "json", "-kallsyms", kallsymsSubset, name)
		validate(t, []byte(out))
		var doc jsonDocument
		if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Schema != jsonSchema || doc.Report == nil || doc.Run != nil {
			t.Errorf("%s: %v %+v", name, err, doc)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"run", "-json", "-gen=false", "-samples", "100"}, &out, &errb); code != 0 {
		t.Fatalf("run -json: exit %d: %s", code, errb.String())
	}
	validate(t, out.Bytes())

	// The schema is not vacuous: each of these breaks it.
	good := strings.TrimSpace(out.String())
	for _, bad := range []string{
		strings.Replace(good, `"schema": "kbench/v1"`, `"schema": "kbench/v2"`, 1),
		strings.Replace(good, `"identical": true`, `"identical": "yes"`, 1),
		strings.Replace(good, `"impl": "btree"`, `"impl": "hash"`, 1),
		strings.Replace(good, `"corpus"`, `"corpus_name"`, 1),
	} {
		if bad == good {
			t.Fatalf("mutation did not apply to:\n%s", good)
		}
		if schemaErr(t, []byte(bad)) == nil {
			t.Errorf("schema accepts %.200s", bad)
		}
	}
	if _, err := os.Stat("../../docs/json.md"); err != nil {
		t.Error("the schema's documentation is missing: ", err)
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The committed protocol types are what the committed schema generates: a schema changed without
// running the generator fails here (and in CI).
func TestTheCommittedTypesAreWhatTheSchemaGenerates(t *testing.T) {
	root := filepath.Join("..", "..")
	schema, err := os.ReadFile(filepath.Join(root, schemaPath))
	if err != nil {
		t.Fatal(err)
	}
	want, err := generate(schema)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, outPath))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("sdk/go/%s is not what %s generates: run `go run ./internal/protogen` in sdk/go and commit it", filepath.ToSlash(outPath), filepath.ToSlash(schemaPath))
	}
}

// Each kind of definition becomes its Go shape: a struct with its fields tagged (optional ones
// omitempty, a nullable one a pointer in what a client sends), a string union with its values as
// constants, a method name as a constant.
func TestDefinitionsBecomeGoTypes(t *testing.T) {
	schema := []byte(`{"x-protocol-version": "2000-01-01", "$defs": {
		"Thing": {"type": "object", "required": ["id"], "properties": {
			"id": {"type": "string"},
			"seq_count": {"type": ["integer", "null"], "format": "uint64"},
			"kind": {"$ref": "#/$defs/Kind"},
			"part": {"anyOf": [{"$ref": "#/$defs/Part"}, {"type": "null"}]}}},
		"Answer": {"type": "object", "properties": {"seq_count": {"type": ["integer", "null"], "format": "uint64"}, "part": {"$ref": "#/$defs/Part"}}},
		"Part": {"type": "object", "properties": {"n": {"type": ["integer", "null"], "format": "uint64"}}},
		"answer": {"properties": {"result": {"$ref": "#/$defs/Answer"}}},
		"Kind": {"oneOf": [{"const": "one", "type": "string"}, {"const": "two", "type": "string"}]},
		"request": {"oneOf": [{"properties": {"method": {"const": "thing/get"}, "params": {"$ref": "#/$defs/Thing"}}}]}}}`)
	out, err := generate(schema)
	if err != nil {
		t.Fatal(err)
	}
	// gofmt aligns fields: compared with single spaces.
	flat := []byte(strings.Join(strings.Fields(string(out)), " "))
	for _, want := range []string{
		`const Version = "2000-01-01"`,
		"ID string `json:\"id\"`",
		// Only a client sends Thing: absent (nil) and 0 or {} differ. It reads Answer, and Part
		// both ways: null reads as 0.
		"SeqCount *uint64 `json:\"seq_count,omitempty\"`",
		"Part *Part `json:\"part,omitempty\"`",
		"N uint64 `json:\"n,omitempty\"`",
		"Kind Kind `json:\"kind,omitempty\"`",
		`KindOne Kind = "one"`,
		`MethodThingGet = "thing/get"`,
	} {
		if !bytes.Contains(flat, []byte(want)) {
			t.Errorf("the generated source lacks %s:\n%s", want, out)
		}
	}
}

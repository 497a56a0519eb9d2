package seshat

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The Go types written by hand (the requests the SDK sends) against the protocol's schema,
// generated from the Rust types (host/protocol/protocol.schema.json): every JSON field a Go type
// writes is a property of the schema's definition, of a kind that fits, so a field renamed on
// either side fails here. The types the SDK reads are generated (package protocol).
func TestGoTypesMatchTheProtocolSchema(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "host", "protocol", "protocol.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Defs map[string]map[string]interface{} `json:"$defs"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	pairs := []struct {
		def string
		v   interface{}
	}{
		{"InitializeParams", initializeParams{}},
		{"ClientInfo", clientInfo{}},
		{"ToolDefinition", toolDefinition{}},
		{"ToolCallResult", toolCallResult{}},
		{"SessionExportResult", struct {
			JSONL string `json:"jsonl"`
		}{}},
	}
	for _, p := range pairs {
		def, ok := schema.Defs[p.def]
		if !ok {
			t.Errorf("the schema has no definition %s", p.def)
			continue
		}
		props, _ := def["properties"].(map[string]interface{})
		typ := reflect.TypeOf(p.v)
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			name := strings.Split(f.Tag.Get("json"), ",")[0]
			if name == "" || name == "-" {
				continue
			}
			prop, ok := props[name].(map[string]interface{})
			if !ok {
				t.Errorf("%s.%s: the schema's %s has no property %q", typ.Name(), f.Name, p.def, name)
				continue
			}
			if want := kinds(prop); want != nil && !fits(f.Type, want) {
				t.Errorf("%s.%s (%s): the schema's %s.%s is %v", typ.Name(), f.Name, f.Type, p.def, name, want)
			}
		}
	}
}

// kinds is the JSON types a property allows ("type" as a string or a list), or nil when it says
// none (a reference or a combination, checked by the types it names).
func kinds(prop map[string]interface{}) []string {
	switch v := prop["type"].(type) {
	case string:
		return []string{v}
	case []interface{}:
		var out []string
		for _, k := range v {
			if s, ok := k.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// fits reports whether a Go type can hold one of the JSON kinds.
func fits(t reflect.Type, want []string) bool {
	for _, k := range want {
		switch k {
		case "string":
			if t.Kind() == reflect.String {
				return true
			}
		case "integer":
			switch t.Kind() {
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
				return true
			}
		case "number":
			if t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64 {
				return true
			}
		case "boolean":
			if t.Kind() == reflect.Bool {
				return true
			}
		case "array":
			if t.Kind() == reflect.Slice && t != reflect.TypeOf(json.RawMessage{}) {
				return true
			}
		case "object":
			if t.Kind() == reflect.Struct || t.Kind() == reflect.Map || t == reflect.TypeOf(json.RawMessage{}) {
				return true
			}
		}
	}
	// A raw message holds anything.
	return t == reflect.TypeOf(json.RawMessage{})
}

// The version this SDK speaks is the one the protocol's schema was generated for: a protocol
// bump without the SDK's fails here.
func TestTheSDKSpeaksTheSchemasProtocolVersion(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "host", "protocol", "protocol.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Version string `json:"x-protocol-version"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Version != ProtocolVersion {
		t.Fatalf("the schema is protocol %q, the SDK speaks %q", schema.Version, ProtocolVersion)
	}
}

package seshat

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

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

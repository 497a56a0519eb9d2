package seshat_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// Every stable code the protocol documents has a sentinel in errors.go, for errors.Is.
func TestEveryDocumentedCodeHasASentinel(t *testing.T) {
	_, here, _, _ := runtime.Caller(0)
	dir := filepath.Dir(here)
	doc, err := os.ReadFile(filepath.Join(dir, "../../host/protocol/protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "a stable string scripts match on:")
	end := strings.Index(text[start:], "— the codes")
	if start < 0 || end < 0 {
		t.Fatal("protocol.md no longer lists the stable codes where this test reads them")
	}
	var documented []string
	for i, part := range strings.Split(text[start:start+end], "`") {
		if i%2 == 1 {
			documented = append(documented, part)
		}
	}
	file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, "errors.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	sentinels := map[string]bool{}
	ast.Inspect(file, func(n ast.Node) bool {
		if kv, ok := n.(*ast.KeyValueExpr); ok {
			if key, ok := kv.Key.(*ast.Ident); ok && key.Name == "Code" {
				if lit, ok := kv.Value.(*ast.BasicLit); ok {
					code, _ := strconv.Unquote(lit.Value)
					sentinels[code] = true
				}
			}
		}
		return true
	})
	if len(documented) < 10 {
		t.Fatalf("only %d codes read from protocol.md: %v", len(documented), documented)
	}
	for _, code := range documented {
		if !sentinels[code] {
			t.Errorf("protocol.md documents %q, which has no sentinel in errors.go", code)
		}
	}
}

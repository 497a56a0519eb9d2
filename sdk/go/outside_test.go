package seshat_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A Go program outside the repository uses the SDK as the README says: the require and replace
// lines, the import line, the package named seshat.
func TestAProgramOutsideTheRepositoryUsesTheReadmesImportLine(t *testing.T) {
	_, here, _, _ := runtime.Caller(0)
	sdk := filepath.Dir(here)
	dir := t.TempDir()
	gomod := "module example.test/user\n\ngo 1.19\n\n" +
		"require example.invalid/seshat/sdk/go/seshat v0.0.0\n" +
		"replace example.invalid/seshat/sdk/go/seshat => " + sdk + "\n"
	main := `package main

import (
	"context"
	"fmt"

	"example.invalid/seshat/sdk/go/seshat"
)

func main() {
	_, err := seshat.NewClient(context.Background(), seshat.ClientConfig{Window: 1024, Binary: "/nonexistent"})
	fmt.Println(err)
}
`
	for name, text := range map[string]string{"go.mod": gomod, "main.go": main} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "run", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "ClientConfig.Window is 1024 tokens") {
		t.Fatalf("the program's output: %s", out)
	}
}

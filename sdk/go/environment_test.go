package seshat_test

import (
	"context"
	"net/http"
	"testing"
)

// The developer's own Seshat settings never reach a test's client: with a database URL, a remote
// service and a token set in this process's environment (all pointing nowhere), a client still
// runs its turn on the test's own store.
func TestTheDevelopersSeshatEnvironmentIsNotInherited(t *testing.T) {
	t.Setenv("SESHAT_DATABASE_URL", "postgres://nobody@/nowhere?host=/nonexistent-socket-dir")
	t.Setenv("SESHAT_REMOTE", "ws://127.0.0.1:9")
	t.Setenv("SESHAT_TOKEN", "seshat_0000000000000000_"+"00000000000000000000000000000000000000000000000000000000000000ff")
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		text(w, req, "Local.")
	})
	c := startLocal(t, config(t, f, ""))
	s, err := c.NewSession(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	stream, err := s.Send(context.Background(), "hi")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := stream.Wait(); err != nil || out.Text != "Local." {
		t.Fatalf("%+v, %v", out, err)
	}
}

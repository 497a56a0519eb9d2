package seshat_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	. "example.invalid/seshat/sdk/go/seshat"
	"example.invalid/seshat/sdk/go/seshat/protocol"
)

func TestHooksRegisteredAsGoFunctionsGuardToolsAndAddContext(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		switch n {
		case 1:
			toolCall(w, "call_1", "shell", `{"command":"rm -rf /"}`)
		case 2:
			toolCall(w, "call_2", "shell", `{"command":"ls"}`)
		default:
			text(w, req, "Listed.")
		}
	})
	c := start(t, config(t, f, ""))
	ran := make(chan string, 8)
	err := c.RegisterTool("shell", "Runs a shell command.", json.RawMessage(`{"type":"object"}`),
		func(ctx context.Context, args json.RawMessage) (string, error) {
			ran <- string(args)
			return "a.txt", nil
		})
	if err != nil {
		t.Fatal(err)
	}
	prompts := make(chan string, 8)
	hooks := []Hook{
		{Event: protocol.HookEventSessionStart, Name: "notes", Run: func(ctx context.Context, call HookCall) (protocol.HookDecision, error) {
			return protocol.HookDecision{Context: "The Go program says: the build directory is precious."}, nil
		}},
		{Event: protocol.HookEventUserPrompt, Name: "log", Run: func(ctx context.Context, call HookCall) (protocol.HookDecision, error) {
			var prompt string
			if err := call.Field("prompt", &prompt); err != nil {
				return protocol.HookDecision{}, err
			}
			prompts <- prompt
			return protocol.HookDecision{}, nil
		}},
		{Event: protocol.HookEventPreTool, Name: "guard", Matcher: "shell", Run: func(ctx context.Context, call HookCall) (protocol.HookDecision, error) {
			var args struct {
				Command string `json:"command"`
			}
			if err := call.Field("arguments", &args); err != nil {
				return protocol.HookDecision{}, err
			}
			if strings.Contains(args.Command, "rm -rf") {
				return protocol.HookDecision{Decision: protocol.VerdictBlock, Reason: "the Go guard refuses rm -rf"}, nil
			}
			return protocol.HookDecision{}, nil
		}},
		{Event: protocol.HookEventPostTool, Name: "broken", Run: func(ctx context.Context, call HookCall) (protocol.HookDecision, error) {
			return protocol.HookDecision{}, errors.New("the post_tool hook's own bug")
		}},
	}
	for _, h := range hooks {
		if err := c.RegisterHook(h); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.RegisterHook(hooks[0]); err == nil {
		t.Fatal("a second hook of the same name was accepted")
	}
	if err := c.RegisterHook(Hook{Event: protocol.HookEventFork, Name: "hasty", Timeout: time.Microsecond, Run: hooks[0].Run}); err == nil || !strings.Contains(err.Error(), "give 1ms to 10m") {
		t.Fatalf("a timeout under a millisecond: %v", err)
	}
	ctx := context.Background()
	s, err := c.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := s.Send(ctx, "list the files")
	if err != nil {
		t.Fatal(err)
	}
	out, err := stream.Wait()
	if err != nil || out.Text != "Listed." {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	close(prompts)
	var seen []string
	for p := range prompts {
		seen = append(seen, p)
	}
	if len(seen) != 1 || seen[0] != "list the files" {
		t.Fatalf("the user_prompt hook saw %q", seen)
	}
	close(ran)
	var calls []string
	for a := range ran {
		calls = append(calls, a)
	}
	if len(calls) != 1 || !strings.Contains(calls[0], `"ls"`) {
		t.Fatalf("the guarded tool ran for %q, want only ls", calls)
	}
	first, _ := json.Marshal(f.request(0)["messages"])
	if !strings.Contains(string(first), "the build directory is precious") {
		t.Fatalf("session_start's context did not reach the model: %s", first)
	}
	second, _ := json.Marshal(f.request(1)["messages"])
	if !strings.Contains(string(second), "the Go guard refuses rm -rf") {
		t.Fatalf("the block did not reach the model as the tool's error: %s", second)
	}
	if warned := strings.Join(out.Warnings, "\n"); !strings.Contains(warned, "the post_tool hook's own bug") {
		t.Fatalf("the failing hook was not reported: %q", out.Warnings)
	}
	if err := c.RegisterHook(Hook{Event: protocol.HookEventFork, Name: "late", Run: hooks[0].Run}); !errors.Is(err, ErrToolsAnnounced) {
		t.Fatalf("registering after the client started: %v, want ErrToolsAnnounced", err)
	}
}

package seshat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fake is a loopback OpenAI-compatible server: each /v1/chat/completions request is answered by
// the test's reply function, streamed as server-sent events when the request asks to stream.
type fake struct {
	t        *testing.T
	srv      *httptest.Server
	mu       sync.Mutex
	requests []map[string]interface{}
	reply    func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request)
}

func newFake(t *testing.T, reply func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request)) *fake {
	f := &fake{t: t, reply: reply}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		if got := r.Header.Get("Authorization"); got != "Bearer sk-go-test" {
			t.Errorf("authorization header %q", got)
		}
		body, _ := io.ReadAll(r.Body)
		var req map[string]interface{}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Errorf("request body is not JSON: %v", err)
		}
		f.mu.Lock()
		f.requests = append(f.requests, req)
		n := len(f.requests)
		f.mu.Unlock()
		f.reply(n, req, w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) request(i int) map[string]interface{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.requests) {
		f.t.Fatalf("only %d requests reached the provider", len(f.requests))
	}
	return f.requests[i]
}

func (f *fake) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

// text answers with the text, streamed in pieces or whole as the request asks.
func text(w http.ResponseWriter, req map[string]interface{}, pieces ...string) {
	if req["stream"] != true {
		all := strings.Join(pieces, "")
		w.Header().Set("content-type", "application/json")
		fmt.Fprintf(w, `{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":10}}`, all)
		return
	}
	w.Header().Set("content-type", "text/event-stream")
	for _, p := range pieces {
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", p)
		w.(http.Flusher).Flush()
	}
	fmt.Fprint(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
}

func toolCall(w http.ResponseWriter, id, name, args string) {
	w.Header().Set("content-type", "text/event-stream")
	fmt.Fprintf(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":%q,\"type\":\"function\",\"function\":{\"name\":%q,\"arguments\":%q}}]}}]}\n\n", id, name, args)
	fmt.Fprint(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n")
}

// binary is the seshat debug build of this repository (cargo test builds it).
func binary(t *testing.T) string {
	if b := os.Getenv("SESHAT_BIN"); b != "" {
		return b
	}
	b, _ := filepath.Abs("../../target/debug/seshat")
	if _, err := os.Stat(b); err != nil {
		t.Fatalf("no seshat binary at %s: run `cargo build -p seshat` (or set SESHAT_BIN)", b)
	}
	return b
}

// config is a client configuration for a fresh home pointing the openai provider at f.
func config(t *testing.T, f *fake, extra string) ClientConfig {
	home := t.TempDir()
	cfg := fmt.Sprintf("[plugins]\nprovider = \"openai\"\n[chat]\nmax_output_tokens = 1000\n[providers.openai]\nbase_url = \"%s/v1\"\nmax_retries = 0\nfirst_byte_timeout_secs = 30\n%s", f.srv.URL, extra)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(home, "project")
	if err := os.MkdirAll(filepath.Join(project, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	return ClientConfig{
		AutoCompact: true, Model: "gpt-4o", Binary: binary(t), ProjectDir: project,
		Env: []string{"SESHAT_HOME=" + home, "OPENAI_API_KEY=sk-go-test", "GIT_CEILING_DIRECTORIES=" + home},
	}
}

func start(t *testing.T, cfg ClientConfig) *Client {
	c, err := NewClient(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestAStreamedTurn(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		text(w, req, "Hel", "lo ", "there.")
	})
	c := start(t, config(t, f, ""))
	ctx := context.Background()
	s, err := c.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := s.Send(ctx, "Say hello")
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for ev := range stream.Events() {
		if ev.Kind == TextDelta {
			got.WriteString(ev.Text)
		}
	}
	out, err := stream.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != "Hello there." || out.Text != "Hello there." {
		t.Fatalf("deltas %q, outcome %q", got.String(), out.Text)
	}
	history, err := s.History(ctx)
	if err != nil || len(history) != 2 || history[1].Role != "assistant" {
		t.Fatalf("history %v, %v", history, err)
	}
	sessions, err := c.Sessions(ctx)
	if err != nil || len(sessions) != 1 || sessions[0].ID != s.ID {
		t.Fatalf("sessions %v, %v", sessions, err)
	}
	last := f.request(0)["messages"].([]interface{})
	if m := last[len(last)-1].(map[string]interface{}); m["content"] != "Say hello" {
		t.Fatalf("the provider got %v", m)
	}
}

func TestAToolRoundTrip(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			toolCall(w, "call_1", "lookup", `{"key":"answer"}`)
			return
		}
		text(w, req, "It is 42.")
	})
	c := start(t, config(t, f, ""))
	var seen json.RawMessage
	c.RegisterTool("lookup", json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"}}}`),
		func(ctx context.Context, args json.RawMessage) (string, error) {
			seen = args
			return "42", nil
		})
	ctx := context.Background()
	s, err := c.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := s.Send(ctx, "what is the answer?")
	if err != nil {
		t.Fatal(err)
	}
	var results []Event
	for ev := range stream.Events() {
		if ev.Kind == ToolResult {
			results = append(results, ev)
		}
	}
	out, err := stream.Wait()
	if err != nil || out.Text != "It is 42." {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	if string(seen) != `{"key":"answer"}` || len(results) != 1 || results[0].Text != "42" {
		t.Fatalf("tool saw %s; results %+v", seen, results)
	}
	second, _ := json.Marshal(f.request(1)["messages"])
	if !strings.Contains(string(second), `"42"`) {
		t.Fatalf("the tool's answer did not reach the model: %s", second)
	}
}

// blocking streams one delta, then holds the answer until the request is cancelled.
func blocking(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("content-type", "text/event-stream")
	fmt.Fprint(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Partial\"},\"finish_reason\":null}]}\n\n")
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

func TestCancellingTheContextInterruptsTheTurnAndABusySessionIsRefused(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			blocking(w, r)
			return
		}
		text(w, req, "Back.")
	})
	c := start(t, config(t, f, ""))
	s, err := c.NewSession(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := s.Send(ctx, "go")
	if err != nil {
		t.Fatal(err)
	}
	for ev := range stream.Events() {
		if ev.Kind == TextDelta {
			break
		}
	}
	if _, err := s.Send(context.Background(), "again"); !errors.Is(err, ErrSessionBusy) {
		t.Fatalf("a second turn: %v, want ErrSessionBusy", err)
	}
	cancel()
	out, err := stream.Wait()
	if !errors.Is(err, ErrInterrupted) || !out.Interrupted {
		t.Fatalf("outcome %+v, %v; want interrupted", out, err)
	}
	again, err := s.Send(context.Background(), "once more")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := again.Wait(); err != nil || out.Text != "Back." {
		t.Fatalf("after the interruption: %+v, %v", out, err)
	}
	history, _ := s.History(context.Background())
	if len(history) != 4 || history[1].Status != "interrupted" {
		t.Fatalf("history %+v", history)
	}
}

func TestCompactFullIsErrCompactFull(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		text(w, req, "unreachable")
	})
	cfg := config(t, f, "")
	cfg.Window = 4096
	c := start(t, cfg)
	s, err := c.NewSession(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	stream, err := s.Send(context.Background(), strings.Repeat("a long pasted log line ", 2000))
	if err == nil {
		_, err = stream.Wait()
	}
	if !errors.Is(err, ErrCompactFull) {
		t.Fatalf("got %v, want ErrCompactFull", err)
	}
	if f.count() != 0 {
		t.Fatalf("%d requests were sent", f.count())
	}
}

// TestMain runs the helper client when asked (TestResumeAfterTheClientIsKilled).
func TestMain(m *testing.M) {
	if os.Getenv("SESHAT_GO_HELPER") == "1" {
		helper()
		return
	}
	os.Exit(m.Run())
}

// helper starts a turn that never finishes, says its session's id, and waits to be killed.
func helper() {
	var cfg ClientConfig
	if err := json.Unmarshal([]byte(os.Getenv("SESHAT_GO_CONFIG")), &cfg); err != nil {
		panic(err)
	}
	c, err := NewClient(context.Background(), cfg)
	if err != nil {
		panic(err)
	}
	s, err := c.NewSession(context.Background())
	if err != nil {
		panic(err)
	}
	stream, err := s.Send(context.Background(), "a turn about to be cut")
	if err != nil {
		panic(err)
	}
	for ev := range stream.Events() {
		if ev.Kind == TextDelta {
			fmt.Println(s.ID)
			break
		}
	}
	select {}
}

func TestResumeAfterTheClientIsKilled(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			blocking(w, r)
			return
		}
		text(w, req, "Resumed.")
	})
	cfg := config(t, f, "")
	raw, _ := json.Marshal(cfg)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SESHAT_GO_HELPER=1", "SESHAT_GO_CONFIG="+string(raw))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: false}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 27)
	if _, err := io.ReadFull(out, line); err != nil {
		t.Fatalf("the helper said nothing: %v", err)
	}
	id := strings.TrimSpace(string(line))
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	// Its `seshat serve` saw its stdin close: it stores the cut-short turn and exits. Resuming
	// waits for that: the session's history holds the interrupted answer.
	c := start(t, cfg)
	s, err := c.Resume(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	var history []Message
	for {
		history, err = s.History(context.Background())
		if err == nil && len(history) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cut-short turn was not stored: %+v, %v", history, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if history[1].Status != "interrupted" {
		t.Fatalf("history %+v", history)
	}
	stream, err := s.Send(context.Background(), "go on")
	if err != nil {
		t.Fatal(err)
	}
	if o, err := stream.Wait(); err != nil || o.Text != "Resumed." {
		t.Fatalf("%+v, %v", o, err)
	}
}

// TestAutoCompactAndTheSummaryModel: on a 4,096-token window a long answer fills the session;
// with AutoCompact the next turn compacts first, its summary written by CompactSummaryModel;
// without it, nothing is compacted.
func TestAutoCompactAndTheSummaryModel(t *testing.T) {
	for _, auto := range []bool{true, false} {
		f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
			if req["model"] == "summ-model" {
				text(w, req, "Summary: the user asked for a long story; it was told.")
				return
			}
			if n == 1 {
				text(w, req, strings.Repeat("A long story goes on and on. ", 500))
				return
			}
			text(w, req, "Short.")
		})
		cfg := config(t, f, "")
		cfg.Window = 4096
		cfg.AutoCompact = auto
		cfg.CompactSummaryModel = "summ-model"
		c := start(t, cfg)
		s, err := c.NewSession(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for i, prompt := range []string{"tell me a long story", "and then?"} {
			stream, err := s.Send(context.Background(), prompt)
			if err != nil {
				t.Fatal(err)
			}
			var compactions []Event
			for ev := range stream.Events() {
				if ev.Kind == Compaction {
					compactions = append(compactions, ev)
				}
			}
			out, err := stream.Wait()
			if i == 0 {
				continue
			}
			summaries := 0
			for j := 0; j < f.count(); j++ {
				if f.request(j)["model"] == "summ-model" {
					summaries++
				}
			}
			if auto {
				if err != nil || len(out.Compactions) == 0 || len(compactions) == 0 || !out.Compactions[0].Summarised {
					t.Fatalf("AutoCompact: %+v, %v, events %+v", out, err, compactions)
				}
				if summaries != 1 || out.Compactions[0].SummaryModel != "summ-model" {
					t.Fatalf("the summary model: %d requests, report %+v", summaries, out.Compactions[0])
				}
			} else if len(out.Compactions) != 0 || len(compactions) != 0 || summaries != 0 {
				t.Fatalf("without AutoCompact nothing is compacted: %+v, %v", out, err)
			}
		}
	}
}

package seshat_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	. "example.invalid/seshat/sdk/go/seshat"
	"example.invalid/seshat/sdk/go/seshat/protocol"
)

// fake is a loopback OpenAI-compatible server: each /v1/chat/completions request is answered by
// the reply function, streamed as server-sent events when the request asks to stream; the token
// counters local servers offer answer 404. What it finds wrong with a request goes to errorf.
type fake struct {
	errorf func(format string, args ...interface{})
	srv    *httptest.Server
	mu     sync.Mutex
	bodies [][]byte // every request's body, as it came
	reply  func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request)
}

// newFake starts a fake for a test, closed when it ends.
func newFake(t *testing.T, reply func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request)) *fake {
	f := serveFake(t.Errorf, reply)
	t.Cleanup(f.srv.Close)
	return f
}

func serveFake(errorf func(string, ...interface{}), reply func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request)) *fake {
	f := &fake{errorf: errorf, reply: reply}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/tokenize" || r.URL.Path == "/extras/tokenize/count" {
			// Like Ollama, this server has no token counter: Seshat tries each once, then estimates.
			http.NotFound(w, r)
			return
		}
		if r.URL.Path != "/v1/chat/completions" {
			f.errorf("the provider was asked for %s", r.URL.Path)
			http.NotFound(w, r)
			return
		}
		if got := r.Header.Get("Authorization"); got != "Bearer sk-go-test" {
			f.errorf("authorization header %q", got)
		}
		body, _ := io.ReadAll(r.Body)
		var req map[string]interface{}
		if err := json.Unmarshal(body, &req); err != nil {
			f.errorf("request body is not JSON: %v", err)
		}
		f.mu.Lock()
		f.bodies = append(f.bodies, body)
		n := len(f.bodies)
		f.mu.Unlock()
		f.reply(n, req, w, r)
	}))
	return f
}

func (f *fake) request(i int) map[string]interface{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.bodies) {
		panic(fmt.Sprintf("only %d requests reached the provider", len(f.bodies)))
	}
	var req map[string]interface{}
	_ = json.Unmarshal(f.bodies[i], &req) // the handler reported a body that is not JSON
	return req
}

// lastBody is the body of the latest request, as it came.
func (f *fake) lastBody() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[len(f.bodies)-1]
}

func (f *fake) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
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

// binary is the seshat debug build of this repository (cargo test builds it), or SESHAT_BIN.
func binary() (string, error) {
	if b := os.Getenv("SESHAT_BIN"); b != "" {
		return b, nil
	}
	b, _ := filepath.Abs("../../target/debug/seshat")
	if _, err := os.Stat(b); err != nil {
		return "", fmt.Errorf("no seshat binary at %s: run `cargo build -p seshat` (or set SESHAT_BIN)", b)
	}
	return b, nil
}

// configIn is a client configuration for a fresh Seshat home in dir pointing the openai
// provider at f, with extra lines of config.toml.
func configIn(dir string, f *fake, extra string) (ClientConfig, error) {
	bin, err := binary()
	if err != nil {
		return ClientConfig{}, err
	}
	cfg := fmt.Sprintf("[plugins]\nprovider = \"openai\"\n[chat]\nmax_output_tokens = 1000\n[providers.openai]\nbase_url = \"%s/v1\"\nmax_retries = 0\nfirst_byte_timeout_secs = 30\n%s", f.srv.URL, extra)
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600); err != nil {
		return ClientConfig{}, err
	}
	project := filepath.Join(dir, "project")
	if err := os.MkdirAll(filepath.Join(project, ".git"), 0o755); err != nil {
		return ClientConfig{}, err
	}
	return ClientConfig{
		AutoCompact: true, Model: "gpt-4o", Binary: bin, ProjectDir: project,
		// Nothing of the developer's own Seshat reaches the test's: no database URL, no remote
		// service, no token (an empty value is no value; later entries win).
		Env: []string{"SESHAT_HOME=" + dir, "OPENAI_API_KEY=sk-go-test", "GIT_CEILING_DIRECTORIES=" + dir,
			"SESHAT_DATABASE_URL=", "SESHAT_REMOTE=", "SESHAT_TOKEN="},
	}, nil
}

// config is configIn for a test, in its temporary directory.
func config(t testing.TB, f *fake, extra string) ClientConfig {
	cfg, err := configIn(t.TempDir(), f, extra)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func start(t *testing.T, cfg ClientConfig) *Client {
	if remoteMode {
		cfg = remoteConfig(t, cfg)
	}
	return startLocal(t, cfg)
}

// startLocal is start with cfg as it is, in either mode.
func startLocal(t *testing.T, cfg ClientConfig) *Client {
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
	err := c.RegisterTool("lookup", "Looks a key up in this program's table.", json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"}}}`),
		func(ctx context.Context, args json.RawMessage) (string, error) {
			seen = args
			return "42", nil
		})
	if err != nil {
		t.Fatal(err)
	}
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
	if string(seen) != `{"key":"answer"}` || len(results) != 1 || results[0].Text != "42" || results[0].CallID != "call_1" {
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

// A message that cannot fit the window even alone is refused before anything is sent or stored.
func TestAMessageTooLargeForTheWindowIsErrMessageTooLarge(t *testing.T) {
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
	if !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("got %v, want ErrMessageTooLarge", err)
	}
	if f.count() != 0 {
		t.Fatalf("%d requests were sent", f.count())
	}
}

// longStory is a fake whose model tells a long story first, then answers shortly; summ-model
// summarises.
func longStory(t *testing.T) *fake {
	return newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
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
}

// TestAutoCompactAndTheSummaryModel: on a 4,096-token window a long answer fills the session;
// with AutoCompact the next turn compacts first, its summary written by CompactSummaryModel;
// without it, nothing is compacted.
func TestAutoCompactAndTheSummaryModel(t *testing.T) {
	for _, auto := range []bool{true, false} {
		f := longStory(t)
		// Summaries on the path (written in the background by default: TestABackgroundSummary).
		cfg := config(t, f, "[compaction]\nbackground = false\n")
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
				if ev.Kind == Compaction || ev.Kind == CompactionStarted || ev.Kind == CompactionSummarising {
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
				if err != nil || len(out.Compactions) == 0 || len(compactions) != 3 || !out.Compactions[0].Summarised {
					t.Fatalf("AutoCompact: %+v, %v, events %+v", out, err, compactions)
				}
				// Announced (with what was in use) before it ran, then what it would summarise
				// before the summary model was asked, then reported.
				started, notice, done := compactions[0], compactions[1], compactions[2]
				if started.Kind != CompactionStarted || started.Window != 4096 || started.Tokens <= 2048 || done.Kind != Compaction || done.Report == nil {
					t.Fatalf("the compaction's events: %+v", compactions)
				}
				sum := notice.Summarising
				if notice.Kind != CompactionSummarising || sum == nil || sum.Marks.Window != 4096 || sum.Tokens != started.Tokens || sum.Tokens <= sum.Marks.Threshold || sum.Model != "summ-model" {
					t.Fatalf("the notice before the summary: %+v", notice)
				}
				// It named what then left the view: the first turn (the request and its long answer).
				if len(sum.Seqs) != 1 || sum.Seqs[0].From != 1 || sum.Seqs[0].Through != 2 || sum.Messages != 2 || !reflect.DeepEqual(sum.Seqs, done.Report.SummarisedSeqs) {
					t.Fatalf("what would be summarised: %+v, then %+v", sum, done.Report)
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

// TestABackgroundSummary: by default the service writes the summary in the background. The turn
// that leaves the session past the early mark tells what will be summarised, marked Background,
// and ends without it; the next turn, whose request would not fit without it, reports it swapped
// in before its answer.
func TestABackgroundSummary(t *testing.T) {
	f := longStory(t)
	cfg := config(t, f, "")
	cfg.Window = 4096
	cfg.CompactSummaryModel = "summ-model"
	between := make(chan Event, 16)
	cfg.OnBackground = func(session string, e Event) { between <- e }
	c := start(t, cfg)
	s, err := c.NewSession(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	send := func(prompt string) []Event {
		stream, err := s.Send(context.Background(), prompt)
		if err != nil {
			t.Fatal(err)
		}
		var mine []Event
		for ev := range stream.Events() {
			if ev.Kind == Compaction || ev.Kind == CompactionSummarising {
				mine = append(mine, ev)
			}
		}
		if _, err := stream.Wait(); err != nil {
			t.Fatal(err)
		}
		return mine
	}
	first := send("tell me a long story")
	if len(first) != 1 || first[0].Kind != CompactionSummarising || first[0].Summarising == nil || first[0].Summarising.Background != protocol.BackgroundReasonEarlyMark {
		t.Fatalf("the first turn's notice: %+v", first)
	}
	// Written, the summary is swapped in between turns, with no turn asked.
	var swapped Event
	select {
	case swapped = <-between:
	case <-time.After(time.Minute):
		t.Fatal("no summary was swapped in between turns")
	}
	r := swapped.Report
	if swapped.Kind != Compaction || r == nil || r.Background.Reason != protocol.BackgroundReasonEarlyMark || r.Background.SnapshotSeq != 2 || !r.Summarised || !reflect.DeepEqual(r.SummarisedSeqs, first[0].Summarising.Seqs) {
		t.Fatalf("swapped in: %+v", swapped)
	}
	if second := send("and then?"); len(second) != 0 {
		t.Fatalf("nothing left to compact at the second turn: %+v", second)
	}
	view, err := s.LiveView(context.Background())
	if err != nil || len(view) == 0 || view[0].Origin != "summary" {
		t.Fatalf("the view begins with the summary: %+v, %v", view, err)
	}
}

func TestNotesAreSetListedAndSearched(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		t.Errorf("notes need no model")
	})
	c := start(t, config(t, f, ""))
	ctx := context.Background()
	m := c.Memory()
	if _, err := m.SetNote(ctx, "", "style", "long answers"); err != nil {
		t.Fatal(err)
	}
	note, err := m.SetNote(ctx, "user", "style", "short answers")
	if err != nil || note.Key != "style" || note.Scope != "user" || note.UpdatedAt == 0 {
		t.Fatalf("set: %+v, %v", note, err)
	}
	if _, err := m.SetNote(ctx, "cross", "editor", "helix"); err != nil {
		t.Fatal(err)
	}
	notes, err := m.Notes(ctx, "user")
	if err != nil || len(notes) != 1 || notes[0].Value != "short answers" {
		t.Fatalf("the user's notes (one, replaced): %+v, %v", notes, err)
	}
	found, err := m.SearchNotes(ctx, "", "HELIX")
	if err != nil || len(found) != 1 || found[0].Key != "editor" || found[0].Scope != "cross" {
		t.Fatalf("search: %+v, %v", found, err)
	}
	var e *Error
	if _, err := m.Notes(ctx, "team"); !errors.As(err, &e) || e.Code != "invalid_params" || !strings.Contains(e.Message, "team") {
		t.Fatalf("a scope that does not exist: %v", err)
	}
}

func TestSendWithAContextAlreadyDoneSendsNothing(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		text(w, req, "Paid for.")
	})
	c := start(t, config(t, f, ""))
	s, err := c.NewSession(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Send(ctx, "never sent"); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("Send with a done context: %v, want ErrInterrupted", err)
	}
	// Nothing reached the provider and nothing was stored; the session takes the next turn.
	history, err := s.History(context.Background())
	if err != nil || len(history) != 0 {
		t.Fatalf("history %+v, %v; want empty", history, err)
	}
	stream, err := s.Send(context.Background(), "now")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := stream.Wait(); err != nil || out.Text != "Paid for." {
		t.Fatalf("the next turn: %+v, %v", out, err)
	}
	f.mu.Lock()
	n := len(f.bodies)
	f.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d requests reached the provider, want 1 (the second turn's)", n)
	}
}

func TestAStreamLosesNoEventWhileNobodyReads(t *testing.T) {
	pieces := make([]string, 3000)
	for i := range pieces {
		pieces[i] = fmt.Sprintf("w%d ", i)
	}
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		text(w, req, pieces...)
	})
	c := start(t, config(t, f, ""))
	s, err := c.NewSession(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	stream, err := s.Send(context.Background(), "talk")
	if err != nil {
		t.Fatal(err)
	}
	// Nobody reads until the turn is over: every event waits in the stream.
	out, err := stream.Wait()
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	deltas := 0
	for stream.Next() {
		if ev := stream.Current(); ev.Kind == TextDelta {
			deltas++
			got.WriteString(ev.Text)
		}
	}
	if stream.Err() != nil || deltas != len(pieces) || got.String() != out.Text {
		t.Fatalf("%d of %d deltas (%v); the text read differs from the answer: %v", deltas, len(pieces), stream.Err(), got.String() != out.Text)
	}
}

func TestToolsNeedADescriptionComeFirstAndStopWithTheirTurn(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			toolCall(w, "call_1", "wait", `{}`)
			return
		}
		text(w, req, "Stopped.")
	})
	c := start(t, config(t, f, ""))
	schema := json.RawMessage(`{"type":"object"}`)
	if err := c.RegisterTool("wait", "", schema, nil); err == nil {
		t.Fatal("a tool without a description was accepted")
	}
	running := make(chan struct{})
	cancelled := make(chan error, 1)
	err := c.RegisterTool("wait", "Waits until the turn is interrupted.", schema, func(ctx context.Context, _ json.RawMessage) (string, error) {
		close(running)
		<-ctx.Done()
		cancelled <- ctx.Err()
		return "", ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.NewSession(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RegisterTool("late", "Too late.", schema, nil); !errors.Is(err, ErrToolsAnnounced) {
		t.Fatalf("registering after the client started: %v, want ErrToolsAnnounced", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := s.Send(ctx, "wait for it")
	if err != nil {
		t.Fatal(err)
	}
	<-running
	cancel()
	if got := <-cancelled; !errors.Is(got, context.Canceled) {
		t.Fatalf("the tool's context: %v", got)
	}
	if _, err := stream.Wait(); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("the turn: %v, want ErrInterrupted", err)
	}
}

func TestNewClientChecksWhatItCanBeforeStarting(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewClient(done, ClientConfig{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a done context: %v", err)
	}
	_, err := NewClient(context.Background(), ClientConfig{Window: 2048, Binary: "/nonexistent/seshat"})
	if err == nil || !strings.Contains(err.Error(), "ClientConfig.Window is 2048 tokens") {
		t.Fatalf("a window below the minimum: %v", err)
	}
}

func TestNewClientRefusesAProviderTheServerCannotSelect(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
	})
	cfg := config(t, f, "")
	cfg.Provider = "nope"
	_, err := NewClient(context.Background(), cfg)
	var e *Error
	if !errors.As(err, &e) || e.Code != "invalid_config" {
		t.Fatalf("an unknown provider: %v", err)
	}
	for _, want := range []string{`ClientConfig.Provider is "nope"`, "anthropic", "openai"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("the error does not name %q: %s", want, e.Message)
		}
	}
	// A provider the server has is accepted, and the client works.
	cfg.Provider = "openai"
	c, err := NewClient(context.Background(), cfg)
	if err != nil {
		t.Fatalf("a configured provider: %v", err)
	}
	defer c.Close()
	if _, err := c.Sessions(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bodies) != 0 {
		t.Fatalf("nothing is sent to the provider: %d requests", len(f.bodies))
	}
}

// TestForkAndRewind: two turns, a fork after the first (the fork's next request carries only
// the first exchange), a rewind of the latest request (its text comes back; the next request
// leaves the rewound exchange out), an undo refused once a message was added, and bad points.
func TestForkAndRewind(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		text(w, req, fmt.Sprintf("answer %d", n))
	})
	c := start(t, config(t, f, ""))
	ctx := context.Background()
	s, err := c.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"first question", "second question"} {
		stream, err := s.Send(ctx, q)
		if err == nil {
			_, err = stream.Wait()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	fork, forked, err := s.Fork(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if forked.At != 2 || forked.Session.ParentID != s.ID || forked.Session.ForkSeq != 2 || fork.ID == s.ID {
		t.Fatalf("forked %+v", forked)
	}
	stream, err := fork.Send(ctx, "a different second question")
	if err == nil {
		_, err = stream.Wait()
	}
	if err != nil {
		t.Fatal(err)
	}
	contents := func(i int) []string {
		var out []string
		for _, m := range f.request(i)["messages"].([]interface{}) {
			if c, ok := m.(map[string]interface{})["content"].(string); ok && m.(map[string]interface{})["role"] != "system" {
				out = append(out, c)
			}
		}
		return out
	}
	if got := strings.Join(contents(2), "|"); got != "first question|answer 1|a different second question" {
		t.Fatalf("the fork's request carried %q", got)
	}
	// Rewind the parent's latest request: it comes back for editing, and leaves the view.
	r, err := s.RewindRequests(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.FromSeq != 3 || r.ThroughSeq != 4 || r.Request != "second question" {
		t.Fatalf("rewound %+v", r)
	}
	view, err := s.LiveView(ctx)
	if err != nil || len(view) != 2 {
		t.Fatalf("view %+v, %v", view, err)
	}
	stream, err = s.Send(ctx, "second question, rephrased")
	if err == nil {
		_, err = stream.Wait()
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(contents(3), "|"); got != "first question|answer 1|second question, rephrased" {
		t.Fatalf("after the rewind the request carried %q", got)
	}
	if _, err := s.UndoRewind(ctx); !errors.Is(err, ErrRewindSuperseded) {
		t.Fatalf("undo after a new message: %v, want ErrRewindSuperseded", err)
	}
	if _, err := s.Rewind(ctx, 99); !errors.Is(err, ErrSeqOutOfRange) {
		t.Fatalf("rewind to 99: %v, want ErrSeqOutOfRange", err)
	}
	if _, _, err := s.Fork(ctx, 99); !errors.Is(err, ErrSeqOutOfRange) {
		t.Fatalf("fork at 99: %v, want ErrSeqOutOfRange", err)
	}
	history, err := s.History(ctx)
	if err != nil || len(history) != 6 {
		t.Fatalf("nothing is deleted: history %d, %v", len(history), err)
	}
}

// What was said in the project's sessions is found by SearchHistory; a session's Export is a
// record `seshat sessions import` reads into another store, which exports it byte for byte again.
func TestHistoryIsSearchedAndASessionExported(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		text(w, req, "The kestrel ", "deploys on Tuesdays.")
	})
	cfg := config(t, f, "")
	c := start(t, cfg)
	ctx := context.Background()
	s, err := c.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := s.Send(ctx, "When does kestrel deploy?")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Wait(); err != nil {
		t.Fatal(err)
	}
	hits, err := c.SearchHistory(ctx, "Tuesdays", false, 5)
	if err != nil || len(hits) != 1 {
		t.Fatalf("search: %+v, %v", hits, err)
	}
	if h := hits[0]; h.Session != s.ID || h.Seq != 2 || h.Role != "assistant" || !strings.Contains(h.Snippet, "«Tuesdays»") {
		t.Fatalf("hit: %+v", h)
	}
	if _, err := c.SearchHistory(ctx, " ", true, 0); !errors.Is(err, ErrInvalidParams) {
		t.Fatalf("an empty query: %v", err)
	}
	exported, err := s.Export(ctx)
	if err != nil || !strings.Contains(exported, s.ID) || !strings.Contains(exported, "deploys on Tuesdays.") {
		t.Fatalf("export: %q, %v", exported, err)
	}
	file := filepath.Join(t.TempDir(), "session.jsonl")
	if err := os.WriteFile(file, []byte(exported), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other.db")
	seshatIn(t, cfg, "--db", other, "sessions", "import", file)
	if again := seshatIn(t, cfg, "--db", other, "sessions", "export", s.ID); again != exported {
		t.Fatalf("exported again from another store:\n%s\nfirst:\n%s", again, exported)
	}
}

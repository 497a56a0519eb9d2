package seshat_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "example.invalid/seshat/sdk/go/seshat"
)

// turnError runs one turn of prompt in a new session and returns its error, from Send or Wait.
func turnError(t *testing.T, c *Client, prompts ...string) error {
	t.Helper()
	s, err := c.NewSession(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i, prompt := range prompts {
		stream, err := s.Send(context.Background(), prompt)
		if err == nil {
			_, err = stream.Wait()
		}
		if i == len(prompts)-1 {
			return err
		}
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	return nil
}

// wantCode checks err is an *Error with the code, that errors.Is matches the sentinel and that
// the message says what happened.
func wantCode(t *testing.T, err error, sentinel *Error, says string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, sentinel) {
		t.Fatalf("got %v, want %s", err, sentinel.Code)
	}
	if !strings.Contains(e.Message, says) {
		t.Fatalf("%s: the message %q does not say %q", e.Code, e.Message, says)
	}
}

func TestAnAuthFailureIsErrAuthFailed(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`))
	})
	c := start(t, config(t, f, ""))
	wantCode(t, turnError(t, c, "hello"), ErrAuthFailed, "Incorrect API key provided")
	if strings.Contains(turnError(t, c, "again").Error(), "sk-go-test") {
		t.Fatal("the key is in the error")
	}
}

func TestARequestTooLongForTheServerIsErrContextOverflow(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`))
	})
	cfg := config(t, f, "")
	cfg.AutoCompact = false
	c := start(t, cfg)
	wantCode(t, turnError(t, c, "hello"), ErrContextOverflow, "auto-compaction is off")
	if f.count() != 1 {
		t.Fatalf("%d requests; the refused one only was expected", f.count())
	}
}

// TestASummaryThatCannotBeWrittenIsErrCompactFailed: on a 4,096-token window the first answer
// fills the session; the next turn must compact, and the summary request fails.
func TestASummaryThatCannotBeWrittenIsErrCompactFailed(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			text(w, req, strings.Repeat("A long story goes on and on. ", 500))
			return
		}
		w.Header().Set("content-type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`))
	})
	cfg := config(t, f, "")
	cfg.Window = 4096
	c := start(t, cfg)
	wantCode(t, turnError(t, c, "tell me a long story", strings.Repeat("and then? ", 300)), ErrCompactFailed, "HTTP 500")
}

func TestAnUnknownSessionIsErrSessionNotFound(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		t.Errorf("no model is needed")
	})
	c := start(t, config(t, f, ""))
	_, err := c.Resume(context.Background(), "01JZZZZZZZZZZZZZZZZZZZZZZZ")
	wantCode(t, err, ErrSessionNotFound, "01JZZZZZZZZZZZZZZZZZZZZZZZ")
	// The library's words, without the command line's hints (a Go program has no `seshat sessions`).
	if strings.Contains(err.Error(), "seshat sessions") || strings.Contains(err.Error(), "--") {
		t.Fatalf("a CLI hint reached the SDK: %v", err)
	}
}

// TestNoKeyIsErrProviderNotConfigured: the default provider (Anthropic) without its key. (The
// openai provider pointed at a server of one's own needs no key: local servers take none.)
func TestNoKeyIsErrProviderNotConfigured(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		t.Errorf("a request went out without a key")
	})
	cfg := config(t, f, "")
	var env []string
	for _, e := range cfg.Env {
		if strings.HasPrefix(e, "SESHAT_HOME=") {
			home := strings.TrimPrefix(e, "SESHAT_HOME=")
			if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte("[chat]\nmax_output_tokens = 1000\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if !strings.HasPrefix(e, "OPENAI_API_KEY=") {
			env = append(env, e)
		}
	}
	cfg.Env = append(env, "ANTHROPIC_API_KEY=")
	c := start(t, cfg)
	wantCode(t, turnError(t, c, "hello"), ErrProviderNotConfigured, "ANTHROPIC_API_KEY")
}

func TestACallAfterCloseIsErrClosed(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		t.Errorf("no model is needed")
	})
	c := start(t, config(t, f, ""))
	if _, err := c.Sessions(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	_, err := c.Sessions(context.Background())
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("got %v, want ErrClosed", err)
	}
}

// TestTheMemoryGraphIsWrittenReadAndDeleted covers every graph call of Memory.
func TestTheMemoryGraphIsWrittenReadAndDeleted(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		t.Errorf("memory needs no model")
	})
	c := start(t, config(t, f, ""))
	ctx := context.Background()
	m := c.Memory()
	created, err := m.CreateEntities(ctx, "user",
		Entity{Name: "Ada", EntityType: "person", Observations: []string{"writes the parser"}},
		Entity{Name: "Seshat", EntityType: "project", Observations: []string{"an agent runtime"}})
	if err != nil || len(created) != 2 {
		t.Fatalf("create: %+v, %v", created, err)
	}
	if err := m.CreateRelations(ctx, "user", Relation{From: "Ada", To: "Seshat", RelationType: "works_on"}); err != nil {
		t.Fatal(err)
	}
	if err := m.AddObservations(ctx, "Ada", "prefers tabs"); err != nil {
		t.Fatal(err)
	}
	opened, err := m.OpenNodes(ctx, "Ada")
	if err != nil || len(opened.Entities) != 1 {
		t.Fatalf("open: %+v, %v", opened, err)
	}
	if obs := strings.Join(opened.Entities[0].Observations, "|"); obs != "writes the parser|prefers tabs" {
		t.Fatalf("Ada's observations: %q", obs)
	}
	graph, err := m.ReadGraph(ctx)
	if err != nil || len(graph.Entities) != 2 || len(graph.Relations) != 1 {
		t.Fatalf("read: %+v, %v", graph, err)
	}
	if r := graph.Relations[0]; r.From != "Ada" || r.To != "Seshat" || r.RelationType != "works_on" {
		t.Fatalf("the relation: %+v", r)
	}
	// Raw reaches the tools the typed methods leave out.
	if _, err := m.Raw(ctx, "delete_observations", map[string]interface{}{
		"deletions": []map[string]interface{}{{"entityName": "Ada", "observations": []string{"prefers tabs"}}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteEntities(ctx, "Seshat"); err != nil {
		t.Fatal(err)
	}
	graph, err = m.ReadGraph(ctx)
	if err != nil || len(graph.Entities) != 1 || graph.Entities[0].Name != "Ada" || len(graph.Relations) != 0 {
		t.Fatalf("after the deletes: %+v, %v", graph, err)
	}
	if obs := strings.Join(graph.Entities[0].Observations, "|"); obs != "writes the parser" {
		t.Fatalf("Ada's observations after the delete: %q", obs)
	}
	// A write about an entity that is not there is refused with a code and a message naming it.
	var e *Error
	if err := m.AddObservations(ctx, "Nobody", "x"); !errors.As(err, &e) || !strings.Contains(e.Message, "Nobody") {
		t.Fatalf("observations of a missing entity: %v", err)
	}
	if e.Code == "" || strings.HasPrefix(e.Code, "rpc_") {
		t.Fatalf("the refusal has no stable code: %+v", e)
	}
}

// TestWhatServeOffersTheSDKOffersToo covers the scoped and paged memory calls, the deletions,
// the live view, session deletion and knowledge search.
func TestWhatServeOffersTheSDKOffersToo(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		text(w, req, "Noted.")
	})
	c := start(t, config(t, f, ""))
	ctx := context.Background()
	m := c.Memory()
	if _, err := m.CreateEntities(ctx, "user",
		Entity{Name: "Ada", EntityType: "person", Observations: []string{"writes the parser", "prefers tabs"}},
		Entity{Name: "Bo", EntityType: "person", Observations: []string{"reviews"}},
		Entity{Name: "Seshat", EntityType: "project", Observations: []string{"an agent runtime"}}); err != nil {
		t.Fatal(err)
	}
	rel := Relation{From: "Ada", To: "Seshat", RelationType: "works_on"}
	if err := m.CreateRelations(ctx, "user", rel); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteObservations(ctx, "user", "Ada", "prefers tabs"); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteRelations(ctx, "user", rel); err != nil {
		t.Fatal(err)
	}
	found, err := m.SearchNodesIn(ctx, "user", "parser", 5)
	if err != nil || len(found.Entities) != 1 || strings.Join(found.Entities[0].Observations, "|") != "writes the parser" {
		t.Fatalf("search in user: %+v, %v", found, err)
	}
	if len(found.Relations) != 0 {
		t.Fatalf("the relation was deleted: %+v", found.Relations)
	}
	if none, err := m.SearchNodesIn(ctx, "cross", "parser", 5); err != nil || len(none.Entities) != 0 {
		t.Fatalf("search in cross: %+v, %v", none, err)
	}
	page, err := m.ReadGraphPage(ctx, "user", 1, 1)
	if err != nil || len(page.Entities) != 1 {
		t.Fatalf("a page of one after one: %+v, %v", page, err)
	}
	s, err := c.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := s.Send(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Wait(); err != nil {
		t.Fatal(err)
	}
	view, err := s.LiveView(ctx)
	if err != nil || len(view) != 2 || view[0].Role != "user" || view[1].Status != "complete" {
		t.Fatalf("live view %+v, %v", view, err)
	}
	knowledge, err := c.KnowledgeSearch(ctx, "parser", 3)
	if err != nil || knowledge.Mode != "lexical" || len(knowledge.Hits) != 0 {
		t.Fatalf("knowledge search with nothing indexed: %+v, %v", knowledge, err)
	}
	if err := s.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Resume(ctx, s.ID); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("resume after delete: %v", err)
	}
}

// A team's document the caller is granted is found by KnowledgeSearch and read whole by
// KnowledgeRead; an id nobody can read is ErrChunkNotFound.
func TestAKnowledgeHitIsReadWhole(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		text(w, req, "unused")
	})
	cfg := config(t, f, "")
	body := "# Deploys\n\nThe kestrel cluster deploys on Tuesdays only.\n"
	doc := filepath.Join(cfg.ProjectDir, "runbook.md")
	if err := os.WriteFile(doc, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c := start(t, cfg)
	// A team's document, granted to the caller: the local user, or the remote server's "go".
	seshatIn(t, cfg, "scopes", "create", "docs")
	seshatIn(t, cfg, "scopes", "grant", "docs", "local")
	if remoteMode {
		seshatIn(t, cfg, "scopes", "grant", "docs", "go")
	}
	seshatIn(t, cfg, "knowledge", "add", "--scope", "team:docs", doc)
	ctx := context.Background()
	found, err := c.KnowledgeSearch(ctx, "kestrel deploys", 3)
	if err != nil || len(found.Hits) == 0 || !strings.HasSuffix(found.Hits[0].Path, "runbook.md") {
		t.Fatalf("search: %+v, %v", found, err)
	}
	chunk, err := c.KnowledgeRead(ctx, found.Hits[0].ID, 0)
	if err != nil || !strings.Contains(chunk.Text, "deploys on Tuesdays only.") || chunk.Note != "" {
		t.Fatalf("read: %+v, %v", chunk, err)
	}
	if chunk.ID != found.Hits[0].ID || chunk.Heading != "Deploys" || !strings.HasSuffix(chunk.File, "runbook.md") {
		t.Fatalf("read: %+v", chunk)
	}
	rest, err := c.KnowledgeRead(ctx, found.Hits[0].ID, 10)
	if err != nil || rest.Text != chunk.Text[10:] {
		t.Fatalf("read from byte 10: %+v, %v", rest, err)
	}
	if _, err := c.KnowledgeRead(ctx, found.Hits[0].ID+1000, 0); !errors.Is(err, ErrChunkNotFound) {
		t.Fatalf("an unknown chunk: %v", err)
	}
}

// A model server's error (HTTP 500 to a streaming request) ends the turn with its own code and
// message, and the next turn on the same connection is answered: the provider plugin is not left
// broken, with Seshat's retries and without.
func TestAServerErrorEndsItsTurnWithItsCodeAndTheNextTurnWorks(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		messages, _ := req["messages"].([]interface{})
		last, _ := messages[len(messages)-1].(map[string]interface{})
		// A user message a fault left unanswered goes with the next one: what counts is which
		// comes last.
		said := fmt.Sprint(last["content"])
		if strings.LastIndex(said, "fault") > strings.LastIndex(said, "something good") {
			w.Header().Set("content-type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"error":{"message":"model broken","type":"server_error"}}`))
			return
		}
		text(w, req, "Good.")
	})
	for _, retries := range []string{"0", "2"} {
		dir := t.TempDir()
		cfg, err := configIn(dir, f, "")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "config.toml")
		toml, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		toml = []byte(strings.Replace(string(toml), "max_retries = 0\n", "max_retries = "+retries+"\n", 1))
		if err := os.WriteFile(path, toml, 0o600); err != nil {
			t.Fatal(err)
		}
		c := start(t, cfg)
		s, err := c.NewSession(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for round := 0; round < 2; round++ {
			stream, err := s.Send(context.Background(), "a fault, please")
			if err == nil {
				_, err = stream.Wait()
			}
			wantCode(t, err, ErrServerError, "model broken")
			stream, err = s.Send(context.Background(), "now something good")
			if err != nil {
				t.Fatalf("retries %s, round %d: %v", retries, round, err)
			}
			outcome, err := stream.Wait()
			if err != nil || outcome.Text != "Good." {
				t.Fatalf("retries %s, round %d: the turn after the fault: %q, %v", retries, round, outcome.Text, err)
			}
		}
	}
}

// A server answering initialize with another protocol version: the SDK compares and refuses
// with protocol_mismatch, naming both versions and the side to upgrade. The server is a script
// speaking the protocol's lines (config/get, then initialize).
func TestAServerSpeakingAnotherProtocolVersionIsRefused(t *testing.T) {
	for _, tc := range []struct{ server, upgrade string }{
		{"2099-01-01", "upgrade this client"},
		{"2026-12-03", "upgrade the server"},
	} {
		script := filepath.Join(t.TempDir(), "seshat")
		body := "#!/bin/sh\nread line\n" +
			`echo '{"jsonrpc":"2.0","id":1,"result":{"project":"p","database":"d","auto_compact":true,"providers":[]}}'` + "\n" +
			"read line\n" +
			`echo '{"jsonrpc":"2.0","id":2,"result":{"protocol_version":"` + tc.server + `","server_info":{"name":"seshat","version":"9"},"capabilities":{}}}'` + "\n" +
			"read line\n"
		if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		c, err := NewClient(context.Background(), ClientConfig{Binary: script})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.NewSession(context.Background())
		c.Close()
		if !errors.Is(err, ErrProtocolMismatch) {
			t.Fatalf("server %s: %v, want protocol_mismatch", tc.server, err)
		}
		if msg := err.Error(); !strings.Contains(msg, tc.server) || !strings.Contains(msg, ProtocolVersion) || !strings.Contains(msg, tc.upgrade) {
			t.Errorf("server %s: %s", tc.server, msg)
		}
	}
}

// TestAReplacedFactIsHistoryAndAnEntityCanBeRevertedOrASessionUndone covers the versioned
// memory calls: a replacement, a conflict, the history, a revert and a session's undo.
func TestAReplacedFactIsHistoryAndAnEntityCanBeRevertedOrASessionUndone(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		t.Errorf("memory needs no model")
	})
	c := start(t, config(t, f, ""))
	ctx := context.Background()
	m := c.Memory()
	if _, err := m.CreateEntities(ctx, "user", Entity{Name: "Ada", EntityType: "person", Observations: []string{"editor: vim", "lives in Oslo"}}); err != nil {
		t.Fatal(err)
	}
	changed, err := m.AddObservationsReplacing(ctx, "user", "Ada", []string{"editor: vim"}, "editor: helix", "lives in Bergen")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(changed.ReplacedObservations, "|") != "editor: vim" {
		t.Fatalf("replaced: %+v", changed)
	}
	if len(changed.Conflicts) != 1 || changed.Conflicts[0].Contradicts != "lives in Oslo" {
		t.Fatalf("the unstated replacement is a conflict: %+v", changed)
	}
	opened, err := m.OpenNodes(ctx, "Ada")
	if err != nil || strings.Join(opened.Entities[0].Observations, "|") != "lives in Oslo|editor: helix|lives in Bergen" {
		t.Fatalf("current: %+v, %v", opened, err)
	}
	if src := opened.Entities[0].Source; src.Kind != "user" {
		t.Fatalf("a serve answer says where each line came from: %+v", opened.Entities[0])
	}
	history, err := m.History(ctx, "user", "ada")
	if err != nil || len(history.Versions) != 2 || history.Versions[1].Change != "replaced" {
		t.Fatalf("history: %+v, %v", history, err)
	}
	reverted, err := m.Revert(ctx, "user", "Ada", 1)
	if err != nil || reverted.Version != 3 || strings.Join(reverted.Entity.Observations, "|") != "editor: vim|lives in Oslo" {
		t.Fatalf("revert: %+v, %v", reverted, err)
	}
	var e *Error
	if _, err := m.Revert(ctx, "user", "Ada", 9); !errors.As(err, &e) || !strings.Contains(e.Message, "has no version 9") {
		t.Fatalf("a version that is not there: %v", err)
	}
	undone, err := m.UndoSession(ctx, "01JNOSUCHSESSION0000000000")
	if err != nil || undone.EntitiesRemoved != 0 || undone.Session != "01JNOSUCHSESSION0000000000" {
		t.Fatalf("undo of a session that wrote nothing: %+v, %v", undone, err)
	}
}

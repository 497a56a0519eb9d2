package seshat_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"

	seshat "example.invalid/seshat/sdk/go/seshat"
)

// Start Seshat with automatic compaction, a cheaper model writing the summaries.
func ExampleNewClient() {
	ctx := context.Background()
	client, err := seshat.NewClient(ctx, offline(seshat.ClientConfig{
		AutoCompact:         true,
		CompactSummaryModel: "claude-haiku-4-5",
		Provider:            "anthropic",
		Model:               "claude-sonnet-4-5",
		ProjectDir:          ".",
	}))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	session, err := client.NewSession(ctx)
	if err != nil {
		log.Fatal(err)
	}
	stream, err := session.Send(ctx, "Say hello")
	if err != nil {
		log.Fatal(err)
	}
	out, err := stream.Wait()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Text)
	// Output: Hello!
}

// Send a message and print the answer as it streams.
func ExampleSession_Send() {
	ctx := context.Background()
	client, err := seshat.NewClient(ctx, offline(seshat.ClientConfig{AutoCompact: true}))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	session, err := client.NewSession(ctx)
	if err != nil {
		log.Fatal(err)
	}
	stream, err := session.Send(ctx, "What did we decide about the upload retries?")
	if err != nil {
		log.Fatal(err)
	}
	for ev := range stream.Events() {
		switch ev.Kind {
		case seshat.TextDelta:
			fmt.Print(ev.Text)
		case seshat.CompactionStarted:
			fmt.Printf("[compacting %d of %d tokens]\n", ev.Tokens, ev.Window)
		}
	}
	fmt.Println()
	if _, err := stream.Wait(); errors.Is(err, seshat.ErrCompactFull) {
		log.Print("even compacted, the request does not fit the window")
	} else if err != nil {
		log.Fatal(err)
	}
	// Output: Three retries, with backoff.
}

// Carry on with the project's latest session, or an earlier one by its id.
func ExampleClient_Continue() {
	ctx := context.Background()
	client, err := seshat.NewClient(ctx, offline(seshat.ClientConfig{AutoCompact: true}))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	first, _ := client.NewSession(ctx)
	stream, _ := first.Send(ctx, "Say hello")
	if _, err := stream.Wait(); err != nil {
		log.Fatal(err)
	}
	latest, err := client.Continue(ctx) // the project's latest session, or a new one
	if err != nil {
		log.Fatal(err)
	}
	again, err := client.Resume(ctx, first.ID)
	if err != nil {
		log.Fatal(err)
	}
	history, err := again.History(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(latest.ID == first.ID, len(history), history[1].Role)
	sessions, _ := client.Sessions(ctx)
	fmt.Println(len(sessions), sessions[0].MessageCount)
	// Output:
	// true 2 assistant
	// 1 2
}

// Offer the model a tool this program runs.
func ExampleClient_RegisterTool() {
	ctx := context.Background()
	client, err := seshat.NewClient(ctx, offline(seshat.ClientConfig{AutoCompact: true}))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	err = client.RegisterTool("lookup", "Looks up the value of a key in this program's table.",
		json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"}},"required":["key"]}`),
		func(ctx context.Context, args json.RawMessage) (string, error) {
			var a struct{ Key string }
			if err := json.Unmarshal(args, &a); err != nil {
				return "", err
			}
			return "the value of " + a.Key, nil
		})
	if err != nil {
		log.Fatal(err)
	}
	session, _ := client.NewSession(ctx)
	stream, _ := session.Send(ctx, "Look up the key `a`.")
	out, err := stream.Wait()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Text)
	// Output: The key `a` holds the value of a.
}

// Compact a session by hand, saying what to keep.
func ExampleSession_Compact() {
	ctx := context.Background()
	client, err := seshat.NewClient(ctx, offline(seshat.ClientConfig{CompactSummaryModel: "claude-haiku-4-5", Window: 4096}))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	session, _ := client.NewSession(ctx)
	for _, text := range []string{"Tell me the whole story.", "Say hello"} {
		stream, _ := session.Send(ctx, text)
		if _, err := stream.Wait(); err != nil {
			log.Fatal(err)
		}
	}
	report, err := session.Compact(ctx, "keep the names of the failing tests")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(report.Summarised, report.TokensAfter < report.TokensBefore)
	// Output: true true
}

// Remember something across sessions, and find it again.
func ExampleClient_Memory() {
	ctx := context.Background()
	client, err := seshat.NewClient(ctx, offline(seshat.ClientConfig{}))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	memory := client.Memory()
	if _, err := memory.CreateEntities(ctx, "user", seshat.Entity{Name: "Ada", EntityType: "person", Observations: []string{"prefers tabs"}}); err != nil {
		log.Fatal(err)
	}
	graph, _ := memory.SearchNodes(ctx, "tabs")
	fmt.Println(graph.Entities[0].Name, graph.Entities[0].Observations)
	if _, err := memory.SetNote(ctx, "user", "style", "short answers"); err != nil {
		log.Fatal(err)
	}
	notes, _ := memory.SearchNotes(ctx, "", "SHORT")
	fmt.Println(notes[0].Key+":", notes[0].Value)
	// Output:
	// Ada [prefers tabs]
	// style: short answers
}

// offline points cfg at this file's scripted stand-in for the provider (an OpenAI-compatible
// server on loopback) and a scratch Seshat home, so that the examples run under `go test` with
// no key and no network. Without it they talk to the provider cfg names.
func offline(cfg seshat.ClientConfig) seshat.ClientConfig {
	dir, err := os.MkdirTemp("", "seshat-example-")
	if err != nil {
		log.Fatal(err)
	}
	f := serveFake(func(format string, args ...interface{}) { fmt.Printf(format+"\n", args...) }, scripted)
	scratch = append(scratch, f.srv.Close, func() { _ = os.RemoveAll(dir) })
	local, err := configIn(dir, f, "")
	if err != nil {
		log.Fatal(err)
	}
	cfg.Provider, cfg.Model, cfg.ProjectDir = "", local.Model, local.ProjectDir
	cfg.Binary, cfg.Env = local.Binary, local.Env
	if cfg.CompactSummaryModel != "" {
		cfg.CompactSummaryModel = "gpt-4o-mini"
	}
	return cfg
}

// scripted answers the examples' requests as a model might.
func scripted(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
	messages, _ := req["messages"].([]interface{})
	if len(messages) == 0 {
		http.Error(w, "no messages", http.StatusBadRequest)
		return
	}
	last, _ := messages[len(messages)-1].(map[string]interface{})
	said, _ := last["content"].(string)
	switch {
	case req["model"] == "gpt-4o-mini":
		text(w, req, "Summary: a long story was told; then the user said hello.")
	case last["role"] == "tool":
		text(w, req, "The key `a` holds ", said, ".")
	case strings.HasPrefix(said, "Look up"):
		toolCall(w, "call_1", "lookup", `{"key":"a"}`)
	case said == "Say hello":
		text(w, req, "Hel", "lo!")
	case strings.Contains(said, "upload retries"):
		text(w, req, "Three retries, ", "with backoff.")
	case strings.Contains(said, "whole story"):
		text(w, req, strings.Repeat("Once upon a time the story went on. ", 200))
	default:
		text(w, req, "OK.")
	}
}

// scratch undoes what offline made (its servers, its homes), when the tests end (TestMain);
// examples run one at a time.
var scratch []func()

func removeScratch() {
	for _, undo := range scratch {
		undo()
	}
}

package seshat_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	seshat "example.invalid/seshat/sdk/go"
)

// Start Seshat with automatic compaction, a cheaper model writing the summaries.
func ExampleNewClient() {
	ctx := context.Background()
	client, err := seshat.NewClient(ctx, seshat.ClientConfig{
		AutoCompact:         true,
		CompactSummaryModel: "claude-haiku-4-5",
		Provider:            "anthropic",
		Model:               "claude-sonnet-4-5",
		ProjectDir:          ".",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
}

// Send a message and print the answer as it streams.
func ExampleSession_Send() {
	ctx := context.Background()
	client, err := seshat.NewClient(ctx, seshat.ClientConfig{AutoCompact: true})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	session, err := client.Continue(ctx) // the project's latest session, or a new one
	if err != nil {
		log.Fatal(err)
	}
	stream, err := session.Send(ctx, "What did we decide about the upload retries?")
	if err != nil {
		log.Fatal(err)
	}
	for ev := range stream.Events() {
		if ev.Kind == seshat.TextDelta {
			fmt.Print(ev.Text)
		}
	}
	if _, err := stream.Wait(); errors.Is(err, seshat.ErrCompactFull) {
		log.Print("even compacted, the request does not fit the window")
	} else if err != nil {
		log.Fatal(err)
	}
}

// Offer the model a tool this program runs.
func ExampleClient_RegisterTool() {
	ctx := context.Background()
	client, err := seshat.NewClient(ctx, seshat.ClientConfig{AutoCompact: true})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	client.RegisterTool("lookup", json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"}},"required":["key"]}`),
		func(ctx context.Context, args json.RawMessage) (string, error) {
			var a struct{ Key string }
			if err := json.Unmarshal(args, &a); err != nil {
				return "", err
			}
			return "the value of " + a.Key, nil
		})
	session, _ := client.NewSession(ctx)
	stream, _ := session.Send(ctx, "Look up the key `a`.")
	out, _ := stream.Wait()
	fmt.Println(out.Text)
}

// Compact a session by hand, saying what to keep.
func ExampleSession_Compact() {
	ctx := context.Background()
	client, _ := seshat.NewClient(ctx, seshat.ClientConfig{})
	defer client.Close()
	session, _ := client.Resume(ctx, "01JFV1AAAA")
	report, err := session.Compact(ctx, "keep the names of the failing tests")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(report.TokensBefore, "→", report.TokensAfter)
}

// Remember something across sessions, and find it again.
func ExampleClient_Memory() {
	ctx := context.Background()
	client, _ := seshat.NewClient(ctx, seshat.ClientConfig{})
	defer client.Close()
	memory := client.Memory()
	_, _ = memory.CreateEntities(ctx, "user", seshat.Entity{Name: "Ada", EntityType: "person", Observations: []string{"prefers tabs"}})
	graph, _ := memory.SearchNodes(ctx, "tabs")
	fmt.Println(graph.Entities[0].Name)
}

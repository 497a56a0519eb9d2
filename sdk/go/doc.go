// Package seshat is the Go SDK of Seshat, an AI agent runtime whose job is an agent's memory:
// every conversation saved in SQLite and resumable, each model request kept inside the context
// window by automatic compaction, long-term memory as a knowledge graph.
//
// The SDK drives `seshat serve` (JSON-RPC 2.0 over stdio, see host/protocol/protocol.md) as a child
// process, so Go programs get the same database, providers, compaction, memory and knowledge as
// `seshat chat`. It uses only the standard library.
//
//	client, err := seshat.NewClient(ctx, seshat.ClientConfig{
//		AutoCompact:         true,
//		CompactSummaryModel: "claude-haiku-4-5",
//	})
//	session, err := client.NewSession(ctx)
//	stream, err := session.Send(ctx, "Hello")
//	for stream.Next() {
//		ev := stream.Current() // nothing is dropped: events wait in the stream until read
//	}
//	if err := stream.Err(); err != nil { ... }
//	outcome, _ := stream.Wait()
//
// Credentials stay in the environment of the `seshat serve` process (ANTHROPIC_API_KEY,
// OPENAI_API_KEY, ...); none crosses the protocol.
package seshat

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
//
// # A team's service
//
// The same client speaks to a shared `seshat serve --listen wss://HOST:PORT` instead of a child
// process when ClientConfig.URL is set: the same API, acting as the user the token names, with
// the store on the service (SQLite or PostgreSQL) and no database credentials on this machine.
//
//	pool := x509.NewCertPool()
//	pool.AppendCertsFromPEM(teamCA) // a private CA; a nil TLSConfig trusts the system's roots
//	client, err := seshat.NewClient(ctx, seshat.ClientConfig{
//		URL:       "wss://seshat.internal:7420",
//		Token:     os.Getenv("SESHAT_TOKEN"),
//		TLSConfig: &tls.Config{RootCAs: pool},
//		Project:   "github.com/acme/app", // the project key; ProjectDir's AGENTS.md is sent
//		Model:     "claude-sonnet-4-5",
//	})
//
// A refused connection is an *Error with the server's code (token_invalid, token_expired,
// too_many_connections, ...). The service's operator watches it on the same address:
// GET /healthz, /readyz and /metrics (Prometheus).
//
// When the connection drops (the service restarts, the network fails), the client connects
// again by itself, with backoff, for up to ClientConfig.ReconnectTimeout (2 minutes by default),
// and initialises the new connection with the same tools; calls made meanwhile wait for it. A
// call whose answer was lost fails with ErrConnectionLost, and a turn in flight ends with it, its
// Outcome marked Interrupted and holding the text streamed (the service keeps what had arrived as
// the interrupted answer); send the turn again with the same key (SendWithKey) to have it
// answered. When connecting again is refused for good (the token was revoked, say) or the time
// runs out, every call fails with an error saying why.
package seshat

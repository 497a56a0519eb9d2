package seshat

import "fmt"

// Error is a failure Seshat reported, with its stable code (the codes `seshat chat --json`
// reports: "compact_full", "session_busy", "auth_failed", ...).
type Error struct {
	// Code is the stable code scripts match on.
	Code string
	// Message says what happened and what to do.
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("seshat: %s: %s", e.Code, e.Message) }

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, seshat.ErrCompactFull) holds for every compact_full failure.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// The stable codes, for errors.Is.
var (
	// ErrCompactFull: even compacted, the request does not fit the window.
	ErrCompactFull = &Error{Code: "compact_full"}
	// ErrCompactFailed: the compaction pipeline failed (the summary could not be written).
	ErrCompactFailed = &Error{Code: "compact_failed"}
	// ErrContextOverflow: the provider refused the request as too long for the window.
	ErrContextOverflow = &Error{Code: "context_overflow"}
	// ErrSessionBusy: the session already has a turn in flight.
	ErrSessionBusy = &Error{Code: "session_busy"}
	// ErrAuthFailed: the provider refused the credential.
	ErrAuthFailed = &Error{Code: "auth_failed"}
	// ErrToolsAnnounced: a tool was registered after the client started (tools are announced
	// once, at its first call).
	ErrToolsAnnounced = &Error{Code: "tools_announced"}
	// ErrInterrupted: the turn was interrupted (its context was cancelled).
	ErrInterrupted = &Error{Code: "interrupted"}
	// ErrSessionNotFound: no session has that id.
	ErrSessionNotFound = &Error{Code: "session_not_found"}
	// ErrProviderNotConfigured: no provider or key is configured for `seshat serve`.
	ErrProviderNotConfigured = &Error{Code: "provider_not_configured"}
	// ErrClosed: the client was closed or `seshat serve` exited.
	ErrClosed = &Error{Code: "closed"}
	// ErrConnectionLost: a remote client's connection dropped (the server restarted, the
	// network failed). Calls waiting then fail with it (whether the server applied them is
	// unknown); a turn in flight ends with it, its Outcome interrupted and holding the text
	// streamed (the server stores what had arrived as the interrupted answer). The client
	// connects again by itself (ClientConfig.ReconnectTimeout); when it gives up, every call
	// fails with it, saying why.
	ErrConnectionLost = &Error{Code: "connection_lost"}
	// ErrRateLimited: the provider limited the rate (after Seshat's retries).
	ErrRateLimited = &Error{Code: "rate_limited"}
	// ErrServerError: the provider failed (5xx after Seshat's retries).
	ErrServerError = &Error{Code: "server_error"}
	// ErrMemoryFailed: a memory call failed (its message says why).
	ErrMemoryFailed = &Error{Code: "memory_failed"}
	// ErrReviewRequired: a write to a team's memory that requires review which cannot wait as a
	// proposal (a note, a clear, a restore, a revert): one of the team's reviewers makes it.
	ErrReviewRequired = &Error{Code: "review_required"}
	// ErrProposalNotFound: no pending proposal of that id that the caller may decide.
	ErrProposalNotFound = &Error{Code: "proposal_not_found"}
	// ErrInvalidParams: a request's parameters were wrong (its message names which).
	ErrInvalidParams = &Error{Code: "invalid_params"}
	// ErrMethodNotFound: `seshat serve` has no such method (an older server, say).
	ErrMethodNotFound = &Error{Code: "method_not_found"}
	// ErrOutboxFull: the client left too much unread and `seshat serve` dropped the connection.
	ErrOutboxFull = &Error{Code: "outbox_full"}
	// ErrSeqOutOfRange: a fork or rewind named a message the session does not have.
	ErrSeqOutOfRange = &Error{Code: "seq_out_of_range"}
	// ErrNothingToRewind: no rewind to undo, or nothing left to rewind.
	ErrNothingToRewind = &Error{Code: "nothing_to_rewind"}
	// ErrRewindSuperseded: a rewind can no longer be undone (messages were added after it); fork
	// from the rewound messages instead.
	ErrRewindSuperseded = &Error{Code: "rewind_superseded"}
	// ErrRefused: the change would not fit the window (its message gives the figures); nothing
	// was changed.
	ErrRefused = &Error{Code: "refused"}
	// ErrChunkNotFound: no document chunk with that id that the caller may read.
	ErrChunkNotFound = &Error{Code: "chunk_not_found"}
	// ErrScopeDenied: a remote server refused a write to a team scope the caller may only read,
	// or is not granted; nothing was written.
	ErrScopeDenied = &Error{Code: "scope_denied"}
	// ErrCredentialRefused: what was to be written into a team's memory or documents holds a
	// credential (the message names the rule); team scopes never keep one, and nothing was written.
	ErrCredentialRefused = &Error{Code: "credential_refused"}
	// ErrReadOnlyToken: the remote server's token for this client may only read; nothing was
	// changed.
	ErrReadOnlyToken = &Error{Code: "read_only_token"}
	// ErrTooManyTurns: the caller already runs as many turns at once as the remote server allows
	// per user; retry when one ends.
	ErrTooManyTurns = &Error{Code: "too_many_turns"}
	// ErrTurnKeyReused: SendWithKey sent a key already used in the session for another text;
	// nothing was stored.
	ErrTurnKeyReused = &Error{Code: "turn_key_reused"}
	// ErrTooManySessions: the caller keeps as many sessions open on the remote server as it
	// allows per user; close a connection, or wait for one to end.
	ErrTooManySessions = &Error{Code: "too_many_sessions"}
	// ErrClaimLost: the service lost the session's hold with its database connection mid-turn;
	// the turn stopped so no other turn interleaves with it. Send it again with the same key.
	ErrClaimLost = &Error{Code: "claim_lost"}
	// ErrTokenRevoked: the remote server revoked the client's token; it closed the connection.
	ErrTokenRevoked = &Error{Code: "token_revoked"}
	// ErrTokenExpired: the client's token expired; the remote server closed the connection.
	ErrTokenExpired = &Error{Code: "token_expired"}
	// ErrUserDisabled: the token's user was disabled; the remote server closed the connection.
	ErrUserDisabled = &Error{Code: "user_disabled"}
	// ErrDatabaseTimeout: the service's database did not answer in time; nothing of the
	// operation was kept.
	ErrDatabaseTimeout = &Error{Code: "database_timeout"}
	// ErrInvalidPrincipal: a user or team name that is malformed, unknown or already taken;
	// nothing was changed.
	ErrInvalidPrincipal = &Error{Code: "invalid_principal"}
	// ErrAdminOnly: an admin's act (users, tokens) asked for by a user who is not one.
	ErrAdminOnly = &Error{Code: "admin_only"}
	// ErrMessageTooLarge: the message cannot fit the model's window even alone; nothing was
	// stored or sent. Split it, or use a model with a larger window.
	ErrMessageTooLarge = &Error{Code: "message_too_large"}
	// ErrEmptyAnswer: the model answered nothing; nothing was stored, and the message waits for
	// an answer.
	ErrEmptyAnswer = &Error{Code: "empty_answer"}
	// ErrProtocolMismatch: the client and the server speak different protocol versions; the
	// message names both and which side to upgrade.
	ErrProtocolMismatch = &Error{Code: "protocol_mismatch"}
)

package seshat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"example.invalid/seshat/sdk/go/seshat/protocol"
	"strings"
	"sync"
)

// SessionInfo describes a saved session.
type SessionInfo = protocol.SessionInfo

// Session is one conversation, saved in the database and resumable.
type Session struct {
	client *Client
	// ID is the session's id.
	ID string
}

// NewSession creates a session in the client's project.
func (c *Client) NewSession(ctx context.Context) (*Session, error) {
	var r protocol.SessionResult
	if err := c.call(ctx, protocol.MethodSessionNew, protocol.SessionNewParams{}, &r); err != nil {
		return nil, err
	}
	return &Session{client: c, ID: r.Session.ID}, nil
}

// Resume opens the session with id (or a unique prefix of it).
func (c *Client) Resume(ctx context.Context, id string) (*Session, error) {
	var r protocol.SessionGetResult
	if err := c.call(ctx, protocol.MethodSessionGet, protocol.SessionGetParams{Session: id}, &r); err != nil {
		return nil, err
	}
	return &Session{client: c, ID: r.Session.ID}, nil
}

// Continue opens the project's most recent session, or a new one when there is none.
func (c *Client) Continue(ctx context.Context) (*Session, error) {
	sessions, err := c.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	if len(sessions) == 0 {
		return c.NewSession(ctx)
	}
	return &Session{client: c, ID: sessions[0].ID}, nil
}

// Sessions lists the project's sessions, newest first.
func (c *Client) Sessions(ctx context.Context) ([]SessionInfo, error) {
	var r protocol.SessionListResult
	err := c.call(ctx, protocol.MethodSessionList, protocol.SessionListParams{}, &r)
	return r.Sessions, err
}

// Message is one message of a session as it was written.
type Message = protocol.Message

// History returns every message of the session as written (before any compaction).
func (s *Session) History(ctx context.Context) ([]Message, error) {
	var r protocol.SessionGetResult
	err := s.client.call(ctx, protocol.MethodSessionGet, protocol.SessionGetParams{Session: s.ID, Full: true}, &r)
	return r.History, err
}

// Report says what a compaction did.
type Report = protocol.Report

// Compact compacts the session now, with instructions (what to keep or stress; may be empty).
func (s *Session) Compact(ctx context.Context, instructions string) (Report, error) {
	params := protocol.SessionCompactParams{Session: s.ID}
	if instructions != "" {
		params.Instructions = &instructions
	}
	var r protocol.SessionCompactResult
	err := s.client.call(ctx, protocol.MethodSessionCompact, params, &r)
	return r.Report, err
}

// Usage is token usage.
type Usage = protocol.Usage

// Outcome is what a turn did: its answer, usage and how it ended.
type Outcome = protocol.TurnOutcome

// EventKind says what an Event is.
type EventKind string

// The kinds of events a turn streams.
const (
	TextDelta     EventKind = "text_delta"
	ThinkingDelta EventKind = "thinking_delta"
	ToolCall      EventKind = "tool_call"
	ToolResult    EventKind = "tool_result"
	// CompactionStarted comes before a compaction runs (the summary model may take a while);
	// Compaction follows with its report.
	CompactionStarted EventKind = "compaction_started"
	// CompactionSummarising comes when the trims did not make room, before the summary is
	// written: what it will replace and the figures (Summarising).
	CompactionSummarising EventKind = "compaction_summarising"
	Compaction            EventKind = "compaction"
	Warning               EventKind = "warning"
	UsageEvent            EventKind = "usage"
)

// Summarising is what a compaction is about to summarise: the messages (as seq ranges), the
// tokens in use, the window's threshold and target.
type Summarising = protocol.Summarising

// Event is one step of a turn as it happens.
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// Text: the delta (TextDelta, ThinkingDelta), the tool's content (ToolResult) or the
	// warning.
	Text string
	// Name and Arguments of a tool (ToolCall, ToolResult), and the model's id for the call
	// (a result carries its call's).
	Name      string
	Arguments string
	CallID    string
	// IsError: the tool failed (ToolResult).
	IsError bool
	// Report of a compaction before a model call (Compaction).
	Report *Report
	// Tokens estimated in use and the model's Window, as a compaction starts
	// (CompactionStarted).
	Tokens, Window uint64
	// Summarising: what a summary is about to replace (CompactionSummarising).
	Summarising *Summarising
	// Usage of the model call so far (UsageEvent).
	Usage *Usage
}

// Stream is a turn in flight: its events, then its outcome. Nothing is ever dropped: read them
// with Next and Current (then Err), as openai-go and anthropic-sdk-go streams are read, or from
// Events. Events a reader has not taken yet wait in the stream.
type Stream struct {
	mu      sync.Mutex
	ready   *sync.Cond
	queue   []Event
	ended   bool
	current Event
	pump    sync.Once
	events  chan Event
	once    sync.Once
	done    chan struct{}
	// stopped closes when the turn's context is cancelled (its client tools' contexts follow).
	stopped  chan struct{}
	stopOnce sync.Once
	out      Outcome
	err      error
	// key is the idempotency key the turn's request carried.
	key string
	// text is what the turn streamed so far (its text deltas).
	text strings.Builder
}

func newStream() *Stream {
	st := &Stream{done: make(chan struct{}), stopped: make(chan struct{})}
	st.ready = sync.NewCond(&st.mu)
	return st
}

// Next waits for the next event and makes it Current; false when the turn has ended and every
// event was read (then Err says how it ended).
func (s *Stream) Next() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.queue) == 0 && !s.ended {
		s.ready.Wait()
	}
	if len(s.queue) == 0 {
		return false
	}
	s.current, s.queue = s.queue[0], s.queue[1:]
	return true
}

// Current is the event Next made current.
func (s *Stream) Current() Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current
}

// Err is how the turn ended once Next returned false: nil, or an error with its stable code.
func (s *Stream) Err() error {
	<-s.done
	return s.err
}

// Events delivers the turn's events on a channel that closes when the turn ends; like Next, it
// loses none (they wait in the stream until read). Use one of the two, not both.
func (s *Stream) Events() <-chan Event {
	s.pump.Do(func() {
		s.events = make(chan Event)
		go func() {
			for s.Next() {
				s.events <- s.Current()
			}
			close(s.events)
		}()
	})
	return s.events
}

// Wait waits for the turn to end (events nobody read are dropped from the stream) and returns
// its outcome; an error carries its stable code (errors.Is(err, seshat.ErrCompactFull)).
func (s *Stream) Wait() (Outcome, error) {
	<-s.done
	return s.out, s.err
}

func (s *Stream) push(e Event) {
	s.mu.Lock()
	if e.Kind == TextDelta {
		s.text.WriteString(e.Text)
	}
	s.queue = append(s.queue, e)
	s.mu.Unlock()
	s.ready.Broadcast()
}

// streamed is the text the turn streamed so far.
func (s *Stream) streamed() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.String()
}

func (s *Stream) finish(o Outcome, err error) {
	s.once.Do(func() {
		s.mu.Lock()
		s.out, s.err = o, err
		s.ended = true
		s.mu.Unlock()
		s.ready.Broadcast()
		close(s.done)
	})
}

// Key is the idempotency key the turn's request carried: after a failure that leaves it unknown
// whether the turn was stored (ErrClosed: the connection or the server went away), send the same
// text again with SendWithKey and this key — on a new client if need be — and the exchange is
// stored once: its stored outcome comes back (Outcome.Replayed), or its unfinished turn goes on.
func (s *Stream) Key() string {
	return s.key
}

// NewKey returns a fresh idempotency key for SendWithKey.
func NewKey() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("seshat: no randomness for an idempotency key: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// Send starts a turn with the user's text and returns its stream at once; the request carries a
// fresh idempotency key (Stream.Key). Cancelling ctx
// interrupts the turn (what arrived is stored, marked interrupted). With ctx already done nothing
// is sent and the error is ErrInterrupted; ctx done while the turn is being started interrupts
// the turn the server began, and the error is ErrInterrupted too — never a turn left running.
func (s *Session) Send(ctx context.Context, text string) (*Stream, error) {
	return s.SendWithKey(ctx, NewKey(), text)
}

// SendWithKey is Send with the request's idempotency key: sent again with the key and text of a
// turn whose outcome was lost, nothing is stored twice (ErrTurnKeyReused when the text differs).
// A key is 1 to 255 bytes; NewKey makes one.
func (s *Session) SendWithKey(ctx context.Context, key, text string) (*Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, interrupted(err)
	}
	c := s.client
	st := newStream()
	st.key = key
	// The server decides whether the session is busy (another client may hold it too).
	c.mu.Lock()
	previous := c.turns[s.ID]
	c.turns[s.ID] = st
	gen := c.gen
	c.mu.Unlock()
	// The request goes out whatever ctx does meanwhile; its answer says whether a turn began.
	started := make(chan error, 1)
	go func() {
		params := protocol.TurnStartParams{Session: s.ID, Text: text, IdempotencyKey: &key}
		started <- c.call(context.Background(), protocol.MethodTurnStart, params, nil)
	}()
	var err error
	select {
	case err = <-started:
	case <-ctx.Done():
		// Cancelled while the turn was being started: once the server answers, a turn it began
		// is interrupted (and stored as such) before Send returns.
		if err = <-started; err == nil {
			_ = c.call(context.Background(), protocol.MethodTurnInterrupt, protocol.SessionParams{Session: s.ID}, nil)
			_, _ = st.Wait()
		}
		err = interrupted(ctx.Err())
	}
	if err != nil {
		c.mu.Lock()
		switch {
		case previous != nil && c.gen != gen:
			// The connection the earlier turn streamed on is gone (it was out of c.turns when
			// that was seen): it ends as the others did.
			delete(c.turns, s.ID)
			lost := &Error{Code: ErrConnectionLost.Code, Message: "the connection to " + c.cfg.URL + " was lost mid-turn"}
			defer previous.finish(Outcome{Session: s.ID, Text: previous.streamed(), Interrupted: true}, lost)
		case previous != nil:
			c.turns[s.ID] = previous
		default:
			delete(c.turns, s.ID)
		}
		c.mu.Unlock()
		return nil, err
	}
	go func() {
		select {
		case <-ctx.Done():
			st.stopOnce.Do(func() { close(st.stopped) })
			_ = c.call(context.Background(), protocol.MethodTurnInterrupt, protocol.SessionParams{Session: s.ID}, nil)
		case <-st.done:
		}
	}()
	return st, nil
}

// notification routes a turn's notification to its stream.
func (c *Client) notification(msg rpcMessage) {
	var p struct {
		Session   string          `json:"session"`
		Turn      uint64          `json:"turn"`
		Event     json.RawMessage `json:"event"`
		Report    *Report         `json:"report"`
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
		Content   string          `json:"content"`
		IsError   bool            `json:"is_error"`
		Message   string          `json:"message"`
		Outcome   json.RawMessage `json:"outcome"`
		Tokens    uint64          `json:"tokens"`
		Window    uint64          `json:"window"`
		CallID    string          `json:"call_id"`
		// Summarising is turn/compaction_summarising's.
		Summarising *Summarising `json:"summarising"`
	}
	if json.Unmarshal(msg.Params, &p) != nil {
		return
	}
	if p.Turn == 0 && msg.Method != protocol.NotificationTurnCompleted {
		// Outside any turn: between turns, or a compaction asked of the session.
		if hear := c.cfg.OnBackground; hear != nil {
			switch msg.Method {
			case protocol.NotificationTurnCompactionSummarising:
				hear(p.Session, Event{Kind: CompactionSummarising, Summarising: p.Summarising})
			case protocol.NotificationTurnCompaction:
				hear(p.Session, Event{Kind: Compaction, Report: p.Report})
			case protocol.NotificationTurnCompactionStarted:
				hear(p.Session, Event{Kind: CompactionStarted, Tokens: p.Tokens, Window: p.Window})
			case protocol.NotificationTurnWarning:
				hear(p.Session, Event{Kind: Warning, Text: p.Message})
			}
		}
		return
	}
	c.mu.Lock()
	st := c.turns[p.Session]
	if msg.Method == protocol.NotificationTurnCompleted {
		delete(c.turns, p.Session)
	}
	c.mu.Unlock()
	if st == nil {
		return
	}
	send := st.push
	switch msg.Method {
	case protocol.NotificationTurnEvent:
		var e struct {
			Type  string `json:"type"`
			Text  string `json:"text"`
			Usage *Usage `json:"usage"`
		}
		_ = json.Unmarshal(p.Event, &e)
		switch e.Type {
		case "text_delta":
			send(Event{Kind: TextDelta, Text: e.Text})
		case "thinking_delta":
			send(Event{Kind: ThinkingDelta, Text: e.Text})
		case "usage":
			send(Event{Kind: UsageEvent, Usage: e.Usage})
		}
	case protocol.NotificationTurnCompactionStarted:
		send(Event{Kind: CompactionStarted, Tokens: p.Tokens, Window: p.Window})
	case protocol.NotificationTurnCompactionSummarising:
		send(Event{Kind: CompactionSummarising, Summarising: p.Summarising})
	case protocol.NotificationTurnCompaction:
		send(Event{Kind: Compaction, Report: p.Report})
	case protocol.NotificationTurnToolCall:
		send(Event{Kind: ToolCall, CallID: p.CallID, Name: p.Name, Arguments: p.Arguments})
	case protocol.NotificationTurnToolResult:
		send(Event{Kind: ToolResult, CallID: p.CallID, Name: p.Name, Text: p.Content, IsError: p.IsError})
	case protocol.NotificationTurnWarning:
		send(Event{Kind: Warning, Text: p.Message})
	case protocol.NotificationTurnCompleted:
		var o Outcome
		_ = json.Unmarshal(p.Outcome, &o)
		var err error
		if o.ErrorCode != "" {
			err = &Error{Code: o.ErrorCode, Message: o.Error}
		}
		st.finish(o, err)
	}
}

// interrupted is ErrInterrupted with the context's reason.
func interrupted(cause error) error {
	return &Error{Code: ErrInterrupted.Code, Message: "the turn was interrupted: " + cause.Error()}
}

// ViewEntry is one message of the live view: what the next model request is built from.
type ViewEntry struct {
	// Origin is "message" (stored), "summary" (a compaction's) or "pinned".
	Origin string `json:"origin"`
	// Seq is the stored message's position, 0 for a summary.
	Seq uint64 `json:"seq"`
	// Role is "user", "assistant", "tool" or "system".
	Role string `json:"role"`
	// Parts are its content parts, trims applied.
	Parts []json.RawMessage `json:"parts"`
	// Status is "complete", "interrupted" or "synthetic".
	Status string `json:"status"`
}

// LiveView returns what the session's next model request is built from: the summary of a
// compaction in force, the pinned messages and the kept ones, trims applied.
func (s *Session) LiveView(ctx context.Context) ([]ViewEntry, error) {
	var r struct {
		View struct {
			Entries []ViewEntry `json:"entries"`
		} `json:"view"`
	}
	err := s.client.call(ctx, protocol.MethodSessionGet, protocol.SessionGetParams{Session: s.ID}, &r)
	return r.View.Entries, err
}

// Forked is what Fork made.
type Forked = protocol.SessionForkResult

// Fork makes a new session whose history is this one's up to message atSeq (0: the last) and
// whose live view is this one's as it was then, and returns it to continue in. Nothing is copied
// but the view's records: forking a long session is cheap.
func (s *Session) Fork(ctx context.Context, atSeq uint64) (*Session, Forked, error) {
	params := protocol.SessionForkParams{Session: s.ID}
	if atSeq > 0 {
		params.At = &atSeq
	}
	var r Forked
	if err := s.client.call(ctx, protocol.MethodSessionFork, params, &r); err != nil {
		return nil, r, err
	}
	return &Session{client: s.client, ID: r.Session.ID}, r, nil
}

// Rewound is what Rewind or UndoRewind did.
type Rewound = protocol.SessionRewindResult

// Rewind takes message toSeq and every later one out of the session's live view (nothing is
// deleted; new messages follow them). Refused with ErrRefused when the view that restores would
// not fit the session's window.
func (s *Session) Rewind(ctx context.Context, toSeq uint64) (Rewound, error) {
	var r Rewound
	err := s.client.call(ctx, protocol.MethodSessionRewind, protocol.SessionRewindParams{Session: s.ID, To: &toSeq}, &r)
	return r, err
}

// RewindRequests rewinds the session to before the user's n-th-last request (1: the latest);
// the result carries that request's text.
func (s *Session) RewindRequests(ctx context.Context, n uint64) (Rewound, error) {
	var r Rewound
	err := s.client.call(ctx, protocol.MethodSessionRewind, protocol.SessionRewindParams{Session: s.ID, Last: &n}, &r)
	return r, err
}

// UndoRewind brings back the messages of the latest rewind while no message was added after it.
func (s *Session) UndoRewind(ctx context.Context) (Rewound, error) {
	var r Rewound
	err := s.client.call(ctx, protocol.MethodSessionRewind, protocol.SessionRewindParams{Session: s.ID, Undo: true}, &r)
	return r, err
}

// Delete deletes the session and everything it holds.
func (s *Session) Delete(ctx context.Context) error {
	return s.client.call(ctx, protocol.MethodSessionDelete, protocol.SessionParams{Session: s.ID}, nil)
}

// KnowledgeHit is one chunk of the project's documents that a knowledge search found.
type KnowledgeHit = protocol.KnowledgeHit

// KnowledgeFound is what a knowledge search found.
type KnowledgeFound = protocol.Found

// KnowledgeSearch searches the project's indexed documents (`seshat knowledge add`), at most
// limit hits (0: the server's default).
func (c *Client) KnowledgeSearch(ctx context.Context, query string, limit int) (KnowledgeFound, error) {
	params := protocol.KnowledgeSearchParams{Query: query}
	if limit > 0 {
		n := uint64(limit)
		params.Limit = &n
	}
	var found KnowledgeFound
	err := c.call(ctx, protocol.MethodKnowledgeSearch, params, &found)
	return found, err
}

// KnowledgeChunk is a chunk of a document read whole (or as much as one answer holds).
type KnowledgeChunk = protocol.KnowledgeChunk

// KnowledgeRead reads a chunk a knowledge search found, whole, from byte offset (0: its start;
// a cut answer's Note gives the offset to read on from). A chunk the caller may not read —
// another project's, or a team's they are not granted — is ErrChunkNotFound, as a missing one.
func (c *Client) KnowledgeRead(ctx context.Context, id int64, offset uint64) (KnowledgeChunk, error) {
	params := protocol.KnowledgeReadParams{ID: id}
	if offset > 0 {
		params.Offset = &offset
	}
	var chunk KnowledgeChunk
	err := c.call(ctx, protocol.MethodKnowledgeRead, params, &chunk)
	return chunk, err
}

// Export is the session's whole record as JSON Lines, byte for byte what `seshat sessions
// export` writes (what `seshat sessions import` reads into another store).
func (s *Session) Export(ctx context.Context) (string, error) {
	var out protocol.SessionExportResult
	err := s.client.call(ctx, protocol.MethodSessionExport, protocol.SessionParams{Session: s.ID}, &out)
	return out.JSONL, err
}

// HistoryHit is a message a history search found.
type HistoryHit = protocol.HistoryHit

// SearchHistory searches what was said in the caller's sessions — the project's, or with all
// every one of theirs — in the original messages, whatever compaction did; at most limit hits
// (0: the server's default of 20), best first.
func (c *Client) SearchHistory(ctx context.Context, query string, all bool, limit int) ([]HistoryHit, error) {
	params := protocol.HistorySearchParams{Query: query, All: all}
	if limit > 0 {
		n := uint64(limit)
		params.Limit = &n
	}
	var out protocol.HistorySearchResult
	err := c.call(ctx, protocol.MethodHistorySearch, params, &out)
	return out.Hits, err
}

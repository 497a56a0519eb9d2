package seshat

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"example.invalid/seshat/sdk/go/seshat/protocol"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ClientConfig says how to start `seshat serve` and how its sessions run.
type ClientConfig struct {
	// AutoCompact turns automatic compaction on: before each model call, a request that would
	// not fit the window is compacted (tool results trimmed, older messages summarised).
	AutoCompact bool
	// CompactSummaryModel is the model that writes summaries (the session's model when empty).
	CompactSummaryModel string
	// Provider is the provider's configured name ("anthropic", "openai", ...); empty: the
	// configured default or the environment's.
	Provider string
	// Model is the model id; empty: the configured default.
	Model string
	// Window overrides the model's context window in tokens (0: what Seshat knows or learns).
	Window uint64
	// DB is the session database (empty: Seshat's default, or SESHAT_HOME's).
	DB string
	// ProjectDir is the project the sessions belong to (the child's working directory; empty:
	// this process's).
	ProjectDir string
	// Binary is the seshat executable (empty: "seshat" on PATH).
	Binary string
	// Env is added to this process's environment for the child (keys, SESHAT_HOME, ...).
	Env []string

	// URL is a remote `seshat serve --listen` to use instead of a child process: wss://HOST:PORT
	// (or ws:// on loopback). Binary, DB and Env are then not used: the server has its own
	// store and provider credentials.
	URL string
	// Token is the bearer token a remote server knows the user by (`seshat tokens create`).
	Token string
	// TLSConfig secures wss:// (nil: the system's roots). To trust a private CA, set RootCAs.
	TLSConfig *tls.Config `json:"-"`
	// Project is the project key a remote server files the sessions, project memory and
	// knowledge under (empty: ProjectDir's absolute path). The project's AGENTS.md and
	// CLAUDE.md are read here, from ProjectDir, and sent with it.
	Project string
	// ReconnectTimeout is how long a remote client tries to connect again after losing its
	// connection (the server restarted, the network dropped), waiting 100 ms, then twice as long
	// each time up to 5 s, between attempts. Meanwhile calls wait for the connection (as long as
	// their ctx allows). 0 means 2 minutes; a negative value, never: the client closes.
	ReconnectTimeout time.Duration
	// OnBackground, when set, hears a session's events outside any turn: a summary written in the
	// background and swapped in between turns (Compaction, its Report's Background saying why),
	// an idle session's compaction (CompactionSummarising, then Compaction), a compaction asked
	// with Session.Compact while it runs, and their warnings. It is called on the client's
	// reading goroutine: it must not block (hand the event to a channel or a goroutine).
	OnBackground func(session string, e Event) `json:"-"`
}

// defaultReconnect is how long a remote client tries to connect again unless configured.
const defaultReconnect = 2 * time.Minute

// Client is a running `seshat serve` and the sessions it serves. Its methods may be called from
// several goroutines.
type Client struct {
	cfg    ClientConfig
	cmd    *exec.Cmd // the child, when not remote
	link   transport
	writeM sync.Mutex

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan rpcMessage
	turns   map[string]*Stream // by session id, the turn in flight
	tools   map[string]registeredTool
	hooks   []Hook
	// announced: the tools were sent to the server (no more may be registered).
	announced bool
	closed    bool
	// ended is why the server took the connection's access away (access/revoked), if it did.
	ended *Error
	// lost is why a remote client could not connect again, once it gave up.
	lost error
	// ready is closed while a connection is up; a new one waits while the client reconnects.
	ready chan struct{}
	// gen counts the connections made; initGen is the one `initialize` was sent on.
	gen, initGen int64
	// closing is closed by Close (it wakes a reconnection's wait).
	closing chan struct{}
	done    chan struct{}
	// initLock is held while a connection is initialised (a channel, so a waiting call can give
	// up when its ctx ends).
	initLock chan struct{}
}

type registeredTool struct {
	schema json.RawMessage
	run    func(ctx context.Context, args json.RawMessage) (string, error)
	desc   string
}

type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    struct {
		Code string `json:"code"`
	} `json:"data"`
}

// NewClient starts `seshat serve` as a child process. Register tools with RegisterTool before
// the first session call: they are announced when the client initialises, on first use.
func NewClient(ctx context.Context, cfg ClientConfig) (*Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// What can be checked here is checked before anything starts.
	if cfg.Window != 0 && cfg.Window < MinWindow {
		return nil, &Error{Code: "invalid_config", Message: fmt.Sprintf("ClientConfig.Window is %d tokens; Seshat needs at least %d (leave it 0 to have the window found)", cfg.Window, MinWindow)}
	}
	if cfg.URL != "" {
		return dialClient(ctx, cfg)
	}
	bin := cfg.Binary
	if bin == "" {
		bin = "seshat"
	}
	var args []string
	if cfg.DB != "" {
		args = append(args, "--db", cfg.DB)
	}
	args = append(args, "serve")
	cmd := exec.Command(bin, args...)
	cmd.Dir = cfg.ProjectDir
	cmd.Env = append(os.Environ(), cfg.Env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("seshat: cannot start %s serve: %w", bin, err)
	}
	scanner := bufio.NewScanner(stdout)
	scanner.Buffer(make([]byte, 1<<20), maxLine)
	c := newClient(cfg, &stdio{stdin: stdin, lines: scanner}, cmd)
	if err := c.check(ctx); err != nil {
		return nil, fmt.Errorf("seshat: %s serve did not answer: %w", bin, err)
	}
	return c, nil
}

// dialClient connects to the remote server cfg.URL names.
func dialClient(ctx context.Context, cfg ClientConfig) (*Client, error) {
	if cfg.Token == "" {
		return nil, &Error{Code: "invalid_config", Message: "ClientConfig.Token is empty: a remote server needs the token `seshat tokens create` made for you"}
	}
	ws, err := dialWebSocket(ctx, cfg.URL, upgradeHeader(cfg), cfg.TLSConfig)
	if err != nil {
		return nil, err
	}
	c := newClient(cfg, &remote{ws: ws}, nil)
	if err := c.check(ctx); err != nil {
		var known *Error
		if errors.As(err, &known) {
			return nil, err
		}
		return nil, fmt.Errorf("seshat: %s did not answer: %w", cfg.URL, err)
	}
	return c, nil
}

// upgradeHeader is what a remote client sends with its upgrade request: its token and name.
func upgradeHeader(cfg ClientConfig) http.Header {
	header := http.Header{}
	header.Set("Authorization", "Bearer "+cfg.Token)
	header.Set("User-Agent", "seshat-go/"+Version)
	return header
}

func newClient(cfg ClientConfig, link transport, cmd *exec.Cmd) *Client {
	c := &Client{
		cfg: cfg, link: link, cmd: cmd, initLock: make(chan struct{}, 1),
		pending: map[int64]chan rpcMessage{}, turns: map[string]*Stream{}, tools: map[string]registeredTool{},
		ready: make(chan struct{}), gen: 1, closing: make(chan struct{}), done: make(chan struct{}),
	}
	close(c.ready)
	go c.read()
	return c
}

// check reads the server's configuration: a provider it cannot select is refused here, naming
// the field, instead of at the first turn. A ctx done meanwhile ends the client.
func (c *Client) check(ctx context.Context) error {
	var conf configGetResult
	if err := c.send(ctx, protocol.MethodConfigGet, protocol.Empty{}, &conf); err != nil {
		c.Close()
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return err
	}
	cfg := c.cfg
	if cfg.Provider != "" && !contains(conf.Providers, cfg.Provider) {
		c.Close()
		return &Error{Code: "invalid_config", Message: fmt.Sprintf("ClientConfig.Provider is %q, which the server cannot select: its providers are %s", cfg.Provider, strings.Join(conf.Providers, ", "))}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// configGetResult is what `config/get` answers (the schema's ConfigGetResult), in part.
type configGetResult = protocol.ConfigGetResult

// MinWindow is the smallest context window Seshat works with, in tokens.
const MinWindow = 4096

// RegisterTool offers the model a tool this program runs: its name, a description (the model
// chooses tools by it: say what it does and when to use it), a JSON Schema of its arguments, and
// the function. The tools are announced when the client starts its first call, so registering
// after that is an error (ErrToolsAnnounced). The function's ctx is cancelled when the turn is
// interrupted or the client closes.
func (c *Client) RegisterTool(name, description string, schema json.RawMessage, run func(ctx context.Context, args json.RawMessage) (string, error)) error {
	c.initLock <- struct{}{}
	defer func() { <-c.initLock }()
	if c.announced {
		return &Error{Code: ErrToolsAnnounced.Code, Message: "tool " + name + " was registered after the client started: register tools before the first session call"}
	}
	if description == "" {
		return &Error{Code: "invalid_params", Message: "tool " + name + " has no description: the model chooses tools by their description"}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tools[name] = registeredTool{schema: schema, run: run, desc: description}
	return nil
}

// Close ends the client: turns in flight are interrupted and stored; a child `seshat serve`
// exits, a remote connection is closed.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.closing)
	link := c.link
	c.mu.Unlock()
	_ = link.close()
	<-c.done
	if c.cmd == nil {
		return nil
	}
	return c.cmd.Wait()
}

func (c *Client) read() {
	defer close(c.done)
	for {
		c.mu.Lock()
		link := c.link
		c.mu.Unlock()
		c.readFrom(link)
		c.mu.Lock()
		// A remote client whose connection dropped — not closed by this program, its access
		// not taken away — connects again; anything else ends the client.
		again := c.cmd == nil && c.cfg.URL != "" && !c.closed && c.ended == nil && c.cfg.ReconnectTimeout >= 0
		why := c.closedErr()
		if c.cmd == nil && c.cfg.URL != "" && c.ended == nil && !c.closed {
			why = &Error{Code: ErrConnectionLost.Code, Message: "the connection to " + c.cfg.URL + " was lost"}
		}
		if again {
			c.ready = make(chan struct{})
		} else {
			c.closed = true
		}
		c.dropInFlight(why)
		c.mu.Unlock()
		if !again {
			return
		}
		if err := c.redial(); err != nil {
			c.mu.Lock()
			c.closed, c.lost = true, err
			c.mu.Unlock()
			return
		}
	}
}

// readFrom routes what the server sends on link until it fails.
func (c *Client) readFrom(link transport) {
	for {
		line, err := link.recv()
		if err != nil {
			return
		}
		var msg rpcMessage
		if json.Unmarshal(line, &msg) != nil {
			continue
		}
		switch {
		case msg.Method == protocol.NotificationAccessRevoked:
			var p struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			}
			if json.Unmarshal(msg.Params, &p) == nil {
				c.mu.Lock()
				c.ended = &Error{Code: p.Code, Message: p.Message}
				c.mu.Unlock()
			}
		case msg.Method == "tool/call" && len(msg.ID) > 0:
			go c.runTool(msg, link)
		case msg.Method == "hook/call" && len(msg.ID) > 0:
			go c.runHook(msg, link)
		case msg.Method != "":
			c.notification(msg)
		default:
			id, err := strconv.ParseInt(string(msg.ID), 10, 64)
			if err != nil {
				continue
			}
			c.mu.Lock()
			ch := c.pending[id]
			delete(c.pending, id)
			c.mu.Unlock()
			if ch != nil {
				ch <- msg
			}
		}
	}
}

// dropInFlight ends what waited on the connection that ended, for why: each call waiting for
// its answer fails (whether the server applied it is unknown), and each turn in flight ends as
// interrupted, with the text it had streamed — what the server stores of it on a remote server.
// Called with c.mu held.
func (c *Client) dropInFlight(why error) {
	failed := rpcMessage{Error: &rpcError{Message: why.Error()}}
	var known *Error
	if errors.As(why, &known) {
		failed.Error.Message, failed.Error.Data.Code = known.Message, known.Code
	}
	if errors.As(why, &known) && known.Code == ErrConnectionLost.Code {
		failed.Error.Message += " before the answer came: whether the server applied the request is unknown"
	}
	for id, ch := range c.pending {
		if failed.Error.Data.Code == "" {
			close(ch)
		} else {
			ch <- failed
		}
		delete(c.pending, id)
	}
	for sid, s := range c.turns {
		if c.cmd == nil {
			lost := why
			if errors.As(why, &known) && known.Code == ErrConnectionLost.Code {
				lost = &Error{Code: known.Code, Message: known.Message + " mid-turn: the server stores what had arrived as the interrupted answer (Outcome.Text holds what this client received); send it again with the same key to have it answered"}
			}
			s.finish(Outcome{Session: sid, Text: s.streamed(), Interrupted: true}, lost)
		} else {
			s.finish(Outcome{}, why)
		}
		delete(c.turns, sid)
	}
}

// redial connects to the remote server again, with backoff, until ReconnectTimeout has passed,
// Close is called, or the server refuses the client for good (its token, say): then the error
// says why. Calls made meanwhile wait for it.
func (c *Client) redial() error {
	timeout := c.cfg.ReconnectTimeout
	if timeout == 0 {
		timeout = defaultReconnect
	}
	deadline := time.Now().Add(timeout)
	wait := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		go func() {
			select {
			case <-c.closing:
				cancel()
			case <-ctx.Done():
			}
		}()
		ws, err := dialWebSocket(ctx, c.cfg.URL, upgradeHeader(c.cfg), c.cfg.TLSConfig)
		cancel()
		select {
		case <-c.closing:
			if ws != nil {
				_ = ws.close()
			}
			return ErrClosed
		default:
		}
		if err == nil {
			c.mu.Lock()
			if c.closed {
				c.mu.Unlock()
				_ = ws.close()
				return ErrClosed
			}
			c.link = &remote{ws: ws}
			c.gen++
			close(c.ready)
			c.mu.Unlock()
			return nil
		}
		var refused *Error
		if errors.As(err, &refused) && !retryable(refused.Code) {
			return &Error{Code: refused.Code, Message: "the connection to " + c.cfg.URL + " was lost, and connecting again was refused: " + refused.Message}
		}
		if !time.Now().Add(wait).Before(deadline) {
			return &Error{Code: ErrConnectionLost.Code, Message: fmt.Sprintf("the connection to %s was lost, and %d attempts to connect again over %s failed, the last with: %v (ClientConfig.ReconnectTimeout gives them longer)", c.cfg.URL, attempt, timeout, err)}
		}
		select {
		case <-time.After(wait):
		case <-c.closing:
			return ErrClosed
		}
		if wait *= 2; wait > 5*time.Second {
			wait = 5 * time.Second
		}
	}
}

// retryable says whether a server's refusal of an upgrade may pass by itself (it is busy,
// stopping, or cannot reach its store) rather than concern the client's token or user.
func retryable(code string) bool {
	return !strings.HasPrefix(code, "token_") && !strings.HasPrefix(code, "user_") && code != "invalid_config"
}

// closedErr is why the connection ended: the access the server took away, else ErrClosed.
// Called with c.mu held.
func (c *Client) closedErr() error {
	if c.ended != nil {
		return c.ended
	}
	if c.lost != nil {
		return c.lost
	}
	return ErrClosed
}

// writeTo writes one message on link (the connection it was meant for, never a newer one).
func (c *Client) writeTo(link transport, v interface{}) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.writeM.Lock()
	defer c.writeM.Unlock()
	return link.send(line)
}

// call sends a request, the client initialised first, and waits for its result (decoded into
// out when non-nil). A connection made again meanwhile is initialised before the request goes.
func (c *Client) call(ctx context.Context, method string, params interface{}, out interface{}) error {
	for attempt := 1; ; attempt++ {
		gen, err := c.initialize(ctx)
		if err != nil {
			return err
		}
		err = c.sendOn(ctx, gen, method, params, out)
		if err != errStale {
			return err
		}
		if attempt == 3 {
			return &Error{Code: ErrConnectionLost.Code, Message: "the connection to " + c.cfg.URL + " kept dropping: the request was not sent"}
		}
	}
}

// errStale: the connection a request was meant for was replaced before it was sent.
var errStale = errors.New("the connection was replaced")

// send sends a request as it is, on whichever connection is up, and waits for its result.
func (c *Client) send(ctx context.Context, method string, params interface{}, out interface{}) error {
	return c.sendOn(ctx, 0, method, params, out)
}

// waitReady waits while a remote client reconnects; the connection's generation then.
func (c *Client) waitReady(ctx context.Context) (int64, error) {
	c.mu.Lock()
	if c.closed {
		defer c.mu.Unlock()
		return 0, c.closedErr()
	}
	ready := c.ready
	c.mu.Unlock()
	select {
	case <-ready:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-c.done:
		c.mu.Lock()
		defer c.mu.Unlock()
		return 0, c.closedErr()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, c.closedErr()
	}
	return c.gen, nil
}

// sendOn sends a request on connection gen (0: any) and waits for its result; errStale when
// that connection is gone.
func (c *Client) sendOn(ctx context.Context, gen int64, method string, params interface{}, out interface{}) error {
	if _, err := c.waitReady(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	if c.closed {
		defer c.mu.Unlock()
		return c.closedErr()
	}
	if gen != 0 && gen != c.gen {
		c.mu.Unlock()
		return errStale
	}
	link := c.link
	c.nextID++
	id := c.nextID
	ch := make(chan rpcMessage, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	if params == nil {
		params = map[string]interface{}{}
	}
	if err := c.writeTo(link, map[string]interface{}{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		// Nothing was sent: the connection is ended (its reader notices at once), and the call is
		// made again on the next one, or fails.
		c.mu.Lock()
		delete(c.pending, id)
		closed := c.closed
		c.mu.Unlock()
		if remote := c.cmd == nil && c.cfg.URL != ""; remote {
			_ = link.close()
			if gen != 0 && !closed {
				return errStale
			}
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.closedErr()
	}
	select {
	case msg, ok := <-ch:
		if !ok {
			c.mu.Lock()
			defer c.mu.Unlock()
			return c.closedErr()
		}
		if msg.Error != nil {
			code := msg.Error.Data.Code
			if code == "" {
				code = "rpc_" + strconv.Itoa(msg.Error.Code)
			}
			return &Error{Code: code, Message: msg.Error.Message}
		}
		if out != nil {
			return json.Unmarshal(msg.Result, out)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// initialize initialises the connection up now, once (a reconnected one again, with the same
// tools); returns its generation.
func (c *Client) initialize(ctx context.Context) (int64, error) {
	select {
	case c.initLock <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	defer func() { <-c.initLock }()
	for {
		gen, err := c.waitReady(ctx)
		if err != nil {
			return 0, err
		}
		c.mu.Lock()
		done := c.initGen == gen
		c.mu.Unlock()
		if done {
			return gen, nil
		}
		if err := c.initializeOn(ctx, gen); err != errStale {
			return gen, err
		}
	}
}

// initializeOn sends `initialize` on connection gen (errStale when it is gone).
func (c *Client) initializeOn(ctx context.Context, gen int64) error {
	c.mu.Lock()
	var tools []protocol.ToolDefinition
	for name, t := range c.tools {
		tools = append(tools, protocol.ToolDefinition{Name: name, Description: t.desc, InputSchema: t.schema})
	}
	hooks := c.hookRegistrations()
	c.mu.Unlock()
	params := protocol.InitializeParams{
		ProtocolVersion:     ptr(ProtocolVersion),
		ClientInfo:          &protocol.ClientInfo{Name: "seshat-go", Version: ptr(Version)},
		AutoCompact:         ptr(c.cfg.AutoCompact),
		CompactSummaryModel: nonEmpty(c.cfg.CompactSummaryModel),
		Provider:            nonEmpty(c.cfg.Provider),
		Model:               nonEmpty(c.cfg.Model),
		Tools:               tools,
		Hooks:               hooks,
	}
	if c.cfg.Window != 0 {
		params.Window = ptr(c.cfg.Window)
	}
	if c.cmd == nil {
		// A remote server knows nothing of this machine: the project is named, and its
		// instructions sent.
		project, files := c.project()
		params.Project, params.Instructions = &project, files
	}
	var answer struct {
		ProtocolVersion string `json:"protocol_version"`
	}
	if err := c.sendOn(ctx, gen, protocol.MethodInitialize, params, &answer); err != nil {
		return err
	}
	if err := checkVersion(answer.ProtocolVersion); err != nil {
		// Nothing more can be said to this server: every later call fails the same way.
		c.Close()
		return err
	}
	c.mu.Lock()
	c.initGen, c.announced = gen, true
	c.mu.Unlock()
	return nil
}

// checkVersion compares the protocol version the server answered with the one this SDK speaks:
// another is a protocol_mismatch naming both and the side to upgrade (versions are dates).
func checkVersion(server string) error {
	if server == ProtocolVersion {
		return nil
	}
	shown, behind := server, "this client (the Go SDK)"
	if server == "" {
		shown = "(none)"
	}
	if shown < ProtocolVersion {
		behind = "the server"
	}
	return &Error{Code: "protocol_mismatch", Message: fmt.Sprintf("the server speaks protocol %s and this client speaks %s: upgrade %s (host/protocol/protocol.md lists what changed)", shown, ProtocolVersion, behind)}
}

// Version is this SDK's version.
const Version = "0.1.0"

// ProtocolVersion is the version of `seshat serve`'s protocol this SDK speaks
// (host/protocol/protocol.md).
const ProtocolVersion = "2026-12-08"

// ptr is a pointer to v: an optional param that is sent.
func ptr[T any](v T) *T { return &v }

// nonEmpty is a pointer to s, or nil for "" (an optional param left out).
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// runTool runs a tool the server called on link, and answers there (never on a connection made
// since, whose server knows nothing of the call).
func (c *Client) runTool(msg rpcMessage, link transport) {
	var p struct {
		Session   string          `json:"session"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(msg.Params, &p)
	c.mu.Lock()
	t, ok := c.tools[p.Name]
	st := c.turns[p.Session]
	c.mu.Unlock()
	// Cancelled when the turn is interrupted or ends, or the client closes.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		var turnDone, stopped <-chan struct{}
		if st != nil {
			turnDone, stopped = st.done, st.stopped
		}
		select {
		case <-turnDone:
		case <-stopped:
		case <-c.done:
		case <-ctx.Done():
			return
		}
		cancel()
	}()
	var result protocol.ToolCallResult
	if !ok {
		result = protocol.ToolCallResult{Content: "no tool named " + p.Name + " is registered", IsError: true}
	} else if out, err := t.run(ctx, p.Arguments); err != nil {
		result = protocol.ToolCallResult{Content: err.Error(), IsError: true}
	} else {
		result = protocol.ToolCallResult{Content: out}
	}
	_ = c.writeTo(link, map[string]interface{}{"jsonrpc": "2.0", "id": json.RawMessage(msg.ID), "result": result})
}

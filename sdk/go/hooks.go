package seshat

import (
	"context"
	"encoding/json"
	"time"

	"example.invalid/seshat/sdk/go/seshat/protocol"
)

// Hook is a function this program runs at a moment of a session's life, as a command hook in
// config.toml would: the server asks it (`hook/call`) at each Event of the sessions this client
// opens, after the hooks the server runs itself, and waits for its decision.
type Hook struct {
	// Event is when it runs (protocol.HookEventPreTool, ...).
	Event protocol.HookEvent
	// Name names it, once among the client's hooks: letters, digits, '-', '_' or '.'.
	Name string
	// Matcher chooses the tools a tool event's hook runs for: names separated by '|', '*'
	// matching any characters (empty: every tool).
	Matcher string
	// Timeout is how long the server waits for its answer (0: 60 s; at most 10 minutes); Run's
	// ctx ends then too. Past it, the hook failed.
	Timeout time.Duration
	// Required makes a failure (an error, no answer in time) block what the hook was told about,
	// instead of being reported and passed over.
	Required bool
	// Run decides. A zero HookDecision goes on; Decision protocol.VerdictBlock with a Reason
	// stops a prompt or a tool call; Context adds text to the request; Instructions (pre_compact)
	// guide the summary. An error is reported (and on a service, audited) and passed over unless
	// Required.
	Run func(ctx context.Context, call HookCall) (protocol.HookDecision, error)
}

// HookCall is what a hook is told.
type HookCall struct {
	// Payload holds the fields every event has: the event, the session, its project and seq.
	Payload protocol.HookPayload
	// Raw is the whole payload as the server sent it, the event's own fields included: a
	// prompt's "prompt", a tool's "tool", "arguments" and "result", a compaction's figures.
	Raw json.RawMessage
}

// Field decodes the payload's field name into v (an error when it is absent or does not fit).
func (h HookCall) Field(name string, v interface{}) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(h.Raw, &fields); err != nil {
		return err
	}
	raw, ok := fields[name]
	if !ok {
		return &Error{Code: "invalid_params", Message: "the " + string(h.Payload.Event) + " payload has no field " + name}
	}
	return json.Unmarshal(raw, v)
}

// RegisterHook adds a hook this program runs. Hooks are announced when the client starts its
// first call, so registering after that is an error (ErrToolsAnnounced).
func (c *Client) RegisterHook(h Hook) error {
	c.initLock <- struct{}{}
	defer func() { <-c.initLock }()
	if c.announced {
		return &Error{Code: ErrToolsAnnounced.Code, Message: "hook " + h.Name + " was registered after the client started: register hooks before the first session call"}
	}
	if h.Run == nil {
		return &Error{Code: "invalid_params", Message: "hook " + h.Name + " has no Run function"}
	}
	if h.Timeout != 0 && (h.Timeout < time.Millisecond || h.Timeout > 10*time.Minute) {
		return &Error{Code: "invalid_params", Message: "hook " + h.Name + "'s Timeout is " + h.Timeout.String() + ": give 1ms to 10m (0: 60 s)"}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range c.hooks {
		if o.Name == h.Name {
			return &Error{Code: "invalid_params", Message: "a hook named " + h.Name + " is registered already: name each once"}
		}
	}
	c.hooks = append(c.hooks, h)
	return nil
}

// hookRegistrations are the hooks as `initialize` announces them. Called with c.mu held.
func (c *Client) hookRegistrations() []protocol.HookRegistration {
	var out []protocol.HookRegistration
	for _, h := range c.hooks {
		r := protocol.HookRegistration{Event: h.Event, Name: h.Name, Required: h.Required}
		if h.Matcher != "" {
			r.Matcher = ptr(h.Matcher)
		}
		if h.Timeout > 0 {
			r.TimeoutMs = ptr(uint64(h.Timeout / time.Millisecond))
		}
		out = append(out, r)
	}
	return out
}

// runHook answers the server's `hook/call` on link.
func (c *Client) runHook(msg rpcMessage, link transport) {
	var p struct {
		Name    string          `json:"name"`
		Payload json.RawMessage `json:"payload"`
	}
	_ = json.Unmarshal(msg.Params, &p)
	c.mu.Lock()
	var hook *Hook
	for i := range c.hooks {
		if c.hooks[i].Name == p.Name {
			hook = &c.hooks[i]
		}
	}
	c.mu.Unlock()
	reply := map[string]interface{}{"jsonrpc": "2.0", "id": json.RawMessage(msg.ID)}
	fail := func(message string) {
		reply["error"] = map[string]interface{}{"code": -32000, "message": message}
		_ = c.writeTo(link, reply)
	}
	if hook == nil {
		fail("no hook named " + p.Name + " is registered")
		return
	}
	call := HookCall{Raw: p.Payload}
	if err := json.Unmarshal(p.Payload, &call.Payload); err != nil {
		fail("the payload does not fit: " + err.Error())
		return
	}
	timeout := hook.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	go func() {
		select {
		case <-c.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	decision, err := hook.Run(ctx, call)
	if err != nil {
		fail(err.Error())
		return
	}
	reply["result"] = decision
	_ = c.writeTo(link, reply)
}

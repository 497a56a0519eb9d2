package seshat

// A small WebSocket client (RFC 6455), enough for `seshat serve --listen ws://…` / `wss://…`:
// the opening handshake (its Sec-WebSocket-Accept checked), masked client frames, messages
// fragmented by the server reassembled, pings answered, and the closing handshake. Go's
// standard library has none, and the SDK depends on nothing else.

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The opcodes of RFC 6455, section 5.2.
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xA
)

// acceptGUID is the key every server appends to the client's nonce (RFC 6455, section 1.3).
const acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// CloseError is how a WebSocket connection ended when the server closed it: its status code
// (1000 normal, 1001 going away, 1008 policy, 1009 too big, ...) and reason.
type CloseError struct {
	Code   int
	Reason string
}

func (e *CloseError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("seshat: the server closed the connection (%d)", e.Code)
	}
	return fmt.Sprintf("seshat: the server closed the connection (%d: %s)", e.Code, e.Reason)
}

// wsConn is one client connection.
type wsConn struct {
	conn net.Conn
	br   *bufio.Reader
	// maxMessage bounds a message the server sends (reassembled).
	maxMessage int

	writeM   sync.Mutex
	sentStop bool // a close frame was sent: nothing more is
}

// dialWebSocket opens a connection to rawURL (ws:// or wss://), sending header with the upgrade
// request; tlsConfig (nil: the system's roots) secures wss://. A refused upgrade is an *Error
// with the code the server's JSON body names (token_invalid, too_many_connections, ...).
func dialWebSocket(ctx context.Context, rawURL string, header http.Header, tlsConfig *tls.Config) (*wsConn, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return nil, &Error{Code: "invalid_config", Message: fmt.Sprintf("ClientConfig.URL is %q: give ws://HOST:PORT or wss://HOST:PORT", rawURL)}
	}
	addr := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "wss" {
			port = "443"
		}
		addr = net.JoinHostPort(u.Hostname(), port)
	}
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("seshat: cannot connect to %s: %w", rawURL, err)
	}
	// The handshakes are bounded by ctx; the connection then has no deadline.
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	// ctx ending mid-handshake ends it (a deadline in the past wakes every blocked read).
	handshaking, watcher := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watcher)
		select {
		case <-ctx.Done():
			_ = conn.SetDeadline(time.Unix(1, 0))
		case <-handshaking:
		}
	}()
	finish := func() {
		close(handshaking)
		<-watcher
	}
	if u.Scheme == "wss" {
		cfg := &tls.Config{}
		if tlsConfig != nil {
			cfg = tlsConfig.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = u.Hostname()
		}
		secured := tls.Client(conn, cfg)
		if err := secured.HandshakeContext(ctx); err != nil {
			finish()
			_ = conn.Close()
			if ctxErr := contextEnded(ctx); ctxErr != nil {
				return nil, ctxErr
			}
			return nil, fmt.Errorf("seshat: TLS with %s failed: %w", rawURL, err)
		}
		conn = secured
	}
	ws, err := upgrade(conn, u, header)
	finish()
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		_ = conn.Close()
		if ctxErr := contextEnded(ctx); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, err
	}
	_ = conn.SetDeadline(time.Time{})
	return ws, nil
}

// contextEnded is ctx's error once it is done or its deadline has passed (the connection's
// deadline, set to ctx's, may fire a moment before ctx itself is done).
func contextEnded(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if deadline, ok := ctx.Deadline(); ok && !time.Now().Before(deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// upgrade sends the opening handshake on conn and checks the server's answer.
func upgrade(conn net.Conn, u *url.URL, header http.Header) (*wsConn, error) {
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	key := base64.StdEncoding.EncodeToString(nonce)
	target := *u
	target.Scheme = "http"
	req := &http.Request{Method: "GET", URL: &target, Host: u.Host, Header: http.Header{}, ProtoMajor: 1, ProtoMinor: 1}
	for name, values := range header {
		req.Header[name] = append([]string(nil), values...)
	}
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Sec-WebSocket-Key", key)
	req.Header.Set("Sec-WebSocket-Version", "13")
	if err := req.Write(conn); err != nil {
		return nil, fmt.Errorf("seshat: cannot send the upgrade request to %s: %w", u.Redacted(), err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return nil, fmt.Errorf("seshat: %s did not answer the upgrade request: %w", u.Redacted(), err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		var refusal struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(body, &refusal)
		if refusal.Code == "" {
			refusal.Code = fmt.Sprintf("http_%d", resp.StatusCode)
			refusal.Message = strings.TrimSpace(string(body))
		}
		return nil, &Error{Code: refusal.Code, Message: fmt.Sprintf("%s refused the connection (HTTP %d): %s", u.Redacted(), resp.StatusCode, refusal.Message)}
	}
	sum := sha1.Sum([]byte(key + acceptGUID))
	want := base64.StdEncoding.EncodeToString(sum[:])
	if !strings.EqualFold(resp.Header.Get("Upgrade"), "websocket") || resp.Header.Get("Sec-WebSocket-Accept") != want {
		return nil, fmt.Errorf("seshat: %s answered the upgrade without a valid Sec-WebSocket-Accept: not a WebSocket server", u.Redacted())
	}
	return &wsConn{conn: conn, br: br, maxMessage: maxLine}, nil
}

// writeFrame sends one whole frame, masked as a client's must be.
func (w *wsConn) writeFrame(opcode byte, payload []byte) error {
	w.writeM.Lock()
	defer w.writeM.Unlock()
	if w.sentStop {
		return ErrClosed
	}
	if opcode == opClose {
		w.sentStop = true
	}
	frame := make([]byte, 0, len(payload)+14)
	frame = append(frame, 0x80|opcode)
	switch n := len(payload); {
	case n < 126:
		frame = append(frame, 0x80|byte(n))
	case n <= 0xFFFF:
		frame = append(frame, 0x80|126, byte(n>>8), byte(n))
	default:
		frame = append(frame, 0x80|127)
		frame = binary.BigEndian.AppendUint64(frame, uint64(n))
	}
	var mask [4]byte
	if _, err := rand.Read(mask[:]); err != nil {
		return err
	}
	frame = append(frame, mask[:]...)
	for i, b := range payload {
		frame = append(frame, b^mask[i%4])
	}
	_, err := w.conn.Write(frame)
	return err
}

// writeText sends one message as a text frame.
func (w *wsConn) writeText(message []byte) error {
	return w.writeFrame(opText, message)
}

// readFrame reads one frame of the server's (never masked).
func (w *wsConn) readFrame() (fin bool, opcode byte, payload []byte, err error) {
	var head [2]byte
	if _, err = io.ReadFull(w.br, head[:]); err != nil {
		return
	}
	fin, opcode = head[0]&0x80 != 0, head[0]&0x0F
	if head[0]&0x70 != 0 {
		return fin, opcode, nil, errors.New("seshat: the server sent a frame with reserved bits set")
	}
	if head[1]&0x80 != 0 {
		return fin, opcode, nil, errors.New("seshat: the server sent a masked frame")
	}
	length := uint64(head[1] & 0x7F)
	switch length {
	case 126:
		var ext [2]byte
		if _, err = io.ReadFull(w.br, ext[:]); err != nil {
			return
		}
		length = uint64(binary.BigEndian.Uint16(ext[:]))
	case 127:
		var ext [8]byte
		if _, err = io.ReadFull(w.br, ext[:]); err != nil {
			return
		}
		length = binary.BigEndian.Uint64(ext[:])
	}
	if opcode >= opClose && (!fin || length > 125) {
		return fin, opcode, nil, errors.New("seshat: the server sent a fragmented or oversized control frame")
	}
	if length > uint64(w.maxMessage) {
		return fin, opcode, nil, fmt.Errorf("seshat: the server sent a frame of %d bytes, more than the %d a message may hold", length, w.maxMessage)
	}
	payload = make([]byte, int(length))
	_, err = io.ReadFull(w.br, payload)
	return
}

// readMessage reads the next whole message (fragments joined), answering pings meanwhile. When
// the server closes, the close is answered and the error is a *CloseError.
func (w *wsConn) readMessage() ([]byte, error) {
	var message []byte
	started := false
	for {
		fin, opcode, payload, err := w.readFrame()
		if err != nil {
			return nil, err
		}
		switch opcode {
		case opPing:
			if err := w.writeFrame(opPong, payload); err != nil && !errors.Is(err, ErrClosed) {
				return nil, err
			}
			continue
		case opPong:
			continue
		case opClose:
			closed := &CloseError{Code: 1005}
			if len(payload) >= 2 {
				closed.Code = int(binary.BigEndian.Uint16(payload))
				closed.Reason = string(payload[2:])
			}
			_ = w.writeFrame(opClose, payload[:min(len(payload), 2)])
			_ = w.conn.Close()
			return nil, closed
		case opText, opBinary:
			if started {
				return nil, errors.New("seshat: the server began a message inside another")
			}
			started = true
		case opContinuation:
			if !started {
				return nil, errors.New("seshat: the server continued a message it never began")
			}
		default:
			return nil, fmt.Errorf("seshat: the server sent an unknown opcode %#x", opcode)
		}
		if len(message)+len(payload) > w.maxMessage {
			return nil, fmt.Errorf("seshat: the server sent a message over %d bytes", w.maxMessage)
		}
		message = append(message, payload...)
		if fin {
			return message, nil
		}
	}
}

// close sends a normal close (if none was sent) and ends the connection.
func (w *wsConn) close() error {
	_ = w.writeFrame(opClose, []byte{0x03, 0xE8})
	return w.conn.Close()
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}

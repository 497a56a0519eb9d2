package seshat

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// frame is one frame as a test server read it.
type frame struct {
	fin     bool
	opcode  byte
	masked  bool
	payload []byte // unmasked
}

// serverFrame encodes a server's frame (never masked).
func serverFrame(fin bool, opcode byte, payload []byte) []byte {
	head := opcode
	if fin {
		head |= 0x80
	}
	out := []byte{head}
	switch n := len(payload); {
	case n < 126:
		out = append(out, byte(n))
	case n <= 0xFFFF:
		out = append(out, 126, byte(n>>8), byte(n))
	default:
		out = append(out, 127)
		out = binary.BigEndian.AppendUint64(out, uint64(n))
	}
	return append(out, payload...)
}

// readClientFrame reads one frame the client sent, unmasking it.
func readClientFrame(r *bufio.Reader) (frame, error) {
	var head [2]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return frame{}, err
	}
	f := frame{fin: head[0]&0x80 != 0, opcode: head[0] & 0x0F, masked: head[1]&0x80 != 0}
	n := uint64(head[1] & 0x7F)
	switch n {
	case 126:
		var ext [2]byte
		if _, err := io.ReadFull(r, ext[:]); err != nil {
			return f, err
		}
		n = uint64(binary.BigEndian.Uint16(ext[:]))
	case 127:
		var ext [8]byte
		if _, err := io.ReadFull(r, ext[:]); err != nil {
			return f, err
		}
		n = binary.BigEndian.Uint64(ext[:])
	}
	var mask [4]byte
	if f.masked {
		if _, err := io.ReadFull(r, mask[:]); err != nil {
			return f, err
		}
	}
	f.payload = make([]byte, n)
	if _, err := io.ReadFull(r, f.payload); err != nil {
		return f, err
	}
	for i := range f.payload {
		f.payload[i] ^= mask[i%4]
	}
	return f, nil
}

// testServer accepts one connection, answers its upgrade with answer (given the request), and
// then runs script on the connection. What it saw goes to the returned channel; nothing is
// asserted here.
func testServer(t *testing.T, answer func(req *http.Request) string, script func(conn net.Conn, r *bufio.Reader) []frame) (string, <-chan []frame) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	seen := make(chan []frame, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			seen <- nil
			return
		}
		defer conn.Close()
		r := bufio.NewReader(conn)
		req, err := http.ReadRequest(r)
		if err != nil {
			seen <- nil
			return
		}
		if _, err := io.WriteString(conn, answer(req)); err != nil {
			seen <- nil
			return
		}
		seen <- script(conn, r)
	}()
	return "ws://" + ln.Addr().String() + "/", seen
}

// accepting answers an upgrade as RFC 6455 says.
func accepting(req *http.Request) string {
	sum := sha1.Sum([]byte(req.Header.Get("Sec-WebSocket-Key") + acceptGUID))
	return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
		base64.StdEncoding.EncodeToString(sum[:]) + "\r\n\r\n"
}

func TestClientFramesAreMaskedFragmentsJoinedPingsAnsweredAndTheCloseReturned(t *testing.T) {
	big := strings.Repeat("x", 70000)
	url, seen := testServer(t, accepting, func(conn net.Conn, r *bufio.Reader) []frame {
		var got []frame
		first, err := readClientFrame(r)
		if err != nil {
			return got
		}
		got = append(got, first)
		// A message in two fragments with a ping between them, then a long one, then the close.
		out := serverFrame(false, opText, []byte("Hel"))
		out = append(out, serverFrame(true, opPing, []byte("p1"))...)
		out = append(out, serverFrame(true, opContinuation, []byte("lo"))...)
		out = append(out, serverFrame(true, opText, []byte(big))...)
		out = append(out, serverFrame(true, opClose, append([]byte{0x03, 0xE9}, "bye"...))...)
		if _, err := conn.Write(out); err != nil {
			return got
		}
		for len(got) < 3 {
			f, err := readClientFrame(r)
			if err != nil {
				break
			}
			got = append(got, f)
		}
		return got
	})
	ws, err := dialWebSocket(context.Background(), url, http.Header{"Authorization": {"Bearer t"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.writeText([]byte(`{"jsonrpc":"2.0"}`)); err != nil {
		t.Fatal(err)
	}
	first, err := ws.readMessage()
	if err != nil || string(first) != "Hello" {
		t.Fatalf("the fragmented message: %q, %v", first, err)
	}
	second, err := ws.readMessage()
	if err != nil || string(second) != big {
		t.Fatalf("the long message: %d bytes, %v", len(second), err)
	}
	_, err = ws.readMessage()
	var closed *CloseError
	if !errors.As(err, &closed) || closed.Code != 1001 || closed.Reason != "bye" {
		t.Fatalf("the close: %v", err)
	}
	got := <-seen
	if len(got) != 3 {
		t.Fatalf("the server read %d frames: %+v", len(got), got)
	}
	if !got[0].masked || !got[0].fin || got[0].opcode != opText || string(got[0].payload) != `{"jsonrpc":"2.0"}` {
		t.Fatalf("the client's text frame: %+v", got[0])
	}
	if !got[1].masked || got[1].opcode != opPong || string(got[1].payload) != "p1" {
		t.Fatalf("the ping's answer: %+v", got[1])
	}
	if !got[2].masked || got[2].opcode != opClose || binary.BigEndian.Uint16(got[2].payload) != 1001 {
		t.Fatalf("the close's answer: %+v", got[2])
	}
}

func TestARefusedUpgradeIsAnErrorWithTheServersCode(t *testing.T) {
	body := `{"code":"token_expired","message":"the token has expired: ask for a new one"}`
	url, _ := testServer(t, func(*http.Request) string {
		return fmt.Sprintf("HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}, func(net.Conn, *bufio.Reader) []frame { return nil })
	_, err := dialWebSocket(context.Background(), url, nil, nil)
	var e *Error
	if !errors.As(err, &e) || e.Code != "token_expired" || !strings.Contains(e.Message, "401") {
		t.Fatalf("%v", err)
	}
}

func TestAServerWithoutTheRightAcceptIsNotAWebSocketServer(t *testing.T) {
	url, _ := testServer(t, func(*http.Request) string {
		return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: bm9wZQ==\r\n\r\n"
	}, func(net.Conn, *bufio.Reader) []frame { return nil })
	_, err := dialWebSocket(context.Background(), url, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "Sec-WebSocket-Accept") {
		t.Fatalf("%v", err)
	}
}

func TestAServerThatNeverAnswersEndsWithTheContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = dialWebSocket(ctx, "ws://"+ln.Addr().String(), nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v", err)
	}
}

func TestAMalformedURLNamesTheField(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:1", "ws://", "not a url"} {
		_, err := dialWebSocket(context.Background(), u, nil, nil)
		var e *Error
		if !errors.As(err, &e) || e.Code != "invalid_config" || !strings.Contains(e.Message, "ClientConfig.URL") {
			t.Fatalf("%q: %v", u, err)
		}
	}
}

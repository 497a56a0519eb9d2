package seshat_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "example.invalid/seshat/sdk/go/seshat"
)

// remoteMode runs every test that starts its client with start() against a `seshat serve
// --listen wss://` over real TLS instead of a child process (.ci/go-test runs the suite both
// ways): the same API, the same expectations.
var remoteMode = os.Getenv("SESHAT_GO_REMOTE") == "1"

// authority is a CA made for the tests and the loopback certificate it signed.
type authority struct {
	roots     *x509.CertPool
	certPEM   []byte
	keyPEM    []byte
	otherRoot *x509.CertPool // a CA that signed nothing here
}

func newAuthority(t testing.TB) authority {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Seshat Go tests CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	roots := x509.NewCertPool()
	roots.AddCert(caCert)
	other := x509.NewCertPool()
	otherKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	otherDER, _ := x509.CreateCertificate(rand.Reader, ca, ca, &otherKey.PublicKey, otherKey)
	otherCert, _ := x509.ParseCertificate(otherDER)
	other.AddCert(otherCert)
	return authority{
		roots:     roots,
		certPEM:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		keyPEM:    pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		otherRoot: other,
	}
}

// service is a `seshat serve --listen wss://127.0.0.1:0` in a test's Seshat home.
type service struct {
	url  string
	cmd  *exec.Cmd
	auth authority
}

// seshatIn runs the seshat of cfg with cfg's environment and returns its stdout.
func seshatIn(t testing.TB, cfg ClientConfig, args ...string) string {
	cmd := exec.Command(cfg.Binary, args...)
	cmd.Env = append(os.Environ(), cfg.Env...)
	cmd.Dir = cfg.ProjectDir
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("seshat %v: %v: %s", args, err, exit.Stderr)
		}
		t.Fatalf("seshat %v: %v", args, err)
	}
	return string(out)
}

// startService starts a service on cfg's home (its store, config and provider key), stopped
// when the test ends.
func startService(t testing.TB, cfg ClientConfig, auth authority) *service {
	return startServiceAt(t, cfg, auth, "wss://127.0.0.1:0")
}

// startServiceAt is startService listening on listen (wss://127.0.0.1:PORT: the same address
// again after a restart).
func startServiceAt(t testing.TB, cfg ClientConfig, auth authority, listen string) *service {
	home := ""
	for _, e := range cfg.Env {
		if strings.HasPrefix(e, "SESHAT_HOME=") {
			home = strings.TrimPrefix(e, "SESHAT_HOME=")
		}
	}
	certFile, keyFile := filepath.Join(home, "cert.pem"), filepath.Join(home, "key.pem")
	if err := os.WriteFile(certFile, auth.certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, auth.keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cfg.Binary, "serve", "--listen", listen, "--tls-cert", certFile, "--tls-key", keyFile)
	cmd.Env = append(os.Environ(), cfg.Env...)
	cmd.Dir = home
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "seshat serve: listening on wss://") {
		_ = cmd.Process.Kill()
		t.Fatalf("the service did not listen: %q", lines.Text())
	}
	url := strings.TrimPrefix(lines.Text(), "seshat serve: listening on ")
	go func() {
		for lines.Scan() {
			// What it logs goes on being read, so it never blocks on a full pipe.
		}
	}()
	s := &service{url: url, cmd: cmd, auth: auth}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return s
}

// makeToken adds user to cfg's store and makes a token for them.
func makeToken(t testing.TB, cfg ClientConfig, user string) string {
	seshatIn(t, cfg, "users", "add", user)
	return strings.TrimSpace(seshatIn(t, cfg, "tokens", "create", "--user", user))
}

// remoteConfig is cfg pointed at a service on cfg's home, for user "go".
func remoteConfig(t testing.TB, cfg ClientConfig) ClientConfig {
	auth := newAuthority(t)
	tok := makeToken(t, cfg, "go")
	s := startService(t, cfg, auth)
	cfg.URL, cfg.Token, cfg.TLSConfig = s.url, tok, &tls.Config{RootCAs: auth.roots}
	return cfg
}

func TestARemoteServerRefusesABadTokenAndAnUntrustedCertificateAndServesAGoodOne(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		text(w, req, "Over ", "TLS.")
	})
	cfg := config(t, f, "")
	auth := newAuthority(t)
	tok := makeToken(t, cfg, "go")
	s := startService(t, cfg, auth)
	ctx := context.Background()
	remote := cfg
	remote.URL, remote.TLSConfig = s.url, &tls.Config{RootCAs: auth.roots}

	remote.Token = ""
	if _, err := NewClient(ctx, remote); ErrCode(err) != "invalid_config" {
		t.Fatalf("no token: %v", err)
	}
	remote.Token = tok + "0"
	if _, err := NewClient(ctx, remote); ErrCode(err) != "token_invalid" || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a wrong token: %v", err)
	}
	remote.Token = tok
	remote.TLSConfig = &tls.Config{RootCAs: auth.otherRoot}
	var unknown x509.UnknownAuthorityError
	if _, err := NewClient(ctx, remote); !errors.As(err, &unknown) {
		t.Fatalf("a certificate no trusted CA signed: %v", err)
	}
	remote.TLSConfig = &tls.Config{RootCAs: auth.roots}
	remote.Project = "github.com/acme/go-app"
	if err := os.WriteFile(filepath.Join(cfg.ProjectDir, "AGENTS.md"), []byte("Answer tersely."), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(ctx, remote)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sess, err := c.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := sess.Send(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	out, err := stream.Wait()
	if err != nil || out.Text != "Over TLS." {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	if body := string(f.lastBody()); !strings.Contains(body, "Answer tersely.") {
		t.Fatalf("the client's AGENTS.md did not reach the model: %s", body)
	}
	listed := seshatIn(t, cfg, "sessions", "list", "--all", "--json")
	if strings.Contains(listed, sess.ID) {
		t.Fatalf("the local user sees the remote user's session: %s", listed)
	}
}

// ErrCode is the stable code of a Seshat error, or "" for another error.
func ErrCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// Two instances on one store — the embedded SQLite file, and a PostgreSQL database as a team
// runs it — with a client moving from one to the other mid-session.
func TestAClientMovesBetweenTwoInstancesMidSession(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { movesBetweenInstances(t, "") })
	t.Run("postgres", func(t *testing.T) { movesBetweenInstances(t, throwawayPostgres(t)) })
}

// movesBetweenInstances runs two instances on the store at databaseURL (the home's SQLite file
// when empty): a turn started through A is busy through B; A SIGKILLed mid-turn leaves the
// session free and resumable through B, with what was said kept.
func movesBetweenInstances(t *testing.T, databaseURL string) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			blocking(w, r)
			return
		}
		text(w, req, "Answered by B.")
	})
	cfg := config(t, f, "")
	if databaseURL != "" {
		cfg.Env = append(cfg.Env, "SESHAT_DATABASE_URL="+databaseURL)
	}
	auth := newAuthority(t)
	tok := makeToken(t, cfg, "go")
	a, b := startService(t, cfg, auth), startService(t, cfg, auth)
	ctx := context.Background()
	connect := func(s *service) *Client {
		remote := cfg
		remote.URL, remote.Token, remote.TLSConfig = s.url, tok, &tls.Config{RootCAs: auth.roots}
		c, err := NewClient(ctx, remote)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	onA := connect(a)
	sess, err := onA.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := sess.Send(ctx, "a turn cut short")
	if err != nil {
		t.Fatal(err)
	}
	for ev := range stream.Events() {
		if ev.Kind == TextDelta {
			break
		}
	}
	onB := connect(b)
	onBSession, err := onB.Resume(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := onBSession.Send(ctx, "me too"); !errors.Is(err, ErrSessionBusy) {
		t.Fatalf("a turn started through A is busy through B: %v", err)
	}
	// Instance A dies mid-turn; the session is free again, through B.
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	_ = a.cmd.Wait()
	if _, err := stream.Wait(); err == nil {
		t.Fatal("the turn on the killed instance reported success")
	}
	again, err := onBSession.Send(ctx, "go on")
	if err != nil {
		t.Fatal(err)
	}
	out, err := again.Wait()
	if err != nil || out.Text != "Answered by B." {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	history, err := onBSession.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range history {
		texts = append(texts, textOf(m))
	}
	if len(history) < 3 || textOf(history[0]) != "a turn cut short" || textOf(history[len(history)-1]) != "Answered by B." {
		t.Fatalf("history %q", texts)
	}
}

// textOf is a message's text parts, joined.
func textOf(m Message) string {
	var out strings.Builder
	for _, raw := range m.Parts {
		var part struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &part) == nil && part.Type == "text" {
			out.WriteString(part.Text)
		}
	}
	return out.String()
}

// A token revoked while its client runs a turn ends the turn with the revocation's code (the
// server says why before it closes the connection), not a bare ErrClosed.
func TestARevokedTokenEndsTheRunningTurnWithItsCode(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		blocking(w, r)
	})
	cfg := config(t, f, "")
	auth := newAuthority(t)
	tok := makeToken(t, cfg, "go")
	s := startService(t, cfg, auth)
	remote := cfg
	remote.URL, remote.Token, remote.TLSConfig = s.url, tok, &tls.Config{RootCAs: auth.roots}
	ctx := context.Background()
	c := startLocal(t, remote)
	session, err := c.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := session.Send(ctx, "go")
	if err != nil {
		t.Fatal(err)
	}
	for ev := range stream.Events() {
		if ev.Kind == TextDelta {
			break
		}
	}
	seshatIn(t, cfg, "tokens", "revoke", strings.Split(tok, "_")[1])
	if _, err := stream.Wait(); !errors.Is(err, ErrTokenRevoked) {
		t.Fatalf("the turn ended with %v, want ErrTokenRevoked", err)
	}
}

// freeAddress is a loopback address nothing listens on now (for a service restarted on it).
func freeAddress(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// stop sends the service sig and waits for it to exit.
func (s *service) stop(t testing.TB, sig syscall.Signal) {
	if err := s.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	_ = s.cmd.Wait()
}

// A server killed and started again under a remote client: the turn in flight ends interrupted
// with what it had streamed (ErrConnectionLost), the client connects again by itself and its next
// turn in the same session is served, the interrupted answer stored before it. When connecting again is refused
// for good (its token revoked meanwhile), every call says so.
func TestARemoteClientReconnectsAfterTheServerRestartsAndSaysWhyWhenItCannot(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			blocking(w, r)
			return
		}
		text(w, req, "After ", "the restart.")
	})
	cfg := config(t, f, "[serve]\ngrace_secs = 0\n")
	auth := newAuthority(t)
	tok := makeToken(t, cfg, "go")
	listen := "wss://" + freeAddress(t)
	first := startServiceAt(t, cfg, auth, listen)
	remote := cfg
	remote.URL, remote.Token, remote.TLSConfig = listen, tok, &tls.Config{RootCAs: auth.roots}
	ctx := context.Background()
	c := startLocal(t, remote)
	session, err := c.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := session.Send(ctx, "a turn cut by a restart")
	if err != nil {
		t.Fatal(err)
	}
	for ev := range stream.Events() {
		if ev.Kind == TextDelta {
			break
		}
	}
	// The server dies (no turn/completed comes); a draft of the answer was kept.
	first.stop(t, syscall.SIGKILL)
	out, err := stream.Wait()
	if !errors.Is(err, ErrConnectionLost) || !out.Interrupted || out.Text != "Partial" || out.Session != session.ID {
		t.Fatalf("the turn in flight: %+v, %v", out, err)
	}
	second := startServiceAt(t, cfg, auth, listen)
	again, err := session.Send(ctx, "and again")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := again.Wait(); err != nil || out.Text != "After the restart." {
		t.Fatalf("after reconnecting: %+v, %v", out, err)
	}
	history, err := session.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range history {
		texts = append(texts, textOf(m))
	}
	// (Whether the killed server's draft of "Partial" was written before the kill is its
	// timing: the interrupted answer may or may not stand between the two requests.)
	joined := strings.Join(texts, "|")
	if !strings.HasPrefix(joined, "a turn cut by a restart|") || !strings.HasSuffix(joined, "|and again|After the restart.") {
		t.Fatalf("history %q", texts)
	}

	second.stop(t, syscall.SIGTERM)
	seshatIn(t, cfg, "tokens", "revoke", strings.Split(tok, "_")[1])
	startServiceAt(t, cfg, auth, listen)
	_, err = c.NewSession(ctx)
	if ErrCode(err) != "token_revoked" || !strings.Contains(err.Error(), "connecting again was refused") {
		t.Fatalf("a refused reconnection: %v", err)
	}
	if _, err := c.NewSession(ctx); ErrCode(err) != "token_revoked" {
		t.Fatalf("every later call says why: %v", err)
	}
}

// While a remote client reconnects, a call waits only as long as its ctx allows, and Close ends
// the client then and there.
func TestACallWaitingForAReconnectionEndsWithItsContextAndCloseEndsTheClient(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		text(w, req, "Hi.")
	})
	cfg := config(t, f, "")
	auth := newAuthority(t)
	tok := makeToken(t, cfg, "go")
	listen := "wss://" + freeAddress(t)
	s := startServiceAt(t, cfg, auth, listen)
	remote := cfg
	remote.URL, remote.Token, remote.TLSConfig = listen, tok, &tls.Config{RootCAs: auth.roots}
	c, err := NewClient(context.Background(), remote)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.NewSession(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.stop(t, syscall.SIGKILL)
	// A call made before the client has read the connection's end is sent on it and fails as
	// lost (whether the server applied it is unknown); the client has then seen the drop, and
	// every later call waits for the reconnection.
	first, cancelFirst := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancelFirst()
	if _, err := c.NewSession(first); !errors.Is(err, ErrConnectionLost) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call as the service dies: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := c.NewSession(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call while the service is down: %v", err)
	}
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close did not end a client that was reconnecting")
	}
	if _, err := c.NewSession(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

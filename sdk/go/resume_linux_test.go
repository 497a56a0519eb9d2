package seshat_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	. "example.invalid/seshat/sdk/go/seshat"
)

// TestMain runs the helper client when asked (TestResumeAfterTheClientIsKilled), and removes
// what the examples made.
func TestMain(m *testing.M) {
	if os.Getenv("SESHAT_GO_HELPER") == "1" {
		helper()
		return
	}
	code := m.Run()
	removeScratch()
	os.Exit(code)
}

// helper starts a turn that never finishes, says its session's id and its `seshat serve`'s
// process id, and waits to be killed.
func helper() {
	var cfg ClientConfig
	if err := json.Unmarshal([]byte(os.Getenv("SESHAT_GO_CONFIG")), &cfg); err != nil {
		panic(err)
	}
	c, err := NewClient(context.Background(), cfg)
	if err != nil {
		panic(err)
	}
	s, err := c.NewSession(context.Background())
	if err != nil {
		panic(err)
	}
	stream, err := s.Send(context.Background(), "a turn about to be cut")
	if err != nil {
		panic(err)
	}
	for ev := range stream.Events() {
		if ev.Kind == TextDelta {
			fmt.Println(s.ID, childOfThisProcess())
			break
		}
	}
	select {}
}

// childOfThisProcess is the process id of this process's only child (its `seshat serve`), from
// /proc: each thread lists the children it started.
func childOfThisProcess() int {
	lists, _ := filepath.Glob("/proc/self/task/*/children")
	for _, l := range lists {
		raw, _ := os.ReadFile(l)
		if f := strings.Fields(string(raw)); len(f) > 0 {
			pid, _ := strconv.Atoi(f[0])
			return pid
		}
	}
	panic("no child process")
}

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER: orphans of this process's descendants
// become its children, so that it can wait for them.
const prSetChildSubreaper = 36

func TestResumeAfterTheClientIsKilled(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			blocking(w, r)
			return
		}
		text(w, req, "Resumed.")
	})
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		t.Fatalf("prctl(PR_SET_CHILD_SUBREAPER): %v", errno)
	}
	cfg := config(t, f, "")
	raw, _ := json.Marshal(cfg)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SESHAT_GO_HELPER=1", "SESHAT_GO_CONFIG="+string(raw))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	said := strings.Fields(line)
	if err != nil || len(said) != 2 {
		t.Fatalf("the helper said %q: %v", line, err)
	}
	id := said[0]
	serve, err := strconv.Atoi(said[1])
	if err != nil {
		t.Fatal(err)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	// The helper's `seshat serve` is this process's child now: it sees its stdin close, stores
	// the cut-short turn and exits, and this waits for that.
	var status syscall.WaitStatus
	if _, err := syscall.Wait4(serve, &status, 0, nil); err != nil {
		t.Fatalf("waiting for the orphaned serve (%d): %v", serve, err)
	}
	if !status.Exited() || status.ExitStatus() != 0 {
		t.Fatalf("the orphaned serve ended with %v", status)
	}
	// The helper's session is the local user's, resumed by a child `seshat serve` in either mode.
	c := startLocal(t, cfg)
	s, err := c.Resume(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	history, err := s.History(context.Background())
	if err != nil || len(history) != 2 || history[1].Status != "interrupted" || len(history[1].Parts) != 1 || !strings.Contains(string(history[1].Parts[0]), `"Partial"`) {
		t.Fatalf("the cut-short turn: %+v, %v", history, err)
	}
	stream, err := s.Send(context.Background(), "go on")
	if err != nil {
		t.Fatal(err)
	}
	if o, err := stream.Wait(); err != nil || o.Text != "Resumed." {
		t.Fatalf("%+v, %v", o, err)
	}
}

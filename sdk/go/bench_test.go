package seshat_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "example.invalid/seshat/sdk/go/seshat"
)

// BenchmarkServeOverhead measures what `seshat serve` and this SDK add to a streamed turn, with
// one clock (the fake provider runs in this process): the same answer of 200 events, 2 ms apart,
// read through `serve` by Session.Send, and directly from the httptest server by net/http
// sending the very request body serve sent. It reports the time to the first event and each
// event's delay after the server wrote it, both ways, and what serve adds. The binary is the
// debug build unless SESHAT_BIN names another; the release build is the one users run:
//
//	cargo build --release -p seshat
//	SESHAT_BIN=$PWD/../../target/release/seshat go test -run '^$' -bench ServeOverhead -benchtime 20x ./...
func BenchmarkServeOverhead(b *testing.B) {
	const events = 200
	var mu sync.Mutex
	sent := map[int]time.Time{}
	f := serveFake(b.Errorf, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "text/event-stream")
		for i := 0; i < events; i++ {
			mu.Lock()
			sent[i] = time.Now()
			mu.Unlock()
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"e%d \"},\"finish_reason\":null}]}\n\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(2 * time.Millisecond)
		}
		fmt.Fprint(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	})
	defer f.srv.Close()
	cfg := config(b, f, "")
	c, err := NewClient(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	s, err := c.NewSession(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	var directFirst, serveFirst, directEach, serveEach []float64
	for n := 0; n < b.N; n++ {
		// Through serve.
		start := time.Now()
		stream, err := s.Send(context.Background(), "go")
		if err != nil {
			b.Fatal(err)
		}
		first := true
		for ev := range stream.Events() {
			if ev.Kind != TextDelta || !strings.HasPrefix(ev.Text, "e") {
				continue
			}
			now := time.Now()
			k, _ := strconv.Atoi(strings.TrimSpace(ev.Text[1:]))
			if first {
				serveFirst = append(serveFirst, ms(now.Sub(start)))
				first = false
			}
			mu.Lock()
			serveEach = append(serveEach, ms(now.Sub(sent[k])))
			mu.Unlock()
		}
		if _, err := stream.Wait(); err != nil {
			b.Fatal(err)
		}
		// Directly: the very request serve just sent (its body, as large), by net/http.
		start = time.Now()
		req, _ := http.NewRequest("POST", f.srv.URL+"/v1/chat/completions", bytes.NewReader(f.lastBody()))
		req.Header.Set("content-type", "application/json")
		req.Header.Set("authorization", "Bearer sk-go-test")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		scanner := bufio.NewScanner(resp.Body)
		i := 0
		for scanner.Scan() {
			line := scanner.Text()
			if !strings.Contains(line, `"content":"e`) {
				continue
			}
			now := time.Now()
			if i == 0 {
				directFirst = append(directFirst, ms(now.Sub(start)))
			}
			mu.Lock()
			directEach = append(directEach, ms(now.Sub(sent[i])))
			mu.Unlock()
			i++
		}
		resp.Body.Close()
	}
	df, sf, de, se := median(directFirst), median(serveFirst), median(directEach), median(serveEach)
	// Go runs a benchmark once with N = 1 first (here: the session's agent opened cold), then
	// with the N asked for; each run prints its own lines.
	fmt.Printf("N=%d first event: direct %.3f ms, through serve %.3f ms (%.2fx): %.3f ms added\n", b.N, df, sf, sf/df, sf-df)
	fmt.Printf("N=%d each event after the server wrote it (median of %d): direct %.3f ms, through serve %.3f ms (%.2fx): %.3f ms added\n",
		b.N, len(serveEach), de, se, se/de, se-de)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	return v[len(v)/2]
}

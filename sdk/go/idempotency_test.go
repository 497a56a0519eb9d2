package seshat_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	. "example.invalid/seshat/sdk/go/seshat"
)

// A turn whose client went away mid-answer is sent again, on a new client, with its key: the
// user's message is stored once and the turn goes on; sent once more, its stored outcome comes
// back without a model call; the key with other text is refused.
func TestATurnSentAgainWithItsKeyIsStoredOnce(t *testing.T) {
	f := newFake(t, func(n int, req map[string]interface{}, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			blocking(w, r)
			return
		}
		text(w, req, "Done.")
	})
	cfg := config(t, f, "")
	ctx := context.Background()
	first := startLocal(t, cfg)
	s, err := first.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := s.Send(ctx, "go")
	if err != nil {
		t.Fatal(err)
	}
	if len(stream.Key()) == 0 {
		t.Fatal("Send gave its request no key")
	}
	for ev := range stream.Events() {
		if ev.Kind == TextDelta {
			break
		}
	}
	// The client goes away mid-answer (its server stores what arrived as interrupted).
	_ = first.Close()
	if _, err := stream.Wait(); !errors.Is(err, ErrClosed) && !errors.Is(err, ErrInterrupted) {
		t.Fatalf("the cut turn: %v, want ErrClosed or ErrInterrupted", err)
	}
	second := startLocal(t, cfg)
	again, err := second.Resume(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	resent, err := again.SendWithKey(ctx, stream.Key(), "go")
	if err != nil {
		t.Fatal(err)
	}
	out, err := resent.Wait()
	if err != nil || out.Text != "Done." || out.Replayed {
		t.Fatalf("the turn sent again: %+v, %v", out, err)
	}
	replay, err := again.SendWithKey(ctx, stream.Key(), "go")
	if err != nil {
		t.Fatal(err)
	}
	out, err = replay.Wait()
	if err != nil || out.Text != "Done." || !out.Replayed {
		t.Fatalf("the turn sent once more: %+v, %v", out, err)
	}
	if f.count() != 2 {
		t.Fatalf("the model was asked %d times, want 2", f.count())
	}
	other, err := again.SendWithKey(ctx, stream.Key(), "something else")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Wait(); !errors.Is(err, ErrTurnKeyReused) {
		t.Fatalf("the key with other text: %v, want ErrTurnKeyReused", err)
	}
	history, err := again.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var users int
	for _, m := range history {
		if m.Role == "user" {
			users++
		}
	}
	if users != 1 || history[len(history)-1].Role != "assistant" {
		t.Fatalf("history %+v", history)
	}
}

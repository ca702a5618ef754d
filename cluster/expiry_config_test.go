package cluster

import (
	"testing"
	"time"
)

// TestExpiryConfig: hz sets the cycle's period (capped to 1..500) and
// the effort grows the batch, the rounds and the time share as Redis's
// active-expire-effort grows its keys per loop and its slow cycle's time.
func TestExpiryConfig(t *testing.T) {
	for _, tc := range []struct {
		c              ExpiryConfig
		period, budget time.Duration
		batch, rounds  int
	}{
		{DefaultExpiry, 100 * time.Millisecond, 25 * time.Millisecond, 200, 4},
		{ExpiryConfig{Hz: 1, Effort: 1}, time.Second, 250 * time.Millisecond, 200, 4},
		{ExpiryConfig{Hz: 500, Effort: 1}, 2 * time.Millisecond, 500 * time.Microsecond, 200, 4},
		{ExpiryConfig{Hz: 0, Effort: 0}, time.Second, 250 * time.Millisecond, 200, 4},               // capped up
		{ExpiryConfig{Hz: 9999, Effort: 99}, 2 * time.Millisecond, 860 * time.Microsecond, 650, 13}, // capped down
		{ExpiryConfig{Hz: 10, Effort: 10}, 100 * time.Millisecond, 43 * time.Millisecond, 650, 13},
		{ExpiryConfig{Hz: 10, Effort: 5}, 100 * time.Millisecond, 33 * time.Millisecond, 400, 8},
	} {
		if got := tc.c.period(); got != tc.period {
			t.Errorf("%+v period %v, want %v", tc.c, got, tc.period)
		}
		if got := tc.c.budget(); got != tc.budget {
			t.Errorf("%+v budget %v, want %v", tc.c, got, tc.budget)
		}
		if got := tc.c.batch(); got != tc.batch {
			t.Errorf("%+v batch %d, want %d", tc.c, got, tc.batch)
		}
		if got := tc.c.rounds(); got != tc.rounds {
			t.Errorf("%+v rounds %d, want %d", tc.c, got, tc.rounds)
		}
	}
}

// TestNodeExpirySetting: a node starts with Redis's defaults and keeps
// what SetExpiry gives it.
func TestNodeExpirySetting(t *testing.T) {
	var n Node
	if got := n.Expiry(); got != DefaultExpiry {
		t.Fatalf("default %+v, want %+v", got, DefaultExpiry)
	}
	want := ExpiryConfig{Hz: 100, Effort: 3}
	n.SetExpiry(want)
	if got := n.Expiry(); got != want {
		t.Fatalf("after SetExpiry %+v, want %+v", got, want)
	}
}

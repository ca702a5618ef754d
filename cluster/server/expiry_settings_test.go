package server

import (
	"strings"
	"testing"

	"github.com/slotraft/slotraft/cluster"
)

// TestEffectiveHz: dynamic-hz doubles the rate while there are more than
// 200 clients per tick, up to 500, as Redis's serverCron; without it the
// configured rate stands.
func TestEffectiveHz(t *testing.T) {
	for _, tc := range []struct {
		hz      int
		dynamic bool
		clients int
		want    int
	}{
		{10, true, 0, 10},
		{10, true, 2000, 10},  // 200 per tick: not more
		{10, true, 2010, 20},  // 201: doubled
		{10, true, 4020, 40},  // doubled until at most 200 per tick
		{10, false, 9999, 10}, // dynamic-hz no
		{300, true, 1_000_000, 500},
		{500, true, 1_000_000, 500},
	} {
		if got := effectiveHz(tc.hz, tc.dynamic, tc.clients); got != tc.want {
			t.Errorf("effectiveHz(%d, %v, %d) = %d, want %d", tc.hz, tc.dynamic, tc.clients, got, tc.want)
		}
	}
}

// TestHzReachesExpiry: CONFIG SET hz and active-expire-effort reach the
// node's active expiry, and INFO shows the rate it runs at.
func TestHzReachesExpiry(t *testing.T) {
	s, addr := pubsubNode(t)
	c := dialPS(t, addr)
	c.do("CONFIG SET hz 1000 active-expire-effort 7", "+OK\r\n")
	c.do("CONFIG GET hz", "*2\r\n$2\r\nhz\r\n$3\r\n500\r\n")
	want := cluster.ExpiryConfig{Hz: 500, Effort: 7}
	cluster.PollUntil(t, "the node to take hz 500", func() bool { return s.n.Expiry() == want })
	c.send("INFO server")
	info := c.next()
	for _, line := range []string{"\r\nhz:500\r\n", "\r\nconfigured_hz:500\r\n"} {
		if !strings.Contains(info, line) {
			t.Errorf("INFO server lacks %q:\n%s", line, info)
		}
	}
	c.do("CONFIG SET hz 10", "+OK\r\n")
	cluster.PollUntil(t, "the node to take hz 10", func() bool { return s.n.Expiry().Hz == 10 })
}

package testports

import (
	"net"
	"strconv"
	"testing"
)

// TestFreeDistinctInRangeAndBindable: the ports are distinct, in range,
// never handed out twice, and free (each can be bound once Free returns).
func TestFreeDistinctInRangeAndBindable(t *testing.T) {
	seen := map[int]bool{}
	for range 5 {
		for _, p := range Free(t, 20) {
			if p < Low || p >= High {
				t.Fatalf("port %d outside %d-%d", p, Low, High-1)
			}
			if seen[p] {
				t.Fatalf("port %d handed out twice", p)
			}
			seen[p] = true
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				t.Fatalf("port %d not free: %v", p, err)
			}
			ln.Close()
		}
	}
}

// TestFreeSkipsBoundPorts: a port someone listens on is never returned.
func TestFreeSkipsBoundPorts(t *testing.T) {
	var held []net.Listener
	defer func() {
		for _, ln := range held {
			ln.Close()
		}
	}()
	busy := map[int]bool{}
	for p := Low; p < Low+200; p++ {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err == nil {
			held = append(held, ln)
			busy[p] = true
		}
	}
	for _, p := range Free(t, 500) {
		if busy[p] {
			t.Fatalf("port %d is bound, but Free returned it", p)
		}
	}
}

package server

import (
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
)

func TestDoctorReport(t *testing.T) {
	const mb = 1024 * 1024
	healthy := memOverhead{peak: 100 * mb, total: 100 * mb, allocated: 100 * mb, active: 101 * mb, resident: 102 * mb, rss: 105 * mb}
	tests := []struct {
		name string
		mh   func(m memOverhead) memOverhead
		want []string // substrings, in order
	}{
		{"empty", func(m memOverhead) memOverhead { m.total = 4 * mb; return m }, []string{"Hi Sam, this instance is empty"}},
		{"fine", func(m memOverhead) memOverhead { return m }, []string{"Hi Sam, I can't find any memory issue"}},
		{"peak", func(m memOverhead) memOverhead { m.peak = 151 * mb; return m },
			[]string{"Sam, I detected a few issues", " * Peak memory:", "I'm here to keep you safe, Sam."}},
		{"rss", func(m memOverhead) memOverhead { m.rss = 160 * mb; m.resident = 150 * mb; return m },
			[]string{" * High total RSS:", "allocator is \"go-", " * High allocator RSS overhead:"}},
		{"small overheads", func(m memOverhead) memOverhead { m.active = m.allocated + 9*mb; return m }, []string{"Hi Sam, I can't find"}},
	}
	for _, tt := range tests {
		got := doctorReport(tt.mh(healthy))
		rest := got
		for _, w := range tt.want {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Errorf("%s: report lacks %q (in order):\n%s", tt.name, w, got)
				break
			}
			rest = rest[i+len(w):]
		}
	}
}

// TestMemoryUsageRouting: MEMORY USAGE reads its key on the key's group:
// a number where the group is led, MOVED elsewhere, nil for no key.
func TestMemoryUsageRouting(t *testing.T) {
	c := cluster.NewTestCluster(t, 3, 3)
	li, addr := serveLeader(t, c, 1)
	_, other := serveNode(t, c.Nodes[(li+1)%3])
	key := cluster.KeyIn(1, 3, "mem")
	b, o := dialBlk(t, addr), dialBlk(t, other)
	do := func(b *blkConn, args ...string) string {
		t.Helper()
		b.send(args...)
		return b.read(10 * time.Second)
	}
	if got := do(b, "MEMORY", "USAGE", key); got != "nil" {
		t.Fatalf("no key: %s", got)
	}
	do(b, "SET", key, strings.Repeat("v", 1000))
	if got := do(b, "MEMORY", "USAGE", key); !strings.HasPrefix(got, ":1") || len(got) != 5 {
		t.Errorf("a 1000-byte string: %s", got)
	}
	if got := do(o, "MEMORY", "USAGE", key); !strings.HasPrefix(got, "-MOVED ") {
		t.Errorf("on a node not leading the key's group: %s", got)
	}
	if got := do(b, "COMMAND", "GETKEYS", "MEMORY", "USAGE", key); got != "["+key+"]" {
		t.Errorf("COMMAND GETKEYS: %s", got)
	}
}

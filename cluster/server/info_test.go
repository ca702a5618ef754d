package server

import (
	"strconv"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/cluster"
)

// TestInfoKeyspace: keys and expires are the stores' counts and avg_ttl
// the sampled average of the deadlines ahead, in milliseconds.
func TestInfoKeyspace(t *testing.T) {
	do := singleNodeDo(t) // every group led: no SET is redirected
	for i := range 30 {
		args := []string{"SET", "{ks}" + strconv.Itoa(i), "v"}
		if i < 10 {
			args = append(args, "EX", "100")
		}
		if got := do(args...); got != "+OK" {
			t.Fatalf("%v: %s", args, got)
		}
	}
	// INFO counts the groups this node knows it leads: that view may lag
	// the writes' acknowledgements for a moment.
	var info string
	i := -1
	cluster.PollUntil(t, "INFO keyspace shows the 30 keys", func() bool {
		info = do("INFO", "keyspace")
		i = strings.Index(info, "db0:keys=30,expires=10,avg_ttl=")
		return i >= 0
	})
	ttl, err := strconv.Atoi(strings.TrimSpace(info[i+len("db0:keys=30,expires=10,avg_ttl="):]))
	if err != nil || ttl < 90_000 || ttl > 100_000 {
		t.Errorf("avg_ttl %d (%v), want about 100000", ttl, err)
	}
}

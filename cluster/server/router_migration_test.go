package server

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
)

// TestAskingGoesForward: a client that follows -ASK to a node that hosts
// the migration's target group without leading it (the target's leadership
// moved after the source answered) is sent on to the target's leader with
// -ASK, not back to the source with -MOVED: that bounced go-redis between
// source and target until its redirects ran out (TestScaleOutRebalance in
// CI, "ASK 4450 …" as the client's error).
func TestAskingGoesForward(t *testing.T) {
	c := cluster.NewTestCluster(t, 3, 3)
	c.LeadersSpread()
	waitMetaLeader(t, c)
	src, dst := c.Leader(1), c.Leader(2)
	other := 3 - src - dst // the third node: a follower of group 2
	conns := make([]*blkConn, 3)
	for i := range conns {
		_, addr := serveNode(t, c.Nodes[i])
		conns[i] = dialBlk(t, addr)
	}
	do := func(i int, args ...string) string {
		t.Helper()
		conns[i].send(args...)
		return conns[i].read(20 * time.Second)
	}
	key := cluster.KeyIn(1, 3, "asked")
	slot := strconv.Itoa(int(cluster.KeySlot(key)))
	if got := do(src, "SET", key, "v"); got != "+OK" {
		t.Fatalf("SET = %s", got)
	}
	// A held migration (redis-cli's reshard sequence): the mover copies the
	// key to group 2 and the slot stays migrating until SETSLOT NODE.
	for _, st := range []struct {
		on     int
		action string
		peer   int
	}{{dst, "IMPORTING", src}, {src, "MIGRATING", dst}} {
		if got := do(st.on, "CLUSTER", "SETSLOT", slot, st.action, NodeID(c.Nodes[st.peer].Self().ID)); got != "+OK" {
			t.Fatalf("SETSLOT %s = %s", st.action, got)
		}
	}
	var ask string
	cluster.PollUntil(t, "the key moved: its source answers -ASK", func() bool {
		ask = do(src, "GET", key)
		return strings.HasPrefix(ask, "-ASK "+slot+" ")
	})
	cluster.PollUntil(t, "the third node knows the migration", func() bool {
		_, ok := c.Nodes[other].Migration(cluster.KeySlot(key))
		return ok
	})

	if got := do(other, "GET", key); !strings.HasPrefix(got, "-MOVED "+slot+" ") {
		t.Errorf("GET without ASKING on a follower = %s, want -MOVED to the owner", got)
	}
	if got := do(other, "ASKING"); got != "+OK" {
		t.Fatalf("ASKING = %s", got)
	}
	if got := do(other, "GET", key); got != ask {
		t.Errorf("GET after ASKING on a follower of the target = %s, want %s (on to the target's leader)", got, ask)
	}
	if got := do(dst, "ASKING"); got != "+OK" {
		t.Fatalf("ASKING = %s", got)
	}
	if got := do(dst, "GET", key); got != "v" {
		t.Errorf("GET after ASKING on the target's leader = %s, want v", got)
	}
}

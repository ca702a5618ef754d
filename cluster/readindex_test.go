package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/slotraft/slotraft/resp"
)

// TestPartitionedLeader cuts group 1's leader off from both peers: it must
// neither serve reads nor acknowledge writes, the majority elects a new
// leader, and after healing no acknowledged write is lost; without a
// cluster secret and with one (the cut closes TLS connections, the heal
// makes new ones).
func TestPartitionedLeader(t *testing.T) {
	for _, mode := range busModes {
		t.Run(mode.name, func(t *testing.T) { partitionedLeader(t, newTestClusterWith(t, 3, 3, "", mode.secret)) })
	}
}

func partitionedLeader(t *testing.T, c *TestCluster) {
	c.LeadersSpread()
	acked := map[string]string{}
	for gid := uint32(1); gid <= 3; gid++ {
		k := KeyIn(gid, 3, "pre")
		c.Write(gid, "SET", k, "1")
		acked[k] = "1"
	}
	old := c.Leader(1)
	oldNode := c.Nodes[old]
	var majority []int
	for i := range c.Nodes {
		if i != old {
			majority = append(majority, i)
		}
	}

	start := time.Now()
	c.Faults.Isolate(c.Peers[old].ID)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := grp(oldNode, 1).Propose(ctx, [][][]byte{Argv("SET", KeyIn(1, 3, "minority"), "x")})
	if err == nil || !(errors.Is(err, ErrNotLeader) || errors.Is(err, resp.ErrOutcomeUnknown)) {
		t.Fatalf("write on the isolated leader: %v", err)
	}
	t.Logf("isolated leader's write failed after %v: %v", time.Since(start), err)
	if _, err := ReadOn(oldNode, 1, "GET", KeyIn(1, 3, "pre")); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("read on the isolated leader: %v", err)
	}

	nl := c.Leader(1, majority...)
	t.Logf("group 1 re-elected on node %d %v after the cut", nl, time.Since(start))
	for gid := uint32(1); gid <= 3; gid++ {
		for j := range 3 {
			k := KeyIn(gid, 3, fmt.Sprintf("during%d-", j))
			c.WriteAmong(gid, majority, "SET", k, "2")
			acked[k] = "2"
		}
	}
	if _, err := ReadOn(oldNode, 1, "GET", KeyIn(1, 3, "pre")); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("read on the isolated old leader: %v", err)
	}

	c.Faults.HealAll()
	PollUntil(t, "every replica has every acknowledged write", func() bool {
		for k, v := range acked {
			for _, n := range c.Nodes {
				if got, ok := StaleGet(n, n.GroupOf(KeySlot(k)).ID(), k); !ok || got != v {
					return false
				}
			}
		}
		return true
	})
	c.LeadersSpread()
	for k, v := range acked {
		gid := c.Nodes[0].GroupOf(KeySlot(k)).ID()
		got, err := ReadOn(c.Nodes[c.Leader(gid)], gid, "GET", k)
		if err != nil || ValueText(got) != v {
			t.Fatalf("after heal GET %s = %s, %v", k, ValueText(got), err)
		}
	}
}

package server

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/cluster"
)

// TestClusterOpsErrors: the node-changing CLUSTER subcommands' replies and
// errors on a cluster whose three nodes each lead a group (three masters).
func TestClusterOpsErrors(t *testing.T) {
	c := cluster.NewTestCluster(t, 3, 3)
	li, addr := serveLeader(t, c, 1)
	do := connDo(t, addr)
	self := NodeID(c.Nodes[li].Self().ID)
	other := NodeID(c.Nodes[(li+1)%3].Self().ID)
	unknown := strings.Repeat("0", 40)
	for _, st := range [][2]string{
		{"CLUSTER REPLICAS " + unknown, "-ERR Unknown node " + unknown},
		{"CLUSTER REPLICAS " + self, "[]"}, // every follower leads a group of its own
		{"CLUSTER SLAVES short", "-ERR Unknown node short"},
		{"CLUSTER COUNT-FAILURE-REPORTS " + other, ":0"},
		{"CLUSTER COUNT-FAILURE-REPORTS " + unknown, "-ERR Unknown node " + unknown},
		{"CLUSTER FAILOVER", "-ERR You should send CLUSTER FAILOVER to a replica"},
		{"CLUSTER FAILOVER nope", "-ERR syntax error"},
		{"CLUSTER FAILOVER FORCE x", "-ERR unknown subcommand or wrong number of arguments for 'FAILOVER'. Try CLUSTER HELP."},
		{"CLUSTER FORGET " + self, "-ERR I tried hard but I can't forget myself..."},
		{"CLUSTER FORGET " + unknown, "-ERR Unknown node " + unknown},
		{"CLUSTER SAVECONFIG", "+OK"},
		{"CLUSTER BUMPEPOCH", "+STILL " + itoa(int64(myEpochOf(t, do)))},
		{"CLUSTER SET-CONFIG-EPOCH x", "-ERR value is not an integer or out of range"},
		{"CLUSTER SET-CONFIG-EPOCH -1", "-ERR Invalid config epoch specified: -1"},
		{"CLUSTER SET-CONFIG-EPOCH 5", "-ERR The user can assign a config epoch only when the node does not know any other node."},
		{"CLUSTER ADDSLOTS 7", "-ERR Slot 7 is already busy"},
		{"CLUSTER DELSLOTS 7 8", "-" + errNoUnassign.Error()},
		{"CLUSTER DELSLOTSRANGE 7 8 8 9", "-ERR Slot 8 specified multiple times"},
		{"CLUSTER FLUSHSLOTS", "-" + errNoUnassign.Error()}, // no key here
		{"CLUSTER RESET", "-" + errNoReset.Error()},
	} {
		if got := do(strings.Fields(st[0])...); got != st[1] {
			t.Errorf("%s: got %q, want %q", st[0], got, st[1])
		}
	}
}

// myEpochOf is cluster_my_epoch from CLUSTER INFO.
func myEpochOf(t *testing.T, do func(args ...string) string) int {
	t.Helper()
	for _, line := range strings.Split(do("CLUSTER", "INFO"), "\r\n") {
		if v, ok := strings.CutPrefix(line, "cluster_my_epoch:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("CLUSTER INFO has no cluster_my_epoch")
	return 0
}

// TestClusterFailoverTakesOver: node 0 leads every group, so nodes 1 and
// 2 are its replicas (CLUSTER REPLICAS lists them); CLUSTER FAILOVER on
// node 1 moves every leadership to node 1.
func TestClusterFailoverTakesOver(t *testing.T) {
	c := cluster.NewTestCluster(t, 3, 3)
	c.LeadersSpread()
	n0, n1 := c.Nodes[0], c.Nodes[1]
	ctx, cancel := context.WithTimeout(context.Background(), 2*cluster.TransferWait)
	defer cancel()
	for gid := uint32(1); gid <= 3; gid++ {
		if err := n0.TransferLeader(ctx, gid, n0.Self().ID); err != nil {
			t.Fatal(err)
		}
	}
	_, addr0 := serveNode(t, n0)
	_, addr1 := serveNode(t, n1)
	do0, do1 := connDo(t, addr0), connDo(t, addr1)
	cluster.PollUntil(t, "nodes 1 and 2 listed as node 0's replicas", func() bool {
		got := do0("CLUSTER", "REPLICAS", NodeID(n0.Self().ID))
		return strings.Count(got, " slave ") == 2 && strings.Contains(got, NodeID(n1.Self().ID))
	})
	// CLUSTER FAILOVER takes over the groups node 1 sees node 0 lead: wait
	// until node 1 has heard from node 0 as every group's leader (a follower
	// learns of a transfer at the new leader's first heartbeat).
	cluster.PollUntil(t, "node 1 sees node 0 lead every group", func() bool {
		for gid := uint32(1); gid <= 3; gid++ {
			g, ok := n1.Group(gid)
			if !ok {
				return false
			}
			if p, ok := n1.Leader(g); !ok || p.ID != n0.Self().ID {
				return false
			}
		}
		return true
	})
	if got := do1("CLUSTER", "FAILOVER"); got != "+OK" {
		t.Fatalf("CLUSTER FAILOVER on a replica: %s", got)
	}
	for gid := uint32(1); gid <= 3; gid++ {
		cluster.PollUntil(t, "node 1 leads group "+itoa(int64(gid)), func() bool {
			return c.Leader(gid) == 1
		})
	}
	if got := do1("CLUSTER", "FAILOVER"); got != "-ERR You should send CLUSTER FAILOVER to a replica" {
		t.Fatalf("CLUSTER FAILOVER on node 1, now a master: %s", got)
	}
}

// TestClusterLinks: a node of a 3-node cluster has a link to and from
// each of the two others (Raft and gossip keep connections up both ways),
// in Redis's format.
func TestClusterLinks(t *testing.T) {
	c := cluster.NewTestCluster(t, 3, 3)
	li, addr := serveLeader(t, c, 1)
	do := connDo(t, addr)
	want := map[string]bool{}
	for i, n := range c.Nodes {
		if i != li {
			want["to "+NodeID(n.Self().ID)], want["from "+NodeID(n.Self().ID)] = true, true
		}
	}
	var got string
	cluster.PollUntil(t, "links both ways to both peers", func() bool {
		got = do("CLUSTER", "LINKS")
		for w := range want {
			f := strings.Fields(w)
			if !strings.Contains(got, "[direction "+f[0]+" node "+f[1]+" create-time ") {
				return false
			}
		}
		return strings.Count(got, "[direction") == len(want)
	})
	if !strings.Contains(got, " events r send-buffer-allocated :0 send-buffer-used :0]") {
		t.Fatalf("CLUSTER LINKS: %s", got)
	}
}

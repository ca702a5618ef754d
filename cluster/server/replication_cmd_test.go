package server

import (
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
)

// roleCluster is a 4-node cluster of 3 groups with 3 replicas each and
// leaders spread: three nodes lead a group each, the fourth leads none.
// It returns the cluster, the index of a leader and of the node leading
// nothing.
func roleCluster(t *testing.T) (c *cluster.TestCluster, leader, follower int) {
	c = cluster.NewTestCluster(t, 4, 3)
	c.LeadersSpread()
	leads := map[int]bool{}
	for gid := uint32(1); gid <= 3; gid++ {
		leads[c.Leader(gid)] = true
	}
	leader, follower = c.Leader(1), -1
	for i := range c.Nodes {
		if !leads[i] {
			follower = i
		}
	}
	if follower < 0 {
		t.Fatal("every node leads a group")
	}
	return c, leader, follower
}

func TestRoleMasterAndReplica(t *testing.T) {
	c, li, fi := roleCluster(t)
	_, laddr := serveNode(t, c.Nodes[li])
	_, faddr := serveNode(t, c.Nodes[fi])
	l, f := dialBlk(t, laddr), dialBlk(t, faddr)
	do := func(b *blkConn, args ...string) string {
		t.Helper()
		b.send(args...)
		return b.read(10 * time.Second)
	}
	if got := do(l, "SET", cluster.KeyIn(1, 3, "k"), "v"); got != "+OK" {
		t.Fatalf("SET = %q", got)
	}
	// The leader: master, its offset, and each follower of group 1 as
	// [host port offset] once they have applied the write.
	cluster.PollUntil(t, "ROLE lists both followers of group 1", func() bool {
		got := do(l, "ROLE")
		return strings.HasPrefix(got, "[master :") && strings.Count(got, "[127.0.0.1 ") == 2
	})
	if got := do(l, "INFO", "replication"); !strings.Contains(got, "role:master\r\n") {
		t.Errorf("INFO replication on the leader:\n%s", got)
	}
	// The node leading nothing: a replica of the leader of its first group.
	got := do(f, "ROLE")
	if !strings.HasPrefix(got, "[slave 127.0.0.1 :70") || !strings.Contains(got, " connected :") {
		t.Errorf("ROLE on a follower = %q, want [slave 127.0.0.1 :70xx connected :offset]", got)
	}
	info := do(f, "INFO", "replication")
	for _, want := range []string{"role:slave\r\n", "master_host:127.0.0.1\r\n", "master_link_status:up\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO replication on a follower lacks %q:\n%s", want, info)
		}
	}
	if got := do(f, "WAIT", "1", "0"); !strings.HasPrefix(got, "-ERR WAIT cannot be used with replica instances.") {
		t.Errorf("WAIT on a replica = %q", got)
	}
	if got := do(f, "WAITAOF", "0", "1", "0"); !strings.HasPrefix(got, "-ERR WAITAOF cannot be used with replica instances.") {
		t.Errorf("WAITAOF on a replica = %q", got)
	}
}

// TestWaitCountsFollowers: after a write, WAIT answers how many followers
// of the written group applied it; asking for more than there are times
// out with the count; errors are Redis's.
func TestWaitCountsFollowers(t *testing.T) {
	c := cluster.NewTestCluster(t, 3, 3)
	_, addr := serveLeader(t, c, 1)
	b := dialBlk(t, addr)
	do := func(args ...string) string {
		t.Helper()
		b.send(args...)
		return b.read(10 * time.Second)
	}
	k := cluster.KeyIn(1, 3, "w")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"SET", k, "1"}, "+OK"},
		{[]string{"WAIT", "2", "5000"}, ":2"},
		{[]string{"WAITAOF", "1", "2", "5000"}, "[:1 :2]"},
		{[]string{"INCR", k}, ":2"},
		{[]string{"WAIT", "3", "100"}, ":2"}, // only two followers: the timeout ends it
		{[]string{"WAIT", "x", "0"}, "-ERR value is not an integer or out of range"},
		{[]string{"WAIT", "1", "-1"}, "-ERR timeout is negative"},
		{[]string{"WAIT", "1", "1.5"}, "-ERR timeout is not an integer or out of range"},
		{[]string{"WAITAOF", "2", "0", "0"}, "-ERR value is out of range, value must between 0 and 1"},
		{[]string{"WAITAOF", "0", "-1", "0"}, "-ERR value is out of range, must be positive"},
		{[]string{"WAITAOF", "0", "1", "-5"}, "-ERR timeout is negative"},
		{[]string{"MULTI"}, "+OK"},
		{[]string{"WAIT", "5", "0"}, "+QUEUED"}, // inside EXEC it does not block
		{[]string{"EXEC"}, "[:2]"},
	}
	for _, tc := range tests {
		if got := do(tc.args...); got != tc.want {
			t.Errorf("%q = %q, want %q", tc.args, got, tc.want)
		}
	}
}

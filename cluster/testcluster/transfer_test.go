package testcluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster/testcluster"
)

// waitLeaderOn polls until node index want leads group gi.
func waitLeaderOn(t *testing.T, c *testcluster.Cluster, gi, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for c.LeaderIndex(gi) != want {
		if time.Now().After(deadline) {
			t.Fatalf("group %d led by node index %d, want %d", gi+1, c.LeaderIndex(gi), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestTransferLeader(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{Groups: 3, Replicas: 3})
	c.WaitReady(30 * time.Second)
	ctx := context.Background()
	// Ask node3, which does not lead group 1: the setting is forwarded.
	rdb := redis.NewClient(&redis.Options{Addr: c.Addrs()[2], ReadTimeout: 30 * time.Second})
	defer rdb.Close()
	// Pick a target that neither leads group 1 now nor is the static
	// placement's choice (node1), so that only the recorded preference can
	// bring the leadership back to it after its restart.
	target := 1
	if c.LeaderIndex(0) == 1 {
		target = 2
	}
	name := fmt.Sprintf("node%d", target+1)
	if err := rdb.Do(ctx, "SLOTRAFT", "TRANSFER-LEADER", "1", name).Err(); err != nil {
		t.Fatalf("TRANSFER-LEADER 1 %s: %v", name, err)
	}
	if got := c.LeaderIndex(0); got != target {
		t.Fatalf("after TRANSFER-LEADER group 1 is led by index %d, want %d", got, target)
	}

	// The preference is replicated state: the target gets the leadership
	// back after a restart, though node1 is the static placement's choice.
	c.StopNode(target)
	c.WaitLeaders(30 * time.Second)
	c.RestartNode(target)
	waitLeaderOn(t, c, 0, target)

	for _, tc := range []struct{ group, node, want string }{
		{"9", "node1", "no group 9"},
		{"x", "node1", "invalid group id"},
		{"1", "node7", "not a replica of group 1"},
	} {
		err := rdb.Do(ctx, "SLOTRAFT", "TRANSFER-LEADER", tc.group, tc.node).Err()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("TRANSFER-LEADER %s %s: %v, want an error with %q", tc.group, tc.node, err, tc.want)
		}
	}
}

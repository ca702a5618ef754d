package testcluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/cluster/meta"
	"github.com/slotraft/slotraft/cluster/testcluster"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/slots"
)

const kvLibrary = `#!lua name=kv
redis.register_function('kv_set', function(keys, args) return redis.call('set', keys[1], args[1]) end)
redis.register_function{function_name='kv_get', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}}
`

// fnNodeClient is a plain client of node i, patient enough for a FUNCTION
// change that waits for a group's election.
func fnNodeClient(c *testcluster.Cluster, i int) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: c.Addrs()[i], ReadTimeout: 20 * time.Second, MaxRetries: -1})
}

// fnKeyPerGroup returns one key per slot group (by group id).
func fnKeyPerGroup(t *testing.T, n *cluster.Node) map[uint32]string {
	t.Helper()
	out := map[uint32]string{}
	for i := 0; len(out) < len(n.Groups()) && i < 100000; i++ {
		k := fmt.Sprintf("fkey%d", i)
		id := n.GroupOf(slots.Of([]byte(k))).ID()
		if _, ok := out[id]; !ok {
			out[id] = k
		}
	}
	if len(out) != len(n.Groups()) {
		t.Fatalf("found keys for %d of %d groups", len(out), len(n.Groups()))
	}
	return out
}

// fnEventually retries fn until it succeeds or the deadline passes (leaders
// may move after a restart; go-redis retries redirects, not CLUSTERDOWN).
func fnEventually(t *testing.T, what string, timeout time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fnLibraryCounts is how many libraries each local replica of node i holds.
func fnLibraryCounts(n *cluster.Node) map[uint32]int {
	out := map[uint32]int{}
	for _, g := range n.Groups() {
		if g.Local() {
			_ = g.ReadStale(func(st fsm.Reader) { out[g.ID()] = st.LibraryCount() })
		}
	}
	return out
}

// TestFunctions loads a library on one node and calls its functions through
// a ClusterClient on a key of every group; the library survives a restart.
func TestFunctions(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitReady(20 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n1 := fnNodeClient(c, 0)
	defer n1.Close()
	// Retried like a client would: should a leadership move mid-way, a
	// retry converges.
	fnEventually(t, "FUNCTION LOAD", 15*time.Second, func() error {
		if name, err := n1.FunctionLoad(ctx, kvLibrary).Result(); err != nil || name != "kv" {
			return fmt.Errorf("FUNCTION LOAD = %q, %v", name, err)
		}
		return nil
	})
	rdb := clusterClient(c, 3)
	defer rdb.Close()
	keys := fnKeyPerGroup(t, c.Node(0))
	call := func(round int) error {
		for id, k := range keys {
			v := fmt.Sprintf("v%d-%d", round, id)
			if r, err := rdb.FCall(ctx, "kv_set", []string{k}, v).Result(); err != nil || r != "OK" {
				return fmt.Errorf("FCALL kv_set %s (group %d) = %v, %v", k, id, r, err)
			}
			if r, err := rdb.FCallRO(ctx, "KV_GET", []string{k}).Result(); err != nil || r != v {
				return fmt.Errorf("FCALL_RO KV_GET %s (group %d) = %v, %v", k, id, r, err)
			}
		}
		return nil
	}
	fnEventually(t, "calls", 15*time.Second, func() error { return call(1) })

	for i := range c.Len() {
		cl := fnNodeClient(c, i)
		fnEventually(t, "FUNCTION LIST", 15*time.Second, func() error {
			libs, err := cl.FunctionList(ctx, redis.FunctionListQuery{WithCode: true}).Result()
			if err != nil || len(libs) != 1 || libs[0].Name != "kv" || libs[0].Code != kvLibrary || len(libs[0].Functions) != 2 {
				return fmt.Errorf("FUNCTION LIST on node %d = %+v, %v", i+1, libs, err)
			}
			return nil
		})
		cl.Close()
	}
	if err := n1.FunctionLoad(ctx, kvLibrary).Err(); err == nil || err.Error() != "ERR Library 'kv' already exists" {
		t.Fatalf("second FUNCTION LOAD: %v", err)
	}

	// Restart: the replicas come back with their libraries from disk.
	c.StopNode(1)
	c.RestartNode(1)
	c.WaitLeaders(20 * time.Second)
	fnEventually(t, "libraries on the restarted node", 15*time.Second, func() error {
		for id, n := range fnLibraryCounts(c.Node(1)) {
			if n != 1 {
				return fmt.Errorf("group %d holds %d libraries", id, n)
			}
		}
		return nil
	})
	fnEventually(t, "calls after the restart", 15*time.Second, func() error { return call(2) })

	n3 := fnNodeClient(c, 2)
	defer n3.Close()
	fnEventually(t, "FUNCTION DELETE", 15*time.Second, func() error { return n3.FunctionDelete(ctx, "kv").Err() })
	for id, k := range keys {
		if err := rdb.FCall(ctx, "kv_set", []string{k}, "x").Err(); err == nil || err.Error() != "ERR Function not found" {
			t.Errorf("FCALL after DELETE on group %d: %v", id, err)
		}
	}
}

// TestFunctionsReachEveryGroup: with a group's only replica down, FUNCTION
// LOAD says which group it missed; once the node is back, the same command
// converges (the groups that had the library count as done). The commands
// go to node 4, which hosts no group: every change and read goes over the
// bus to the groups' leaders.
func TestFunctionsReachEveryGroup(t *testing.T) {
	c := testcluster.New(t, 4, testcluster.Options{Groups: 3, Replicas: 1})
	c.WaitLeaders(20 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n4 := fnNodeClient(c, 3)
	defer n4.Close()

	c.StopNode(2) // group 3's only replica
	err := n4.FunctionLoad(ctx, kvLibrary).Err()
	if err == nil || !strings.Contains(err.Error(), "did not succeed in every slot group") || !strings.Contains(err.Error(), "group 3:") {
		t.Fatalf("FUNCTION LOAD with group 3 down: %v", err)
	}
	for _, i := range []int{0, 1} {
		for id, n := range fnLibraryCounts(c.Node(i)) {
			if n != 1 {
				t.Errorf("node %d group %d holds %d libraries", i+1, id, n)
			}
		}
	}

	c.RestartNode(2)
	c.WaitLeaders(20 * time.Second)
	fnEventually(t, "retried FUNCTION LOAD", 15*time.Second, func() error {
		name, err := n4.FunctionLoad(ctx, kvLibrary).Result()
		if err == nil && name != "kv" {
			return fmt.Errorf("FUNCTION LOAD = %q", name)
		}
		return err
	})
	if err := n4.FunctionLoad(ctx, kvLibrary).Err(); err == nil || err.Error() != "ERR Library 'kv' already exists" {
		t.Fatalf("FUNCTION LOAD once every group has it: %v", err)
	}
	k := fnKeyPerGroup(t, c.Node(0))[3]
	n3 := fnNodeClient(c, 2)
	defer n3.Close()
	fnEventually(t, "FCALL on group 3", 15*time.Second, func() error {
		if err := n3.FCall(ctx, "kv_set", []string{k}, "v").Err(); err != nil {
			return err
		}
		if v, err := n3.FCallRO(ctx, "kv_get", []string{k}).Result(); err != nil || v != "v" {
			return fmt.Errorf("FCALL_RO = %v, %v", v, err)
		}
		return nil
	})
	libs, err := n4.FunctionList(ctx, redis.FunctionListQuery{}).Result()
	if err != nil || len(libs) != 1 || libs[0].Name != "kv" {
		t.Errorf("FUNCTION LIST on node 4 = %+v, %v", libs, err)
	}
	if n, err := n4.Do(ctx, "FUNCTION", "STATS").Result(); err != nil {
		t.Errorf("FUNCTION STATS on node 4 = %v, %v", n, err)
	}
}

// TestFunctionsInScaledOutGroups: a library loaded before a scale-out is
// there for the keys of the slots that move to the new group, though the
// group did not exist when the library was loaded.
func TestFunctionsInScaledOutGroups(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{Groups: 1, Replicas: 1, GroupsPerNode: 1})
	c.WaitReady(20 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n1 := fnNodeClient(c, 0)
	defer n1.Close()
	if name, err := n1.FunctionLoad(ctx, kvLibrary).Result(); err != nil || name != "kv" {
		t.Fatalf("FUNCTION LOAD = %q, %v", name, err)
	}

	c.AddNode() // the controller creates group 2 on it and moves slots there
	var slot uint16
	waitMapCond(t, c, 0, time.Minute, "a slot moved to group 2", func(m *meta.Map) error {
		for s := range uint16(slots.Count) {
			if g, ok := m.GroupOf(s); ok && g.ID == 2 {
				slot = s
				return nil
			}
		}
		return fmt.Errorf("group 2 owns no slot (%d groups)", len(m.Groups))
	})
	key := ""
	for i := 0; key == ""; i++ {
		if k := fmt.Sprintf("moved%d", i); slots.Of([]byte(k)) == slot {
			key = k
		}
	}
	rdb := clusterClient(c, 2)
	defer rdb.Close()
	fnEventually(t, "FCALL on a key of a slot moved to the new group", 15*time.Second, func() error {
		if r, err := rdb.FCall(ctx, "kv_set", []string{key}, "v").Result(); err != nil || r != "OK" {
			return fmt.Errorf("FCALL kv_set %s (slot %d) = %v, %v", key, slot, r, err)
		}
		if r, err := rdb.FCallRO(ctx, "kv_get", []string{key}).Result(); err != nil || r != "v" {
			return fmt.Errorf("FCALL_RO kv_get %s = %v, %v", key, r, err)
		}
		return nil
	})
}

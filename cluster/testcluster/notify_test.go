package testcluster_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster/testcluster"
	"github.com/slotraft/slotraft/slots"
)

// TestKeyspaceNotifications: with notify-keyspace-events KEA on every node,
// a pattern subscriber on the master of a key's slots (its group's leader)
// receives both messages of each event of a write made through a cluster
// client, and "expired" when the key's time runs out; subscribers on the
// other nodes receive nothing (Redis Cluster's notifications are
// node-local). A change of leader during the test moves the events to the
// new leader, so then only their arrival somewhere is checked.
func TestKeyspaceNotifications(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitReady(20 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	type msg struct {
		node             int
		channel, payload string
	}
	var mu sync.Mutex
	var got []msg
	for i := range c.Len() {
		rdb := nodeClient(t, c, i, 2+i%2)
		if err := rdb.ConfigSet(ctx, "notify-keyspace-events", "KEA").Err(); err != nil {
			t.Fatalf("node %d: CONFIG SET: %v", i, err)
		}
		if v, err := rdb.ConfigGet(ctx, "notify-keyspace-events").Result(); err != nil || v["notify-keyspace-events"] != "AKE" {
			t.Fatalf("node %d: CONFIG GET: %v %v", i, v, err)
		}
		ps := rdb.PSubscribe(ctx, "__key*__:*")
		t.Cleanup(func() { ps.Close() })
		if _, err := receiveSub(ctx, ps); err != nil {
			t.Fatalf("node %d: psubscribe: %v", i, err)
		}
		go func() {
			for {
				m, err := ps.ReceiveMessage(context.Background())
				if err != nil {
					return // closed at the end of the test
				}
				mu.Lock()
				got = append(got, msg{i, m.Channel, m.Payload})
				mu.Unlock()
			}
		}()
	}

	const key, tmp = "{ks}key", "{ks}tmp"
	gi := int(c.Node(0).GroupOf(slots.Of([]byte(key))).ID()) - 1
	leader := c.LeaderIndex(gi)
	cc := clusterClient(c, 2)
	t.Cleanup(func() { cc.Close() })
	if err := cc.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cc.Set(ctx, tmp, "v", 300*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	want := []msg{
		{-1, "__keyspace@0__:" + key, "set"}, {-1, "__keyevent@0__:set", key},
		{-1, "__keyspace@0__:" + tmp, "set"}, {-1, "__keyevent@0__:set", tmp},
		{-1, "__keyspace@0__:" + tmp, "expire"}, {-1, "__keyevent@0__:expire", tmp},
		{-1, "__keyspace@0__:" + tmp, "expired"}, {-1, "__keyevent@0__:expired", tmp},
	}
	// snapshot returns the messages so far, in arrival order per node.
	snapshot := func() []msg {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
	missing := func(ms []msg) []msg {
		var out []msg
		for _, w := range want {
			if !slices.ContainsFunc(ms, func(m msg) bool { return m.channel == w.channel && m.payload == w.payload }) {
				out = append(out, w)
			}
		}
		return out
	}
	for ms := snapshot(); len(missing(ms)) > 0; ms = snapshot() {
		if ctx.Err() != nil {
			t.Fatalf("missing %v; received %v", missing(ms), ms)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c.LeaderIndex(gi) != leader || leader < 0 {
		t.Logf("the leader of the key's group changed during the test: delivery node not checked")
		return
	}
	// One leader throughout: every message came from it, in Redis's order.
	var fromLeader []msg
	for _, m := range snapshot() {
		if m.node != leader {
			t.Errorf("node %d (leader is %d) published %s %s", m.node, leader, m.channel, m.payload)
			continue
		}
		fromLeader = append(fromLeader, msg{-1, m.channel, m.payload})
	}
	if fmt.Sprint(fromLeader) != fmt.Sprint(want) {
		t.Errorf("leader's messages:\n got  %v\n want %v", fromLeader, want)
	}
}

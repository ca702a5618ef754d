package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster/server/proxy"
	"github.com/slotraft/slotraft/cluster/testcluster"
	"github.com/slotraft/slotraft/slots"
)

// checkTransactions runs MULTI/EXEC and WATCH on keys of every group.
func checkTransactions(ctx context.Context, t *testing.T, tp *testProxy) {
	rdb := tp.client(t)
	for i, tag := range keysInSlots("tx", 4) {
		a, b := "{"+tag+"}:a", "{"+tag+"}:b"
		cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, a, strconv.Itoa(i), 0)
			p.Incr(ctx, b)
			p.Ping(ctx)
			p.Get(ctx, a)
			return nil
		})
		if err != nil || len(cmds) != 4 || cmds[3].(*redis.StringCmd).Val() != strconv.Itoa(i) {
			t.Fatalf("MULTI on %s: %v %v", tag, cmds, err)
		}
		// WATCH, a change from another client, EXEC: null.
		err = rdb.Watch(ctx, func(tx *redis.Tx) error {
			if err := tp.client(t).Set(ctx, a, "changed", 0).Err(); err != nil {
				return err
			}
			_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, a, "mine", 0)
				return nil
			})
			return err
		}, a)
		if !errors.Is(err, redis.TxFailedErr) {
			t.Fatalf("WATCH then a change: %v, want the transaction to fail", err)
		}
		// WATCH with no change: it runs.
		err = rdb.Watch(ctx, func(tx *redis.Tx) error {
			_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, a, "mine", 0)
				return nil
			})
			return err
		}, a)
		if err != nil || rdb.Get(ctx, a).Val() != "mine" {
			t.Fatalf("WATCH without a change: %v, value %q", err, rdb.Get(ctx, a).Val())
		}
	}
	keys := keysInSlots("txx", 2)
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, keys[0], "1", 0)
		p.Set(ctx, keys[1], "1", 0)
		return nil
	})
	if err == nil || !containsAny(err.Error(), "EXECABORT", "CROSSSLOT") {
		t.Fatalf("a transaction over two slots: %v, want CROSSSLOT/EXECABORT", err)
	}
	if v, err := rdb.Exists(ctx, keys...).Result(); err != nil || v != 0 {
		t.Fatalf("after the aborted transaction: %d keys, %v", v, err)
	}
}

// checkBlocking: a BLPOP through the proxy blocks on its node, and an
// LPUSH of another client wakes it. A leader change while it waits ends
// it with the node's UNBLOCKED (or outcome unknown), as on the client
// port; a client then blocks again, and so does the test.
func checkBlocking(ctx context.Context, t *testing.T, tp *testProxy, blocked func() int) {
	for _, key := range keysInSlots("blk", 3) {
		waiter := tp.client(t)
		got := make(chan []string, 1)
		go func() {
			for {
				v, err := waiter.BLPop(ctx, 30*time.Second, key).Result()
				if err != nil && containsAny(err.Error(), "UNBLOCKED", "outcome unknown") {
					t.Logf("BLPOP %s: %v (a leader change): again", key, err)
					continue
				}
				if err != nil {
					v = []string{"error", err.Error()}
				}
				got <- v
				return
			}
		}()
		eventually(t, "BLPOP blocked on its node", func() error {
			if blocked() == 0 {
				return errors.New("no blocked client")
			}
			return nil
		})
		if err := tp.client(t).LPush(ctx, key, "x").Err(); err != nil {
			t.Fatal(err)
		}
		select {
		case v := <-got:
			if len(v) != 2 || v[0] != key || v[1] != "x" {
				t.Fatalf("BLPOP %s = %v", key, v)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("BLPOP %s not woken", key)
		}
	}
}

// checkPubSub: SUBSCRIBE, PSUBSCRIBE and SSUBSCRIBE through the proxy
// hear PUBLISH and SPUBLISH sent to any node's proxy.
func checkPubSub(ctx context.Context, t *testing.T, tp *testProxy) {
	sub := tp.client(t)
	channels := keysInSlots("chan", 3)
	ps := sub.Subscribe(ctx)
	defer ps.Close()
	subscribe := []func() error{
		func() error { return ps.Subscribe(ctx, channels[0]) },
		func() error { return ps.PSubscribe(ctx, "pat:*") },
		func() error { return ps.SSubscribe(ctx, channels[1]) }, // one slot each: one SSUBSCRIBE each
		func() error { return ps.SSubscribe(ctx, channels[2]) },
	}
	for i, fn := range subscribe {
		if err := fn(); err != nil {
			t.Fatal(err)
		}
		msg, err := ps.Receive(ctx) // the confirmation: subscribed when the proxy answers
		if s, ok := msg.(*redis.Subscription); err != nil || !ok || s.Count != []int{1, 2, 1, 2}[i] {
			t.Fatalf("confirmation %d: %#v, %v", i, msg, err)
		}
	}
	pub := tp.client(t)
	want := map[string]string{channels[0]: "m0", "pat:x": "mp", channels[1]: "s1", channels[2]: "s2"}
	for ch, m := range want {
		publish := pub.Publish
		if ch == channels[1] || ch == channels[2] {
			publish = pub.SPublish
		}
		if n, err := publish(ctx, ch, m).Result(); err != nil || n != 1 {
			t.Fatalf("publish to %s: %d receivers, %v", ch, n, err)
		}
	}
	for len(want) > 0 {
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		msg, err := ps.ReceiveMessage(rctx)
		cancel()
		if err != nil || want[msg.Channel] != msg.Payload {
			t.Fatalf("waiting for %v: %v, %v", want, msg, err)
		}
		delete(want, msg.Channel)
	}
}

// checkSession: AUTH with an ACL user runs every connection as that user,
// CLIENT SETNAME and CLIENT REPLY, RESET.
func checkSession(ctx context.Context, t *testing.T, c *testcluster.Cluster, tp *testProxy) {
	admin := tp.client(t)
	keys := keysInSlots("acl", 3)
	if err := admin.Do(ctx, "ACL", "SETUSER", "reader", "on", ">secret", "~acl:*", "+get", "+auth", "+hello", "+client").Err(); err != nil {
		t.Fatal(err)
	}
	defer admin.Do(ctx, "ACL", "DELUSER", "reader")
	for _, addr := range c.Addrs() { // the users are the meta group's: every node has it soon
		eventually(t, "the user on "+addr, func() error {
			rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
			defer rdb.Close()
			return rdb.Do(ctx, "AUTH", "reader", "secret").Err()
		})
	}
	for _, k := range keys {
		if err := admin.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	user := tp.client(t, func(o *redis.Options) { o.Username, o.Password, o.PoolSize = "reader", "secret", 1 })
	for _, k := range keys { // every node's connection runs as reader
		if v, err := user.Get(ctx, k).Result(); err != nil || v != "v" {
			t.Fatalf("GET %s as reader = %q, %v", k, v, err)
		}
		err := user.Set(ctx, k, "w", 0).Err()
		if err == nil || !containsAny(err.Error(), "NOPERM") {
			t.Fatalf("SET %s as reader: %v, want NOPERM", k, err)
		}
	}
	if who, err := user.Do(ctx, "ACL", "WHOAMI").Text(); err == nil || who == "default" {
		t.Fatalf("ACL WHOAMI as reader without +acl = %q, %v; want NOPERM", who, err)
	}
	wantErr(t, "wrong password", admin.Do(ctx, "AUTH", "reader", "nope").Err(),
		"WRONGPASS invalid username-password pair or user is disabled.")

	named := tp.client(t, func(o *redis.Options) { o.PoolSize = 1 })
	if err := named.Do(ctx, "CLIENT", "SETNAME", "proxied").Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := named.Do(ctx, "CLIENT", "GETNAME").Text(); err != nil || n != "proxied" {
		t.Fatalf("CLIENT GETNAME = %q, %v", n, err)
	}
	if v, err := named.Do(ctx, "RESET").Text(); err != nil || v != "RESET" {
		t.Fatalf("RESET = %q, %v", v, err)
	}
	if err := named.Do(ctx, "CLIENT", "GETNAME").Err(); err != redis.Nil {
		t.Fatalf("CLIENT GETNAME after RESET: %v, want nil", err)
	}
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// TestProxyRequirePass: with requirepass (cluster state), a proxied
// client gets NOAUTH until it authenticates, and then every node's
// connection runs authenticated: keys of every group, split commands.
func TestProxyRequirePass(t *testing.T) {
	c := newCluster(t)
	tp := startProxy(t, c, 0, proxy.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	node := redis.NewClient(&redis.Options{Addr: c.Addrs()[1]})
	defer node.Close()
	eventually(t, "CONFIG SET requirepass", func() error { return node.ConfigSet(ctx, "requirepass", "s3cret").Err() })
	keys := keysInSlots("pw", 4)
	// A connection authenticated before requirepass stays so (as in
	// Redis): each try is a new client, so new node connections.
	eventually(t, "NOAUTH through the proxy, on every group", func() error {
		anon := redis.NewClient(&redis.Options{Addr: tp.addr, MaxRetries: -1})
		defer anon.Close()
		for _, k := range keys {
			if err := anon.Get(ctx, k).Err(); err == nil || err.Error() != "NOAUTH Authentication required." {
				return fmt.Errorf("GET %s without AUTH: %v", k, err)
			}
		}
		return nil
	})
	anon := tp.client(t, func(o *redis.Options) { o.PoolSize = 1 })
	wantErr(t, "AUTH wrong", anon.Do(ctx, "AUTH", "nope").Err(), "WRONGPASS invalid username-password pair or user is disabled.")
	if err := anon.Do(ctx, "AUTH", "s3cret").Err(); err != nil {
		t.Fatalf("AUTH: %v", err)
	}
	for _, k := range keys {
		if err := anon.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatalf("SET %s after AUTH: %v", k, err)
		}
	}
	authed := tp.client(t, func(o *redis.Options) { o.Password = "s3cret"; o.Protocol = 3 })
	if vals, err := authed.MGet(ctx, keys...).Result(); err != nil || len(vals) != len(keys) || vals[3] != "v" {
		t.Fatalf("MGET with a password, RESP3: %v %v", vals, err)
	}
	if err := node.Do(ctx, "AUTH", "s3cret").Err(); err != nil {
		t.Fatal(err)
	}
	if err := node.ConfigSet(ctx, "requirepass", "").Err(); err != nil {
		t.Fatal(err)
	}
}

// checkShardMove: when the node leading a shard channel's slot goes, the
// client is unsubscribed with an sunsubscribe push and its count (as
// Redis does when a slot moves); subscribing again reaches the new
// leader, which delivers. (A node that stays up but loses the leadership
// sends the push itself; the proxy passes it on the same way.)
func checkShardMove(ctx context.Context, t *testing.T, c *testcluster.Cluster, tp *testProxy) {
	var ch string
	var gid uint32
	for i := 0; ch == ""; i++ { // a channel led by another node than the proxy's
		k := "moving:" + strconv.Itoa(i)
		g := c.Node(0).GroupOf(slots.Of([]byte(k)))
		if li := c.LeaderOf(g.ID()); li > 0 {
			ch, gid = k, g.ID()
		}
	}
	ps := tp.client(t).SSubscribe(ctx, ch)
	defer ps.Close()
	if msg, err := ps.Receive(ctx); err != nil || msg.(*redis.Subscription).Count != 1 {
		t.Fatalf("SSUBSCRIBE: %v %v", msg, err)
	}
	c.StopNode(c.LeaderOf(gid))
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	msg, err := ps.Receive(rctx)
	cancel()
	if s, ok := msg.(*redis.Subscription); err != nil || !ok || s.Kind != "sunsubscribe" || s.Channel != ch || s.Count != 0 {
		t.Fatalf("after its leader went: %#v, %v; want an sunsubscribe push", msg, err)
	}
	if err := ps.SSubscribe(ctx, ch); err != nil {
		t.Fatal(err)
	}
	if msg, err := ps.Receive(ctx); err != nil || msg.(*redis.Subscription).Count != 1 {
		t.Fatalf("SSUBSCRIBE again: %v %v", msg, err)
	}
	pub := tp.client(t)
	eventually(t, "SPUBLISH reaches the subscriber on the new leader", func() error {
		if n, err := pub.SPublish(ctx, ch, "after").Result(); err != nil || n != 1 {
			return fmt.Errorf("SPUBLISH: %d, %v", n, err)
		}
		return nil
	})
	if m, err := ps.ReceiveMessage(ctx); err != nil || m.Payload != "after" {
		t.Fatalf("message after the move: %v %v", m, err)
	}
}

package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster/server"
	"github.com/slotraft/slotraft/cluster/server/proxy"
	"github.com/slotraft/slotraft/cluster/testcluster"
	"github.com/slotraft/slotraft/slots"
)

// testProxy is a proxy serving on loopback for node i of an in-process
// cluster.
type testProxy struct {
	p    *proxy.Proxy
	addr string
}

// newCluster starts a 3-node, 3-group in-process cluster with leaders.
func newCluster(t *testing.T) *testcluster.Cluster {
	t.Helper()
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitLeaders(60 * time.Second)
	return c
}

// startProxy serves a proxy for node i until the test ends.
func startProxy(t *testing.T, c *testcluster.Cluster, i int, o proxy.Options) *testProxy {
	t.Helper()
	o.Commands = server.Commands()
	p := proxy.New(c.Node(i), o)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	t.Cleanup(func() {
		_ = p.Close()
		if err := <-served; err != nil {
			t.Errorf("proxy Serve: %v", err)
		}
	})
	return &testProxy{p: p, addr: ln.Addr().String()}
}

// client is a plain (not cluster-aware) go-redis client of the proxy.
func (tp *testProxy) client(t *testing.T, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: tp.addr, DialTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 10 * time.Second, MaxRetries: -1, Protocol: 2, PoolSize: 4}
	for _, f := range opts {
		f(o)
	}
	rdb := redis.NewClient(o)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// waitStats polls the proxy's counts until want holds or fails the test.
func (tp *testProxy) waitStats(t *testing.T, what string, want func(proxy.Stats) bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := tp.p.Stats()
		if want(st) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: proxy stats %+v", what, st)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}

// keysInSlots returns n keys whose slots are all different and spread
// over the slot space (so over the groups).
func keysInSlots(prefix string, n int) []string {
	var out []string
	seen := map[uint16]bool{}
	for i := 0; len(out) < n; i++ {
		k := fmt.Sprintf("%s:%d", prefix, i)
		s := slots.Of([]byte(k))
		if seen[s/(slots.Count/uint16(n))] {
			continue
		}
		seen[s/(slots.Count/uint16(n))] = true
		out = append(out, k)
	}
	return out
}

// eventually retries fn until it succeeds, for up to a minute.
func eventually(t *testing.T, what string, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}
}

// blockedClients counts the clients blocked on every node (INFO's
// blocked_clients), read directly from the nodes.
func blockedClients(ctx context.Context, t *testing.T, c *testcluster.Cluster) func() int {
	var nodes []*redis.Client
	for _, addr := range c.Addrs() {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = rdb.Close() })
		nodes = append(nodes, rdb)
	}
	return func() int {
		total := 0
		for _, rdb := range nodes {
			info, _ := rdb.Info(ctx, "clients").Result()
			for _, line := range strings.Split(info, "\r\n") {
				if v, ok := strings.CutPrefix(line, "blocked_clients:"); ok {
					n, _ := strconv.Atoi(v)
					total += n
				}
			}
		}
		return total
	}
}

// wantErr checks that err is a Redis error with text want.
func wantErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	var re redis.Error
	if !errors.As(err, &re) || err.Error() != want {
		t.Fatalf("%s: err %v, want %q", what, err, want)
	}
}

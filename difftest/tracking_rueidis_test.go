package difftest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/cluster/testcluster"
)

// TestTrackingRueidis: rueidis with its defaults (RESP3, cluster mode found
// by itself, client-side caching with CLIENT TRACKING OPTIN and CLIENT
// CACHING yes before each cached read) against a 3-node cluster: the
// second DoCache of a key is a cache hit, and a change made through
// another client (a write, a DEL) reaches the cache, so DoCache then
// answers the new value; keys of every group are tried.
func TestTrackingRueidis(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitReady(30 * time.Second)
	ctx := context.Background()
	cached, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: c.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cached.Close)
	mut, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: c.Addrs(), DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mut.Close)
	// write runs a write, again while the cluster answers CLUSTERDOWN (a
	// group electing a leader on a loaded machine), as an application would.
	write := func(cmd rueidis.Completed) {
		t.Helper()
		var err error
		cluster.PollUntil(t, "a write without CLUSTERDOWN", func() bool {
			err = mut.Do(ctx, cmd.Pin()).Error()
			return err == nil || !strings.HasPrefix(err.Error(), "CLUSTERDOWN")
		})
		if err != nil {
			t.Fatalf("%v: %v", cmd.Commands(), err)
		}
	}
	set := func(key, v string) { t.Helper(); write(mut.B().Set().Key(key).Value(v).Build()) }
	// get is a cached GET: its value ("(nil)" for none) and whether the
	// local cache answered it.
	get := func(key string) (string, bool) {
		t.Helper()
		r := cached.DoCache(ctx, cached.B().Get().Key(key).Cache(), time.Minute)
		if rueidis.IsRedisNil(r.Error()) {
			return "(nil)", r.IsCacheHit()
		}
		v, err := r.ToString()
		if err != nil {
			t.Fatalf("GET %s: %v", key, err)
		}
		return v, r.IsCacheHit()
	}
	for _, key := range []string{"rue:{a}", "rue:{b}", "rue:{c}", "rue:{d}"} {
		set(key, "v1")
		if v, _ := get(key); v != "v1" {
			t.Fatalf("%s = %q, want v1", key, v)
		}
		if v, hit := get(key); v != "v1" || !hit {
			t.Fatalf("second GET %s = %q, cache hit %v: want v1 from the cache", key, v, hit)
		}
		set(key, "v2")
		cluster.PollUntil(t, key+"'s invalidation after SET", func() bool { v, _ := get(key); return v == "v2" })
		write(mut.B().Del().Key(key).Build())
		cluster.PollUntil(t, key+"'s invalidation after DEL", func() bool { v, _ := get(key); return v == "(nil)" })
	}
}

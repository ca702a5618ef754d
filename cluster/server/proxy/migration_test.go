package proxy_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster/server/proxy"
	"github.com/slotraft/slotraft/slots"
)

// TestProxyMigration moves slots between groups while clients increment
// keys of those slots through the proxy in pipelines, and read them with
// MGET across slots: the nodes answer MOVED, ASK and TRYAGAIN as the keys
// move, the proxy follows them, and the clients see no error, every reply
// of a pipeline in order, every increment counted once.
func TestProxyMigration(t *testing.T) {
	c := newCluster(t)
	c.WaitSpread(time.Minute)
	tp := startProxy(t, c, 0, proxy.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const moving = 64 // slots 0..63 move
	var keys []string
	for i := 0; len(keys) < 48; i++ {
		if k := "mig:" + strconv.Itoa(i); slots.Of([]byte(k)) < moving {
			keys = append(keys, k)
		}
	}
	eventually(t, "cluster up", func() error { return tp.client(t).Set(ctx, "up", 1, 0).Err() })

	m := c.Node(0).Map()
	dst := m.Groups[len(m.Groups)-1].ID
	var move []uint16
	for sl := range uint16(moving) {
		move = append(move, sl)
	}
	stop := make(chan struct{})
	acked := make([]map[string]int64, 4)
	errs := make(chan error, len(acked))
	var wg sync.WaitGroup
	for w := range acked {
		acked[w] = map[string]int64{}
		rdb := tp.client(t, func(o *redis.Options) { o.PoolSize = 1 })
		mine := keys[w*len(keys)/len(acked) : (w+1)*len(keys)/len(acked)]
		wg.Go(func() { errs <- migrationWriter(ctx, rdb, mine, acked[w], stop) })
	}
	if n, err := c.Node(0).MoveSlots(ctx, dst, move); err != nil || n != moving {
		t.Fatalf("MoveSlots: %d recorded, %v", n, err)
	}
	eventually(t, "the migration finished", func() error {
		if m := c.Node(0).Map(); len(m.Migrations) > 0 || m.SlotCount(dst) < slots.Count/3+moving {
			return fmt.Errorf("%d migrations in flight", len(m.Migrations))
		}
		return nil
	})
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if st := tp.p.Stats(); st.Redirects == 0 {
		t.Fatalf("no redirect followed while %d slots moved: %+v", moving, st)
	}
	rdb := tp.client(t)
	for w := range acked {
		for k, n := range acked[w] {
			if v, err := rdb.Get(ctx, k).Int64(); err != nil || v != n {
				t.Fatalf("%s = %d (%v), %d increments acknowledged", k, v, err, n)
			}
		}
	}
}

// migrationWriter increments its keys in pipelines of 8 and reads them
// with one MGET, until stop; any error, or a reply out of order, fails.
func migrationWriter(ctx context.Context, rdb *redis.Client, keys []string, acked map[string]int64, stop <-chan struct{}) error {
	for round := 0; ; round++ {
		select {
		case <-stop:
			if round > 0 {
				return nil
			}
		default:
		}
		p := rdb.Pipeline()
		incrs := make([]*redis.IntCmd, 8)
		for i := range incrs {
			incrs[i] = p.Incr(ctx, keys[(round*len(incrs)+i)%len(keys)])
		}
		if _, err := p.Exec(ctx); err != nil {
			return fmt.Errorf("pipeline: %w", err)
		}
		for i, cmd := range incrs {
			k := keys[(round*len(incrs)+i)%len(keys)]
			if acked[k]++; cmd.Val() != acked[k] {
				return fmt.Errorf("INCR %s = %d, want %d", k, cmd.Val(), acked[k])
			}
		}
		vals, err := rdb.MGet(ctx, keys...).Result()
		if err != nil {
			return fmt.Errorf("MGET: %w", err)
		}
		for i, v := range vals {
			if want := acked[keys[i]]; (want == 0 && v != nil) || (want > 0 && v != strconv.FormatInt(want, 10)) {
				return fmt.Errorf("MGET %s = %v, want %d", keys[i], v, want)
			}
		}
	}
}

package proxy_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster/server/proxy"
	"github.com/slotraft/slotraft/slots"
)

// counter checks the replies of the INCRs of one key, in the order they
// were sent: each acknowledged value is above the last one, and one above
// it unless a command before it had an unknown outcome.
type counter struct {
	key                   string
	last, acked, unknown  int64
	notRun, batch, rounds int
}

func (c *counter) note(v int64, err error) error {
	switch {
	case err == nil && (v <= c.last || (v > c.last+1 && c.unknown == 0)):
		return fmt.Errorf("INCR %s = %d after %d with %d unknown outcomes: a wrong answer", c.key, v, c.last, c.unknown)
	case err == nil:
		c.last = v
		c.acked++
	case strings.Contains(err.Error(), "outcome unknown"):
		c.unknown++
	case strings.Contains(err.Error(), "not run:"): // nothing was done
		c.notRun++
	default:
		return fmt.Errorf("INCR %s: %w (a failover must be a stall, not an error)", c.key, err)
	}
	return nil
}

// round sends batch INCRs in one pipeline and checks their replies.
func (c *counter) round(ctx context.Context, rdb *redis.Client) error {
	p := rdb.Pipeline()
	cmds := make([]*redis.IntCmd, c.batch)
	for i := range cmds {
		cmds[i] = p.Incr(ctx, c.key)
	}
	_, _ = p.Exec(ctx)
	c.rounds++
	for _, cmd := range cmds {
		if err := c.note(cmd.Result()); err != nil {
			return err
		}
	}
	return nil
}

// run does 20 rounds, says so on warmed, then goes on until 30 rounds
// after stopped is closed.
func (c *counter) run(ctx context.Context, rdb *redis.Client, warmed chan<- struct{}, stopped <-chan struct{}) error {
	for range 20 {
		if err := c.round(ctx, rdb); err != nil {
			return err
		}
	}
	warmed <- struct{}{}
	for after := 0; after < 30 && ctx.Err() == nil; {
		select {
		case <-stopped:
			after++
		default:
		}
		if err := c.round(ctx, rdb); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// TestProxyFailover stops the node leading a group (not the proxy's)
// while two clients increment keys of that group through the proxy, one
// command at a time and in pipelines of 10: the clients see a stall, only
// commands in flight at the stop answer "outcome unknown" (or, in the
// pipeline, "not run"), every acknowledged increment is there, and no
// reply is wrong or out of order.
func TestProxyFailover(t *testing.T) {
	c := newCluster(t)
	tp := startProxy(t, c, 0, proxy.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	victim := -1
	var counters []*counter
	for i := 0; len(counters) < 2; i++ { // keys led by another node than the proxy's
		k := "fo:" + strconv.Itoa(i)
		g := c.Node(0).GroupOf(slots.Of([]byte(k)))
		if l, ok := c.Node(0).Leader(g); ok && l.ID != c.Peers()[0].ID && (victim < 0 || c.IndexOf(l.ID) == victim) {
			victim = c.IndexOf(l.ID)
			counters = append(counters, &counter{key: k, batch: 1 + 9*len(counters)})
		}
	}
	eventually(t, "first write", func() error { return tp.client(t).Set(ctx, counters[0].key, 0, 0).Err() })

	stopped := make(chan struct{})
	errs := make(chan error, len(counters))
	warmed := make(chan struct{}, len(counters))
	var wg sync.WaitGroup
	for _, ctr := range counters {
		rdb := tp.client(t, func(o *redis.Options) { o.PoolSize = 1 })
		wg.Go(func() { errs <- ctr.run(ctx, rdb, warmed, stopped) })
	}
	for range counters { // every writer has run a while before the stop
		select {
		case <-warmed:
		case err := <-errs:
			t.Fatal(err)
		}
	}
	c.StopNode(victim)
	close(stopped)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	rdb := tp.client(t)
	for _, ctr := range counters {
		// The commands in flight at the stop; and as many again for a
		// leader change a loaded machine may add.
		if ctr.unknown+int64(ctr.notRun) > 2*int64(ctr.batch) {
			t.Fatalf("%s: %d unknown, %d not run: more than the %d commands in flight at the stop", ctr.key, ctr.unknown, ctr.notRun, ctr.batch)
		}
		v, err := rdb.Get(ctx, ctr.key).Int64()
		if err != nil || v < ctr.last || v > ctr.acked+ctr.unknown {
			t.Fatalf("%s = %d (%v): want between the last acknowledged %d and %d acks + %d unknown",
				ctr.key, v, err, ctr.last, ctr.acked, ctr.unknown)
		}
		t.Logf("%s (pipelines of %d): %d acks, %d unknown, %d not run in %d rounds", ctr.key, ctr.batch, ctr.acked, ctr.unknown, ctr.notRun, ctr.rounds)
	}
	t.Logf("stopped node%d; proxy %+v", victim+1, tp.p.Stats())
}

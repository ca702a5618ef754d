package testcluster_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster/testcluster"
	"github.com/slotraft/slotraft/slots"
)

// Transactions: MULTI EXEC DISCARD WATCH UNWATCH, by hand (error texts,
// RESP3) and through go-redis (the patterns users copy), and across a
// leader failure.

func TestMulti(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitReady(20 * time.Second)

	k, _ := keyInGroup(t, c, 0, "tx:")
	tag := "{" + k + "}"
	other, otherSlot := keyInGroup(t, c, 1, "txo:")
	addr := c.Addrs()[c.LeaderIndex(0)]
	// A key of group 0 in another slot than k.
	var sameGroup string
	for i := 0; ; i++ {
		cand, _ := keyInGroup(t, c, 0, "txs"+strconv.Itoa(i)+":")
		if slots.Of([]byte(cand)) != slots.Of([]byte(k)) {
			sameGroup = cand
			break
		}
	}

	t.Run("errors and replies", func(t *testing.T) {
		r := dialRaw(t, addr)
		steps := []struct {
			cmd  []string
			want string
		}{
			{[]string{"EXEC"}, "-ERR EXEC without MULTI\r\n"},
			{[]string{"DISCARD"}, "-ERR DISCARD without MULTI\r\n"},
			{[]string{"MULTI"}, "+OK\r\n"},
			{[]string{"MULTI"}, "-ERR MULTI calls can not be nested\r\n"},
			{[]string{"WATCH", k}, "-ERR WATCH inside MULTI is not allowed\r\n"},
			{[]string{"SET", k, "1"}, "+QUEUED\r\n"},
			{[]string{"INCR", k}, "+QUEUED\r\n"},
			{[]string{"PING"}, "+QUEUED\r\n"},
			{[]string{"ECHO", "hi"}, "+QUEUED\r\n"},
			{[]string{"SET", k, "x"}, "+QUEUED\r\n"},
			{[]string{"INCR", k}, "+QUEUED\r\n"},
			{[]string{"BLPOP", tag + "l", "0"}, "+QUEUED\r\n"},
			{[]string{"UNWATCH"}, "+QUEUED\r\n"},
			{[]string{"EXEC"}, "*8\r\n+OK\r\n:2\r\n+PONG\r\n$2\r\nhi\r\n+OK\r\n-ERR value is not an integer or out of range\r\n*-1\r\n+OK\r\n"},
			{[]string{"EXEC"}, "-ERR EXEC without MULTI\r\n"},
			// Queue-time errors abort the whole transaction.
			{[]string{"MULTI"}, "+OK\r\n"},
			{[]string{"SET", k, "queued-but-aborted"}, "+QUEUED\r\n"},
			{[]string{"NOSUCH", "a"}, "-ERR unknown command 'NOSUCH', with args beginning with: 'a' \r\n"},
			{[]string{"GET"}, "-ERR wrong number of arguments for 'get' command\r\n"},
			{[]string{"EXEC"}, "-EXECABORT Transaction discarded because of previous errors.\r\n"},
			{[]string{"GET", k}, "$1\r\nx\r\n"},
			{[]string{"MULTI"}, "+OK\r\n"},
			{[]string{"MSET", tag + "a", "1", other, "2"}, "-CROSSSLOT Keys in request don't hash to the same slot\r\n"},
			{[]string{"EXEC"}, "-EXECABORT Transaction discarded because of previous errors.\r\n"},
			{[]string{"MULTI"}, "+OK\r\n"},
			{[]string{"GET", other}, "-MOVED " + strconv.Itoa(int(otherSlot)) + " " + c.Addrs()[c.LeaderIndex(1)] + "\r\n"},
			{[]string{"EXEC"}, "-EXECABORT Transaction discarded because of previous errors.\r\n"},
			{[]string{"MULTI"}, "+OK\r\n"},
			{[]string{"FLUSHALL"}, "+QUEUED\r\n"}, // a node command: runs after the entry
			{[]string{"DISCARD"}, "+OK\r\n"},
			// Keys of two slots across commands: CROSSSLOT at EXEC, as Redis Cluster.
			{[]string{"MULTI"}, "+OK\r\n"},
			{[]string{"SET", k, "y"}, "+QUEUED\r\n"},
			{[]string{"SET", sameGroup, "y"}, "+QUEUED\r\n"},
			{[]string{"EXEC"}, "-CROSSSLOT Keys in request don't hash to the same slot\r\n"},
			{[]string{"GET", k}, "$1\r\nx\r\n"},
			{[]string{"MULTI"}, "+OK\r\n"},
			{[]string{"EXEC"}, "*0\r\n"},
			// Scripts run inside the transaction's entry.
			{[]string{"MULTI"}, "+OK\r\n"},
			{[]string{"EVAL", "return redis.call('incr', KEYS[1])", "1", tag + "ev"}, "+QUEUED\r\n"},
			{[]string{"EVAL", "return 1", "0"}, "-ERR 'eval' has no key to route by and is not supported in cluster mode\r\n"},
			{[]string{"DISCARD"}, "+OK\r\n"},
			{[]string{"MULTI"}, "+OK\r\n"},
			{[]string{"EVAL", "return redis.call('incr', KEYS[1])", "1", tag + "ev"}, "+QUEUED\r\n"},
			{[]string{"INCR", tag + "ev"}, "+QUEUED\r\n"},
			{[]string{"EXEC"}, "*2\r\n:1\r\n:2\r\n"},
			{[]string{"WATCH", other}, "-MOVED " + strconv.Itoa(int(otherSlot)) + " " + c.Addrs()[c.LeaderIndex(1)] + "\r\n"},
			{[]string{"WATCH", k, other}, "-CROSSSLOT Keys in request don't hash to the same slot\r\n"},
		}
		for i, st := range steps {
			if got := r.do(st.cmd...); got != st.want {
				t.Fatalf("step %d %q: got %q, want %q", i, st.cmd, got, st.want)
			}
		}
	})

	t.Run("watch", func(t *testing.T) {
		a, b := dialRaw(t, addr), dialRaw(t, addr)
		exec := func(want string, cmds ...[]string) {
			t.Helper()
			if got := a.do("MULTI"); got != "+OK\r\n" {
				t.Fatalf("MULTI = %q", got)
			}
			for _, cmd := range cmds {
				if got := a.do(cmd...); got != "+QUEUED\r\n" {
					t.Fatalf("%q = %q", cmd, got)
				}
			}
			if got := a.do("EXEC"); got != want {
				t.Fatalf("EXEC = %q, want %q", got, want)
			}
		}
		set := []string{"SET", tag + "w", "mine"}
		b.do("SET", tag+"w", "0")
		// Modified by another connection: aborted.
		a.do("WATCH", tag+"w")
		b.do("SET", tag+"w", "theirs")
		exec("*-1\r\n", set)
		if got := b.do("GET", tag+"w"); got != "$6\r\ntheirs\r\n" {
			t.Fatalf("aborted transaction wrote: %q", got)
		}
		// Untouched: runs. EXEC unwatched, so the next one runs too.
		a.do("WATCH", tag+"w")
		exec("*1\r\n+OK\r\n", set)
		b.do("SET", tag+"w", "theirs")
		exec("*1\r\n+OK\r\n", set)
		// UNWATCH and DISCARD forget the watches.
		a.do("WATCH", tag+"w")
		a.do("UNWATCH")
		b.do("SET", tag+"w", "theirs")
		exec("*1\r\n+OK\r\n", set)
		a.do("WATCH", tag+"w")
		a.do("MULTI")
		a.do("DISCARD")
		b.do("SET", tag+"w", "theirs")
		exec("*1\r\n+OK\r\n", set)
		// An absent key created and deleted meanwhile: aborted.
		a.do("WATCH", tag+"absent")
		b.do("SET", tag+"absent", "1")
		b.do("DEL", tag+"absent")
		exec("*-1\r\n", set)
		// An absent key that stays absent: runs.
		a.do("WATCH", tag+"absent2")
		exec("*1\r\n+OK\r\n", set)
		// A watched key that expires meanwhile counts as modified (Redis 7).
		b.do("SET", tag+"exp", "1", "PX", "100")
		a.do("WATCH", tag+"exp")
		time.Sleep(200 * time.Millisecond)
		exec("*-1\r\n", []string{"GET", tag + "exp"})
		// Watched keys and the transaction's keys must share a slot.
		a.do("WATCH", sameGroup)
		exec("-CROSSSLOT Keys in request don't hash to the same slot\r\n", set)
		// A transaction with only watches still checks them.
		a.do("WATCH", tag+"w")
		b.do("SET", tag+"w", "theirs")
		exec("*-1\r\n")
	})

	t.Run("resp3", func(t *testing.T) {
		r := dialRaw(t, addr)
		r.do("HELLO", "3")
		r.do("MULTI")
		r.do("HGETALL", tag+"nohash")
		r.do("BLPOP", tag+"nolist", "0")
		r.do("ZADD", tag+"z", "1.5", "m")
		r.do("ZSCORE", tag+"z", "m")
		if got, want := r.do("EXEC"), "*4\r\n%0\r\n_\r\n:1\r\n,1.5\r\n"; got != want {
			t.Fatalf("EXEC = %q, want %q", got, want)
		}
		r.do("WATCH", tag+"z")
		dialRaw(t, addr).do("ZADD", tag+"z", "2", "m")
		r.do("MULTI")
		r.do("GET", tag+"x")
		if got := r.do("EXEC"); got != "_\r\n" {
			t.Fatalf("aborted EXEC in RESP3 = %q", got)
		}
	})

	t.Run("leadership moved before EXEC", func(t *testing.T) {
		// Queued on a node, then EXEC after the slot's leader moved: MOVED,
		// nothing applied. Simulated by queuing on a follower's view: the
		// queue-time check already redirects, so use a transaction whose
		// group leader is stopped between MULTI and EXEC in the failover test.
		r := dialRaw(t, c.Addrs()[c.LeaderIndex(1)])
		r.do("MULTI")
		if got := r.do("SET", k, "z"); !strings.HasPrefix(got, "-MOVED ") {
			t.Fatalf("queued on a non-leader: %q", got)
		}
		if got := r.do("EXEC"); got != "-EXECABORT Transaction discarded because of previous errors.\r\n" {
			t.Fatalf("EXEC = %q", got)
		}
	})
}

func TestMultiGoRedis(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitReady(20 * time.Second)
	ctx := context.Background()
	rdb := clusterClient(c, 2)
	defer rdb.Close()

	t.Run("one-time token", func(t *testing.T) {
		// MULTI GET DEL EXEC: of 20 concurrent redeemers exactly one gets it.
		for round := range 5 {
			key := "token:" + strconv.Itoa(round)
			if err := rdb.Set(ctx, key, "secret", 0).Err(); err != nil {
				t.Fatal(err)
			}
			var winners atomic.Int32
			var wg sync.WaitGroup
			errs := make(chan error, 20)
			for range 20 {
				wg.Go(func() {
					var get *redis.StringCmd
					_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
						get = p.Get(ctx, key)
						p.Del(ctx, key)
						return nil
					})
					switch {
					case err == nil && get.Val() == "secret":
						winners.Add(1)
					case errors.Is(err, redis.Nil):
					default:
						errs <- err
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("redeem: %v", err)
			}
			if n := winners.Load(); n != 1 {
				t.Fatalf("round %d: %d clients redeemed the token", round, n)
			}
		}
	})

	t.Run("optimistic counter", func(t *testing.T) {
		const clients, each = 20, 10
		key := "occ:counter"
		var retries atomic.Int64
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for range clients {
			wg.Go(func() {
				for range each {
					for {
						err := rdb.Watch(ctx, func(tx *redis.Tx) error {
							n, err := tx.Get(ctx, key).Int()
							if err != nil && !errors.Is(err, redis.Nil) {
								return err
							}
							_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
								p.Set(ctx, key, n+1, 0)
								return nil
							})
							return err
						}, key)
						if err == nil {
							break
						}
						if !errors.Is(err, redis.TxFailedErr) && !neverProposed(err) {
							errs <- err
							return
						}
						if retries.Add(1) > 100_000 {
							errs <- fmt.Errorf("no progress after %d retries: %w", retries.Load(), err)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("counter client: %v", err)
		}
		got, err := rdb.Get(ctx, key).Int()
		if err != nil || got != clients*each {
			t.Fatalf("counter = %d, %v; want %d", got, err, clients*each)
		}
		t.Logf("optimistic counter: %d increments by %d clients in %v, %d WATCH retries",
			clients*each, clients, time.Since(start).Round(time.Millisecond), retries.Load())
	})

	t.Run("failover", func(t *testing.T) { testMultiFailover(t, c, rdb) })
}

// testMultiFailover runs transactions that set 8 keys to the same value
// while the leader of their group is stopped: on the new leader the keys
// are all equal (each transaction applied fully or not at all), and at least
// the last acknowledged value.
func testMultiFailover(t *testing.T, c *testcluster.Cluster, rdb *redis.ClusterClient) {
	k0, _ := keyInGroup(t, c, 2, "txfo:")
	keys := make([]string, 8)
	for i := range keys {
		keys[i] = "{" + k0 + "}:" + strconv.Itoa(i)
	}
	victim := atomicUnderFailover(t, c, rdb, 2, keys, "transactions", func(cctx context.Context, i int64) error {
		_, err := rdb.TxPipelined(cctx, func(p redis.Pipeliner) error {
			for j, k := range keys {
				if j%2 == 1 {
					p.Append(cctx, k+":log", ".")
				}
				p.Set(cctx, k, i, 0)
			}
			return nil
		})
		return err
	})
	c.RestartNode(victim)
	c.WaitLeaders(20 * time.Second)
}

// neverProposed says whether err is a reply that slotraft gives only for
// commands that never reached the log (a leader change under a loaded
// machine): the client may retry the transaction.
func neverProposed(err error) bool {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return false
	}
	msg := rerr.Error()
	for _, prefix := range []string{"CLUSTERDOWN ", "MOVED ", "TRYAGAIN "} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// txTest names the transaction row in the results.
const txTest = "MULTI/EXEC"

// txKeyTTL is the EXPIRE of each transaction; long enough that no counter
// expires before the run verifies it.
const txKeyTTL = 100 * time.Second

type txFlags struct {
	benchCommon
	cluster  bool
	clients  int
	requests int
}

// runBenchTx implements `slotraft bench tx`: each of --clients connections
// runs MULTI; INCR; SET; LPUSH; HINCRBY; EXPIRE; EXEC on keys of its own hash
// tag (one slot) at pipeline 1 until --requests transactions were attempted,
// then the run checks every client's counters against its successes.
func runBenchTx(args []string, stdout, stderr io.Writer) error {
	fs := newBenchFlagSet("tx", "MULTI; INCR; SET; LPUSH; HINCRBY; EXPIRE; EXEC at pipeline 1, one hash tag per client.", stderr)
	f := &txFlags{}
	f.register(fs, 10*time.Minute)
	fs.BoolVar(&f.cluster, "cluster", false, "the addresses are cluster nodes: route by slot (go-redis ClusterClient)")
	fs.IntVar(&f.clients, "clients", 50, "concurrent connections, one transaction in flight each")
	fs.IntVar(&f.requests, "requests", 20000, "transactions to run in total")
	if err := parseBenchFlags(fs, &f.benchCommon, args, stderr); err != nil {
		return err
	}
	if f.clients < 1 || f.requests < 1 {
		fmt.Fprintln(stderr, "slotraft bench tx: --clients and --requests must be at least 1")
		return errUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	rdb := newBenchClient(f.addrs, f.cluster, f.clients)
	defer rdb.Close()

	run := newTxRun(f.clients)
	start := time.Now()
	run.drive(ctx, rdb, f.requests)
	elapsed := time.Since(start)
	if run.firstErr != nil {
		fmt.Fprintf(stderr, "slotraft bench tx: %d of %d transactions failed; first error: %v\n", run.failed(), f.requests, run.firstErr)
	}
	if err := run.verify(ctx, rdb); err != nil {
		return err
	}
	run.cleanup(ctx, rdb)
	if f.csv {
		fmt.Fprintln(stdout, benchCSVHeader)
	}
	writeSummary(stdout, f.csv, txTest, summarize(run.samples(), run.failed(), elapsed))
	if run.succeeded() == 0 {
		return fmt.Errorf("no transaction succeeded: %w", run.firstErr)
	}
	return nil
}

// newBenchClient connects to a cluster (routing by slot, following MOVED)
// or to one server.
func newBenchClient(addrs []string, cluster bool, pool int) redis.UniversalClient {
	if cluster {
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: addrs, PoolSize: pool, MaxRedirects: 16,
			ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
		})
	}
	return redis.NewClient(&redis.Options{
		Addr: addrs[0], PoolSize: pool,
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
	})
}

// txRun is the state of one tx run: each client's keys, successes and
// latencies, and the shared count of transactions started.
type txRun struct {
	id      string
	clients []txClient
	started atomic.Int64

	mu       sync.Mutex
	firstErr error
}

type txClient struct {
	counter, str, list, hash string // one hash tag: one slot
	ok, failed               int
	latencies                []time.Duration
}

func newTxRun(clients int) *txRun {
	r := &txRun{id: benchRunID(), clients: make([]txClient, clients)}
	for i := range r.clients {
		tag := "{bench:tx:" + r.id + ":" + strconv.Itoa(i) + "}"
		r.clients[i] = txClient{counter: tag + ":n", str: tag + ":s", list: tag + ":l", hash: tag + ":h"}
	}
	return r
}

// drive runs the clients until total transactions were started or ctx ends.
func (r *txRun) drive(ctx context.Context, rdb redis.UniversalClient, total int) {
	var wg sync.WaitGroup
	for i := range r.clients {
		c := &r.clients[i]
		wg.Go(func() {
			for ctx.Err() == nil && r.started.Add(1) <= int64(total) {
				t0 := time.Now()
				if err := c.transaction(ctx, rdb); err != nil {
					c.failed++
					r.noteErr(err)
					continue
				}
				c.latencies = append(c.latencies, time.Since(t0))
				c.ok++
			}
		})
	}
	wg.Wait()
}

// transaction sends MULTI … EXEC in one round trip and checks the replies.
func (c *txClient) transaction(ctx context.Context, rdb redis.UniversalClient) error {
	cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, c.counter)
		p.Set(ctx, c.str, "v", 0)
		p.LPush(ctx, c.list, "x")
		p.HIncrBy(ctx, c.hash, "f", 1)
		p.Expire(ctx, c.counter, txKeyTTL)
		return nil
	})
	if err != nil {
		return err
	}
	if len(cmds) != 5 {
		return fmt.Errorf("EXEC answered %d replies, want 5", len(cmds))
	}
	return nil
}

func (r *txRun) noteErr(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.firstErr == nil {
		r.firstErr = err
	}
}

func (r *txRun) succeeded() int {
	n := 0
	for i := range r.clients {
		n += r.clients[i].ok
	}
	return n
}

func (r *txRun) failed() int {
	n := 0
	for i := range r.clients {
		n += r.clients[i].failed
	}
	return n
}

func (r *txRun) samples() []time.Duration {
	var all []time.Duration
	for i := range r.clients {
		all = append(all, r.clients[i].latencies...)
	}
	return all
}

// errTxMismatch reports counters that disagree with the successes counted.
var errTxMismatch = errors.New("transaction counters disagree with the successes counted")

// verify reads each client's counter, hash field and list length: each must
// equal the client's successful transactions (a failed transaction may or
// may not have been applied, so with failures it must lie between the
// successes and the attempts).
func (r *txRun) verify(ctx context.Context, rdb redis.UniversalClient) error {
	for i := range r.clients {
		c := &r.clients[i]
		n, err1 := rdb.Get(ctx, c.counter).Int()
		h, err2 := rdb.HGet(ctx, c.hash, "f").Int()
		l, err3 := rdb.LLen(ctx, c.list).Result()
		if err := errors.Join(ignoreNil(err1), ignoreNil(err2), ignoreNil(err3)); err != nil {
			return fmt.Errorf("verify client %d: %w", i, err)
		}
		for _, got := range []int{n, h, int(l)} {
			if got < c.ok || got > c.ok+c.failed {
				return fmt.Errorf("%w: client %d: INCR %d, HINCRBY %d, LLEN %d after %d successful and %d failed transactions",
					errTxMismatch, i, n, h, l, c.ok, c.failed)
			}
		}
	}
	return nil
}

// ignoreNil treats a missing key (possible when every transaction of a
// client failed) as zero.
func ignoreNil(err error) error {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

// cleanup deletes the run's keys (best effort: the run already succeeded).
func (r *txRun) cleanup(ctx context.Context, rdb redis.UniversalClient) {
	for i := range r.clients {
		c := &r.clients[i]
		_ = rdb.Del(ctx, c.counter, c.str, c.list, c.hash).Err()
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// `slotraft bench eviction` runs a cache-aside trace against a server under
// maxmemory: each operation GETs a key drawn from a Zipf distribution and,
// on a miss, SETs it, as an application in front of a slower store does.
// The trace is the same for a given --seed, so slotraft and redis-server
// see the same keys in the same order (split over --clients connections,
// operation i on connection i mod clients). It reports the hit rate after
// the warm-up; scripts/bench-eviction.sh compares the two servers.

type evictionFlags struct {
	benchCommon
	cluster   bool
	keys      int
	ops       int
	warmup    int
	valueSize int
	clients   int
	zipfS     float64
	seed      uint64
	maxmemory string
	policy    string
}

// evictionResult is one run's outcome.
type evictionResult struct {
	lookups, hits int64 // after the warm-up
	errs          int64
	evicted       int64
	keysHeld      int64
	took          time.Duration
}

func runBenchEviction(args []string, stdout, stderr io.Writer) error {
	fs := newBenchFlagSet("eviction", "Run a cache-aside Zipf trace (GET, SET on a miss) under maxmemory and report the hit rate.", stderr)
	f := &evictionFlags{}
	f.register(fs, 20*time.Minute)
	fs.BoolVar(&f.cluster, "cluster", false, "the addresses are cluster nodes: route by slot (go-redis ClusterClient)")
	fs.IntVar(&f.keys, "keys", 500_000, "distinct keys the trace draws from")
	fs.IntVar(&f.ops, "ops", 600_000, "operations (GETs) in the trace")
	fs.IntVar(&f.warmup, "warmup", 150_000, "first operations not counted in the hit rate")
	fs.IntVar(&f.valueSize, "value-size", 100, "bytes per value")
	fs.IntVar(&f.clients, "clients", 32, "concurrent connections")
	fs.Float64Var(&f.zipfS, "zipf", 1.01, "the Zipf distribution's s (> 1): larger is more skewed")
	fs.Uint64Var(&f.seed, "seed", 1, "the trace's seed")
	fs.StringVar(&f.maxmemory, "maxmemory", "12mb", "CONFIG SET maxmemory on every node before the run")
	fs.StringVar(&f.policy, "policy", "allkeys-lru", "CONFIG SET maxmemory-policy on every node before the run")
	if err := parseBenchFlags(fs, &f.benchCommon, args, stderr); err != nil {
		return err
	}
	if f.keys < 2 || f.ops < 1 || f.warmup < 0 || f.warmup >= f.ops || f.valueSize < 1 || f.clients < 1 || f.zipfS <= 1 {
		fmt.Fprintln(stderr, "slotraft bench eviction: --keys > 1, --ops > --warmup >= 0, --value-size and --clients > 0, --zipf > 1")
		return errUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	r, err := f.run(ctx)
	if err != nil {
		return err
	}
	rate := 100 * float64(r.hits) / float64(max(r.lookups, 1))
	if f.csv {
		fmt.Fprintln(stdout, `"lookups","hits","hit_rate","errors","evicted_keys","keys_held","seconds"`)
		fmt.Fprintf(stdout, "%d,%d,%.2f,%d,%d,%d,%.1f\n", r.lookups, r.hits, rate, r.errs, r.evicted, r.keysHeld, r.took.Seconds())
		return nil
	}
	fmt.Fprintf(stdout, "hit rate %.2f%% (%d of %d lookups after %d warm-up ops), %d errors, %d keys evicted, %d keys held, %.1fs\n",
		rate, r.hits, r.lookups, f.warmup, r.errs, r.evicted, r.keysHeld, r.took.Seconds())
	return nil
}

// trace is the run's key sequence, the same for a seed.
func (f *evictionFlags) trace() []uint32 {
	z := rand.NewZipf(rand.New(rand.NewPCG(f.seed, f.seed^0x5eed)), f.zipfS, 1, uint64(f.keys-1))
	out := make([]uint32, f.ops)
	for i := range out {
		out[i] = uint32(z.Uint64())
	}
	return out
}

func (f *evictionFlags) run(ctx context.Context) (evictionResult, error) {
	nodes := make([]*redis.Client, len(f.addrs))
	for i, a := range f.addrs {
		nodes[i] = redis.NewClient(&redis.Options{Addr: a})
		defer nodes[i].Close()
		if err := nodes[i].ConfigSet(ctx, "maxmemory", f.maxmemory).Err(); err != nil {
			return evictionResult{}, fmt.Errorf("%s: CONFIG SET maxmemory: %w", a, err)
		}
		if err := nodes[i].ConfigSet(ctx, "maxmemory-policy", f.policy).Err(); err != nil {
			return evictionResult{}, fmt.Errorf("%s: CONFIG SET maxmemory-policy: %w", a, err)
		}
	}
	before, err := sumInfo(ctx, nodes, "stats", "evicted_keys")
	if err != nil {
		return evictionResult{}, err
	}
	rdb := newBenchClient(f.addrs, f.cluster, f.clients)
	defer rdb.Close()
	trace := f.trace()
	value := strings.Repeat("v", f.valueSize)
	var r evictionResult
	var lookups, hits, errs atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for c := range f.clients {
		wg.Go(func() {
			for i := c; i < len(trace) && ctx.Err() == nil; i += f.clients {
				key := "cache:" + strconv.FormatUint(uint64(trace[i]), 10)
				hit, err := cacheAside(ctx, rdb, key, value)
				if err != nil {
					errs.Add(1)
					continue
				}
				if i >= f.warmup {
					lookups.Add(1)
					if hit {
						hits.Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	r.took = time.Since(start)
	if err := ctx.Err(); err != nil {
		return r, fmt.Errorf("trace: %w", err)
	}
	r.lookups, r.hits, r.errs = lookups.Load(), hits.Load(), errs.Load()
	after, err := sumInfo(ctx, nodes, "stats", "evicted_keys")
	if err != nil {
		return r, err
	}
	r.evicted = after - before
	r.keysHeld, err = dbsize(ctx, rdb, f.cluster)
	return r, err
}

// cacheAside is one operation: GET key, and SET it on a miss.
func cacheAside(ctx context.Context, rdb redis.UniversalClient, key, value string) (bool, error) {
	err := rdb.Get(ctx, key).Err()
	switch {
	case err == nil:
		return true, nil
	case !errors.Is(err, redis.Nil):
		return false, err
	}
	return false, rdb.Set(ctx, key, value, 0).Err()
}

// sumInfo is the sum over nodes of an integer INFO field.
func sumInfo(ctx context.Context, nodes []*redis.Client, section, field string) (int64, error) {
	var sum int64
	for _, n := range nodes {
		info, err := n.Info(ctx, section).Result()
		if err != nil {
			return 0, fmt.Errorf("INFO %s: %w", section, err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, field+":"); ok {
				x, _ := strconv.ParseInt(v, 10, 64)
				sum += x
			}
		}
	}
	return sum, nil
}

// dbsize is the keys held: DBSIZE, summed over the masters of a cluster.
func dbsize(ctx context.Context, rdb redis.UniversalClient, cluster bool) (int64, error) {
	cc, ok := rdb.(*redis.ClusterClient)
	if !cluster || !ok {
		return rdb.DBSize(ctx).Result()
	}
	var sum atomic.Int64
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		n, err := c.DBSize(ctx).Result()
		sum.Add(n)
		return err
	})
	return sum.Load(), err
}

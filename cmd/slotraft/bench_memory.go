package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// `slotraft bench memory` measures what a key costs a server: it reads every
// node's memory, loads exactly --keys distinct string keys, waits until every
// node holds them, and reads the memory again. Before each reading it sends
// MEMORY PURGE, which on slotraft runs a full garbage collection (so
// used_memory is the live heap, not live plus garbage) and on redis-server
// asks jemalloc to return dirty pages. scripts/bench-memory.sh runs it
// against slotraft and redis-server and compares.

// memoryCSVHeader names the columns of a memory row; one row per node, then
// a "mean" row over the nodes that hold keys.
const memoryCSVHeader = `"node","keys","heap_before","heap_after","rss_before","rss_after","heap_per_key","rss_per_key"`

// memoryChunk is the number of SETs in one pipeline.
const memoryChunk = 1000

type memoryFlags struct {
	benchCommon
	cluster   bool
	keys      int
	valueSize int
	clients   int
	settle    time.Duration
	expire    time.Duration
}

// runBenchMemory implements `slotraft bench memory`.
func runBenchMemory(args []string, stdout, stderr io.Writer) error {
	fs := newBenchFlagSet("memory", "Load exactly --keys string keys key:0… and report each node's memory per key (heap after a full GC, and RSS).", stderr)
	f := &memoryFlags{}
	f.register(fs, 10*time.Minute)
	fs.BoolVar(&f.cluster, "cluster", false, "the addresses are cluster nodes: route by slot (go-redis ClusterClient)")
	fs.IntVar(&f.keys, "keys", 1_000_000, "distinct keys to load")
	fs.IntVar(&f.valueSize, "value-size", 3, "bytes per value (not digits, so Redis cannot store it as an integer)")
	fs.IntVar(&f.clients, "clients", 8, "concurrent pipelines while loading")
	fs.DurationVar(&f.settle, "settle", time.Second, "how long every node's key count must stay unchanged before the second reading")
	fs.DurationVar(&f.expire, "expire", 0, "give every key this time to live (SET PX); 0: none. Keep it longer than the run")
	if err := parseBenchFlags(fs, &f.benchCommon, args, stderr); err != nil {
		return err
	}
	if f.keys < 1 || f.valueSize < 1 || f.clients < 1 || f.settle <= 0 || f.expire < 0 {
		fmt.Fprintln(stderr, "slotraft bench memory: --keys, --value-size, --clients and --settle must be positive, --expire not negative")
		return errUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	return f.run(ctx, stdout, stderr)
}

func (f *memoryFlags) run(ctx context.Context, stdout, stderr io.Writer) error {
	nodes := make([]*redis.Client, len(f.addrs))
	for i, a := range f.addrs {
		nodes[i] = redis.NewClient(&redis.Options{Addr: a, ReadTimeout: time.Minute})
		defer nodes[i].Close()
	}
	// Followers may still be applying what came before (a DEL of earlier
	// keys): the first reading waits for the counts to settle too.
	if err := waitSettled(ctx, nodes, f.settle); err != nil {
		return fmt.Errorf("wait for every node's keys to settle: %w", err)
	}
	before, err := readMemory(ctx, nodes)
	if err != nil {
		return fmt.Errorf("memory before the load: %w", err)
	}
	rdb := newBenchClient(f.addrs, f.cluster, f.clients)
	defer rdb.Close()
	start := time.Now()
	if err := loadKeys(ctx, rdb, f.keys, f.valueSize, f.clients, f.expire); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	fmt.Fprintf(stderr, "loaded %d keys in %.1fs\n", f.keys, time.Since(start).Seconds())
	if err := waitSettled(ctx, nodes, f.settle); err != nil {
		return fmt.Errorf("wait for every node to hold the keys: %w", err)
	}
	after, err := readMemory(ctx, nodes)
	if err != nil {
		return fmt.Errorf("memory after the load: %w", err)
	}
	return writeMemory(stdout, f.csv, f.addrs, before, after)
}

// memSample is one node's reading.
type memSample struct {
	heap, rss uint64 // INFO memory's used_memory and used_memory_rss
	keys      int64  // keys held: slotraft_keys_held, or DBSIZE on a server without it
}

// readMemory purges and reads every node.
func readMemory(ctx context.Context, nodes []*redis.Client) ([]memSample, error) {
	out := make([]memSample, len(nodes))
	for i, n := range nodes {
		// A server without MEMORY PURGE is read as it is.
		_ = n.Do(ctx, "memory", "purge").Err()
		s, err := readNode(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.Options().Addr, err)
		}
		out[i] = s
	}
	return out, nil
}

func readNode(ctx context.Context, n *redis.Client) (memSample, error) {
	info, err := n.Info(ctx, "memory").Result()
	if err != nil {
		return memSample{}, fmt.Errorf("INFO memory: %w", err)
	}
	f := infoFields(info)
	var s memSample
	if s.heap, err = strconv.ParseUint(f["used_memory"], 10, 64); err != nil {
		return s, fmt.Errorf("used_memory: %w", err)
	}
	if s.rss, err = strconv.ParseUint(f["used_memory_rss"], 10, 64); err != nil {
		return s, fmt.Errorf("used_memory_rss: %w", err)
	}
	if held, ok := f["slotraft_keys_held"]; ok {
		if s.keys, err = strconv.ParseInt(held, 10, 64); err != nil {
			return s, fmt.Errorf("slotraft_keys_held: %w", err)
		}
		return s, nil
	}
	if s.keys, err = n.DBSize(ctx).Result(); err != nil {
		return s, fmt.Errorf("DBSIZE: %w", err)
	}
	return s, nil
}

// infoFields parses INFO's "field:value" lines.
func infoFields(info string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.HasPrefix(k, "#") {
			out[k] = v
		}
	}
	return out
}

// loadKeys SETs key:0 … key:n-1 to valueSize bytes of 'x' (with a time to
// live of expire unless 0) in pipelines of memoryChunk, clients at a time. A
// chunk that fails (a leadership moving) is sent again: SET is idempotent.
func loadKeys(ctx context.Context, rdb redis.UniversalClient, n, valueSize, clients int, expire time.Duration) error {
	value := strings.Repeat("x", valueSize)
	var next atomic.Int64
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for {
				lo := int(next.Add(memoryChunk)) - memoryChunk
				if lo >= n || ctx.Err() != nil {
					return
				}
				if err := loadChunk(ctx, rdb, lo, min(lo+memoryChunk, n), value, expire); err != nil {
					mu.Lock()
					firstErr = cmp.Or(firstErr, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return cmp.Or(firstErr, ctx.Err())
}

func loadChunk(ctx context.Context, rdb redis.UniversalClient, lo, hi int, value string, expire time.Duration) error {
	var err error
	for attempt := 0; attempt < 10; attempt++ {
		_, err = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := lo; i < hi; i++ {
				p.Set(ctx, "key:"+strconv.Itoa(i), value, expire)
			}
			return nil
		})
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("keys %d-%d: %w", lo, hi-1, err)
	}
	return nil
}

// waitSettled polls every node's key count until none has changed for
// settle: followers apply a committed write within milliseconds, so a count
// that stands still for a second is every write this node will apply.
func waitSettled(ctx context.Context, nodes []*redis.Client, settle time.Duration) error {
	const poll = 100 * time.Millisecond
	last := make([]int64, len(nodes))
	stable := time.Duration(0)
	for stable < settle {
		changed := false
		for i, n := range nodes {
			s, err := readNode(ctx, n)
			if err != nil {
				return fmt.Errorf("%s: %w", n.Options().Addr, err)
			}
			changed = changed || s.keys != last[i]
			last[i] = s.keys
		}
		stable += poll
		if changed {
			stable = 0
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
	return nil
}

// writeMemory prints one row per node and the mean over the nodes that hold
// keys: (after − before) divided by the keys the node gained.
func writeMemory(w io.Writer, csv bool, addrs []string, before, after []memSample) error {
	if csv {
		fmt.Fprintln(w, memoryCSVHeader)
	}
	var heapSum, rssSum float64
	counted := 0
	for i, addr := range addrs {
		b, a := before[i], after[i]
		keys := a.keys - b.keys
		heap, rss := perKey(b.heap, a.heap, keys), perKey(b.rss, a.rss, keys)
		writeMemoryRow(w, csv, addr, keys, b, a, heap, rss)
		if keys > 0 {
			heapSum, rssSum, counted = heapSum+heap, rssSum+rss, counted+1
		}
	}
	if counted == 0 {
		return errors.New("no node gained keys")
	}
	heap, rss := heapSum/float64(counted), rssSum/float64(counted)
	if csv {
		fmt.Fprintf(w, "\"mean\",\"\",\"\",\"\",\"\",\"\",\"%.1f\",\"%.1f\"\n", heap, rss)
		return nil
	}
	fmt.Fprintf(w, "per key (mean of %d nodes): heap %.1f B, rss %.1f B\n", counted, heap, rss)
	return nil
}

func writeMemoryRow(w io.Writer, csv bool, addr string, keys int64, b, a memSample, heap, rss float64) {
	if csv {
		fmt.Fprintf(w, "%q,\"%d\",\"%d\",\"%d\",\"%d\",\"%d\",\"%.1f\",\"%.1f\"\n",
			addr, keys, b.heap, a.heap, b.rss, a.rss, heap, rss)
		return
	}
	const mb = 1 << 20
	fmt.Fprintf(w, "%-21s %9d keys  heap %8.1f -> %8.1f MiB (%6.1f B/key)  rss %8.1f -> %8.1f MiB (%6.1f B/key)\n",
		addr, keys, float64(b.heap)/mb, float64(a.heap)/mb, heap, float64(b.rss)/mb, float64(a.rss)/mb, rss)
}

// perKey is (after − before) / keys; 0 when the node gained no key.
func perKey(before, after uint64, keys int64) float64 {
	if keys <= 0 {
		return 0
	}
	return (float64(after) - float64(before)) / float64(keys)
}

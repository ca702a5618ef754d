package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/slots"
)

// slotRouter is the failover bench's cluster client: it sends a command to
// the master of its key's slot, follows MOVED, and after any other error
// reloads CLUSTER SLOTS from a node that answers. Unlike go-redis's
// ClusterClient it never avoids a node for seconds after errors or retries
// with backoff, so the time it measures is the cluster's, not the client's.
type slotRouter struct {
	opTimeout time.Duration
	pool      int

	mu       sync.Mutex
	known    []string // every node address seen, seeds first
	masters  [slots.Count]string
	ranges   []slotRange
	clients  map[string]*redis.Client
	next     int       // round-robin start for CLUSTER SLOTS
	reloaded time.Time // last successful reload
}

// slotRange is one CLUSTER SLOTS entry: a range and its master.
type slotRange struct {
	start, end int
	master     string
}

// errNoMaster: the last CLUSTER SLOTS listed no master for the slot (a
// slotraft group without a leader is left out until it elects one).
var errNoMaster = errors.New("CLUSTER SLOTS lists no master for slot")

// routerReloadGap bounds how often failing commands reload CLUSTER SLOTS.
const routerReloadGap = 20 * time.Millisecond

// routerMaxHops bounds the MOVED redirects one command follows.
const routerMaxHops = 5

func newSlotRouter(seeds []string, opTimeout time.Duration, pool int) *slotRouter {
	return &slotRouter{
		opTimeout: opTimeout, pool: pool,
		known: append([]string(nil), seeds...), clients: map[string]*redis.Client{},
	}
}

func (r *slotRouter) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.clients {
		_ = c.Close()
	}
	r.clients = map[string]*redis.Client{}
}

// client returns the connection pool to addr. Each command is tried once.
func (r *slotRouter) client(addr string) *redis.Client {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.clients[addr]
	if !ok {
		c = redis.NewClient(&redis.Options{
			Addr: addr, PoolSize: r.pool, MaxRetries: -1, Protocol: 2, DisableIdentity: true,
			// One dial per attempt: a dead node must fail fast, not after
			// go-redis's default five dials 100 ms apart.
			DialerRetries: 1, DialerRetryTimeout: time.Millisecond,
			DialTimeout: r.opTimeout, ReadTimeout: r.opTimeout, WriteTimeout: r.opTimeout,
		})
		r.clients[addr] = c
	}
	return c
}

// reload reads CLUSTER SLOTS from the first known node that answers.
func (r *slotRouter) reload(ctx context.Context) error {
	r.mu.Lock()
	known := append([]string(nil), r.known...)
	start := r.next
	r.next++
	r.mu.Unlock()
	var errs []error
	for i := range known {
		addr := known[(start+i)%len(known)]
		c, cancel := context.WithTimeout(ctx, r.opTimeout)
		// CLUSTER SLOTS, not SHARDS: it is what Redis Cluster clients route by.
		cmd := redis.NewClusterSlotsCmd(c, "cluster", "slots")
		_ = r.client(addr).Process(c, cmd)
		entries, err := cmd.Result()
		cancel()
		if err == nil {
			err = r.install(entries)
		}
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
	}
	return fmt.Errorf("CLUSTER SLOTS: %w", errors.Join(errs...))
}

// install replaces the slot map with a CLUSTER SLOTS reply.
func (r *slotRouter) install(entries []redis.ClusterSlot) error {
	var masters [slots.Count]string
	var ranges []slotRange
	var addrs []string
	for _, e := range entries {
		if len(e.Nodes) == 0 || e.Start < 0 || e.End >= slots.Count || e.Start > e.End {
			return fmt.Errorf("bad CLUSTER SLOTS entry %+v", e)
		}
		for s := e.Start; s <= e.End; s++ {
			masters[s] = e.Nodes[0].Addr
		}
		ranges = append(ranges, slotRange{start: e.Start, end: e.End, master: e.Nodes[0].Addr})
		for _, n := range e.Nodes {
			addrs = append(addrs, n.Addr)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.masters, r.ranges, r.reloaded = masters, ranges, time.Now()
	for _, a := range addrs {
		if !contains(r.known, a) {
			r.known = append(r.known, a)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// slotRanges returns the current map's ranges.
func (r *slotRouter) slotRanges() []slotRange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]slotRange(nil), r.ranges...)
}

func (r *slotRouter) master(slot uint16) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.masters[slot]
}

func (r *slotRouter) setMaster(slot uint16, addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.masters[slot] = addr
	if !contains(r.known, addr) {
		r.known = append(r.known, addr)
	}
}

// do runs one keyed command (args[1] is the key) on its slot's master,
// following MOVED. Any other error reloads the map (at most once per
// routerReloadGap) and is returned: the caller decides whether to retry.
func (r *slotRouter) do(ctx context.Context, args ...any) error {
	key, _ := args[1].(string)
	slot := slots.Of([]byte(key))
	addr := r.master(slot)
	for hop := 0; ; hop++ {
		if addr == "" {
			r.maybeReload(ctx)
			return fmt.Errorf("%w %d", errNoMaster, slot)
		}
		c, cancel := context.WithTimeout(ctx, r.opTimeout)
		err := r.client(addr).Do(c, args...).Err()
		cancel()
		if err == nil {
			return nil
		}
		to, moved := movedTo(err)
		if !moved || hop >= routerMaxHops {
			r.maybeReload(ctx)
			return fmt.Errorf("%s: %w", addr, err)
		}
		r.setMaster(slot, to)
		addr = to
	}
}

func (r *slotRouter) maybeReload(ctx context.Context) {
	r.mu.Lock()
	recent := time.Since(r.reloaded) < routerReloadGap
	r.mu.Unlock()
	if !recent {
		_ = r.reload(ctx)
	}
}

// movedTo returns the address of a MOVED redirect.
func movedTo(err error) (string, bool) {
	addr, ok := redis.IsMovedError(err)
	return addr, ok && addr != ""
}

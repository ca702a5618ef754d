package cluster

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/store"
)

// maxmemory and eviction. maxmemory is a per-node limit, as in Redis
// Cluster, on the node's dataset: the estimated bytes of every group it
// hosts (fsm.State.DataBytes), leaders and followers alike, since a
// replica holds the data too. Over the limit, the node evicts from the
// groups it leads: each leader chooses victims from its own access
// metadata (store/evict.go) and proposes their deletion through the log
// (fsm.EntryEvict), so replicas never evict on their own. Each led group
// gives up its share of the excess, in proportion to its size, so that
// when every node of a symmetric cluster is over the limit together they
// free the excess once between them, not once each.

const (
	evictEvery    = 100 * time.Millisecond // how often an idle evictor looks
	evictTimeout  = 5 * time.Second
	evictMinQuota = 1 // bytes: a group over its share gives at least a key
)

// EvictionConfig is the node's maxmemory setting.
type EvictionConfig struct {
	MaxMemory int64             // bytes; 0: no limit
	Policy    store.EvictPolicy // maxmemory-policy
	Samples   int               // maxmemory-samples
	Tenacity  int               // maxmemory-eviction-tenacity, 0-100
	Access    store.AccessParams
}

// evictor is the node's eviction state.
type evictor struct {
	cfg     atomic.Pointer[EvictionConfig]
	access  atomic.Pointer[fsm.AccessSettings]
	wake    chan struct{}
	evicted atomic.Int64 // keys evicted by this node's proposals
	// failing: the last pass was over the limit and found nothing to
	// evict (Redis's EVICT_FAIL): writes that grow memory get -OOM.
	failing atomic.Bool
	// overSince is when the node went over the limit (unix ns, 0: not
	// over); overTotal the time spent over it before (ns), as INFO's
	// current_ and total_eviction_exceeded_time.
	overSince atomic.Int64
	overTotal atomic.Int64
}

func newEvictor() *evictor {
	e := &evictor{wake: make(chan struct{}, 1)}
	e.cfg.Store(&EvictionConfig{Samples: 5, Tenacity: 10, Access: store.DefaultAccess})
	e.access.Store(&fsm.AccessSettings{Params: store.DefaultAccess})
	return e
}

// SetEviction sets this node's maxmemory, policy and LFU settings.
func (n *Node) SetEviction(c EvictionConfig) {
	c.Samples = max(c.Samples, 1)
	n.evict.cfg.Store(&c)
	n.evict.access.Store(&fsm.AccessSettings{Params: c.Access, LFU: c.Policy.LFU()})
	n.evict.failing.Store(false)
	n.wakeEvictor()
}

// Eviction is this node's maxmemory setting.
func (n *Node) Eviction() EvictionConfig { return *n.evict.cfg.Load() }

// accessSettings is the group FSMs' access hook (fsm.SetAccessHook).
func (n *Node) accessSettings() *fsm.AccessSettings { return n.evict.access.Load() }

// DataBytes is the estimated size of the data of every group hosted here.
func (n *Node) DataBytes() int64 {
	var sum int64
	for _, g := range n.state().groups {
		if g.Local() {
			sum += g.fsm.State().DataBytes()
		}
	}
	return sum
}

// OutOfMemory reports whether a write that may grow memory must be
// refused with -OOM: the node is over maxmemory and either the policy is
// noeviction or the last pass found nothing to evict. Over the limit with
// victims to evict, writes go on while the evictor works (Redis's
// EVICT_RUNNING).
func (n *Node) OutOfMemory() bool {
	c := n.evict.cfg.Load()
	if c.MaxMemory == 0 || n.DataBytes() <= c.MaxMemory {
		return false
	}
	n.wakeEvictor()
	return c.Policy == store.NoEviction || n.evict.failing.Load()
}

// EvictionStats are INFO's eviction counters.
type EvictionStats struct {
	EvictedKeys  int64
	OverNow      time.Duration // current_eviction_exceeded_time
	OverTotal    time.Duration // total_eviction_exceeded_time
	EvictionBusy bool          // over the limit right now
}

// EvictionStats returns this node's eviction counters.
func (n *Node) EvictionStats() EvictionStats {
	st := EvictionStats{EvictedKeys: n.evict.evicted.Load(), OverTotal: time.Duration(n.evict.overTotal.Load())}
	if since := n.evict.overSince.Load(); since != 0 {
		st.OverNow = time.Duration(time.Now().UnixNano() - since)
		st.OverTotal += st.OverNow
		st.EvictionBusy = true
	}
	return st
}

// ResetEvictionStats zeroes the counters (CONFIG RESETSTAT).
func (n *Node) ResetEvictionStats() {
	n.evict.evicted.Store(0)
	n.evict.overTotal.Store(0)
	if n.evict.overSince.Load() != 0 {
		n.evict.overSince.Store(time.Now().UnixNano())
	}
}

func (n *Node) wakeEvictor() {
	select {
	case n.evict.wake <- struct{}{}:
	default:
	}
}

// evictLoop runs passes while the node is over its limit, and looks again
// every evictEvery or when a write finds it over.
func (n *Node) evictLoop() {
	t := time.NewTicker(evictEvery)
	defer t.Stop()
	pools := map[uint32]*store.EvictPool{}
	rnd := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	var lastPolicy store.EvictPolicy
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		case <-n.evict.wake:
		}
		if c := n.evict.cfg.Load(); c.Policy != lastPolicy {
			clear(pools) // scores of another policy
			lastPolicy = c.Policy
		}
		for n.evictPass(pools, rnd) && n.ctx.Err() == nil {
		}
	}
}

// evictPass evicts once from every led group its share of the excess; it
// reports whether the node is still over the limit and freed something,
// so that another pass should follow at once.
func (n *Node) evictPass(pools map[uint32]*store.EvictPool, rnd *rand.Rand) bool {
	c := n.evict.cfg.Load()
	used := n.DataBytes()
	if !n.noteOver(c.MaxMemory > 0 && used > c.MaxMemory) {
		n.evict.failing.Store(false)
		return false
	}
	if c.Policy == store.NoEviction {
		return false
	}
	excess := used - c.MaxMemory
	freed, evicted := int64(0), 0
	for _, g := range n.state().groups {
		if !g.IsLeader() {
			continue
		}
		size := g.fsm.State().DataBytes()
		if size == 0 {
			continue
		}
		quota := max(excess*size/used, evictMinQuota)
		f, k := n.evictGroup(g, c, quota, pools, rnd)
		freed, evicted = freed+f, evicted+k
	}
	n.evict.failing.Store(evicted == 0)
	return evicted > 0 && freed > 0
}

// noteOver keeps the time spent over the limit; it returns over.
func (n *Node) noteOver(over bool) bool {
	since := n.evict.overSince.Load()
	switch {
	case over && since == 0:
		n.evict.overSince.Store(time.Now().UnixNano())
	case !over && since != 0:
		n.evict.overTotal.Add(time.Now().UnixNano() - since)
		n.evict.overSince.Store(0)
	}
	return over
}

// evictGroup chooses victims in g worth quota bytes (evictBatch at most)
// and proposes their eviction; it returns the bytes and keys evicted.
func (n *Node) evictGroup(g *Group, c *EvictionConfig, quota int64,
	pools map[uint32]*store.EvictPool, rnd *rand.Rand) (int64, int) {
	pool := pools[g.id]
	if pool == nil {
		pool = &store.EvictPool{}
		pools[g.id] = pool
	}
	ops, sizes := chooseVictims(g.fsm.State(), c, quota, pool, rnd)
	if len(ops) == 0 {
		return 0, 0
	}
	ctx, cancel := context.WithTimeout(n.ctx, evictTimeout)
	defer cancel()
	out, err := g.proposeSpecial(ctx, &fsm.Entry{Type: fsm.EntryEvict, Cmds: ops})
	if err != nil {
		g.log.Debug("eviction not proposed", "keys", len(ops), "err", err)
		return 0, 0
	}
	var freed int64
	evicted := 0
	for i, o := range out {
		if fsm.Evicted([]fsm.Outcome{o}) == 1 {
			freed += sizes[i]
			evicted++
		}
	}
	n.evict.evicted.Add(int64(evicted))
	return freed, evicted
}

// evictBatch is how many victims one proposal may carry: more as
// maxmemory-eviction-tenacity grows (Redis lets it lengthen each eviction
// cycle), from 16 at 0 to 256 at the default 10 and 2560 at 100.
func evictBatch(tenacity int) int { return max(16, 256*min(max(tenacity, 0), 100)/10) }

// chooseVictims picks keys of st by the policy until their bytes reach
// quota: from the pool that sampling feeds (LRU, LFU, TTL policies) or
// at random. A key is chosen once per batch.
func chooseVictims(st fsm.Reader, c *EvictionConfig, quota int64, pool *store.EvictPool,
	rnd *rand.Rand) (ops [][][]byte, sizes []int64) {
	es := store.EvictSampling{Policy: c.Policy, Samples: c.Samples, Now: time.Now().UnixMilli(), Access: c.Access}
	chosen := map[string]bool{}
	var sum int64
	st.View(func(s store.Reader) {
		batch := evictBatch(c.Tenacity)
		for tries := 0; sum < quota && len(ops) < batch && tries < 4*batch; tries++ {
			var cand store.Candidate
			var size int64
			var ok bool
			if c.Policy.Random() {
				cand, size, ok = s.RandomVictim(c.Policy, rnd)
			} else if s.Populate(pool, es, rnd) > 0 {
				cand, size, ok = s.PopBest(pool)
			}
			if !ok {
				return
			}
			if chosen[string(cand.Key)] {
				continue
			}
			chosen[string(cand.Key)] = true
			ops = append(ops, fsm.EvictOp(cand.Key, cand.Version))
			sizes = append(sizes, size)
			sum += size
		}
	})
	return ops, sizes
}

package fsm

import "github.com/slotraft/slotraft/store"

// What Redis 7.2 frees in the background (INFO's lazyfreed_objects), by
// how the values left: a value whose free effort passes
// store.LazyFreeThreshold, or every key of a flush. Which kinds count
// depends on the node's lazyfree-lazy-* settings, so the state machine
// reports each kind apart and the node adds up those its settings make
// lazy. In slotraft no deletion walks a value (the Go collector reclaims
// it concurrently), so these count what Redis would have freed lazily.

// Freed counts, per kind, the values an entry freed that Redis would free
// in the background when that kind is lazy.
type Freed struct {
	Unlink       int // UNLINK: always lazy
	Del          int // DEL: lazyfree-lazy-user-del
	Expire       int // expired keys deleted: lazyfree-lazy-expire
	Evict        int // evicted keys: lazyfree-lazy-eviction
	FlushAsync   int // keys of FLUSHALL/FLUSHDB ASYNC: always lazy
	FlushDefault int // keys of FLUSHALL/FLUSHDB without SYNC/ASYNC: lazyfree-lazy-user-flush
}

// IsZero says whether nothing was freed.
func (f Freed) IsZero() bool { return f == Freed{} }

// Add adds g's counts to f.
func (f *Freed) Add(g Freed) {
	f.Unlink += g.Unlink
	f.Del += g.Del
	f.Expire += g.Expire
	f.Evict += g.Evict
	f.FlushAsync += g.FlushAsync
	f.FlushDefault += g.FlushDefault
}

// counting says whether this entry's counters are collected (the leader's).
func (c *Ctx) counting() bool { return c.notifyOn&NotifyCount != 0 }

// freeing counts o in *kind when Redis would free it in the background.
func (c *Ctx) freeing(kind *int, o *store.Object) {
	if c.counting() && store.FreeEffort(o) > store.LazyFreeThreshold {
		*kind++
	}
}

package cluster

import (
	"sync/atomic"

	"github.com/slotraft/slotraft/fsm"
)

// INFO's lazyfreed_objects: of what the entries applied by the groups led
// here freed (fsm.Freed), the kinds Redis 7.2 frees in the background
// with this node's lazyfree-lazy-* settings at that moment. UNLINK and
// FLUSHALL/FLUSHDB ASYNC always count.

// LazyFree are the lazyfree-lazy-* settings that make a kind lazy.
type LazyFree struct {
	UserDel, UserFlush, Expire, Evict bool
}

type lazyFreeStats struct {
	cfg   atomic.Pointer[LazyFree]
	freed atomic.Int64
}

// lazy is how many of f's values the settings make lazy.
func (c LazyFree) lazy(f fsm.Freed) int {
	n := f.Unlink + f.FlushAsync
	for _, k := range []struct {
		on    bool
		count int
	}{{c.UserDel, f.Del}, {c.UserFlush, f.FlushDefault}, {c.Expire, f.Expire}, {c.Evict, f.Evict}} {
		if k.on {
			n += k.count
		}
	}
	return n
}

func (s *lazyFreeStats) add(f fsm.Freed) {
	var c LazyFree
	if p := s.cfg.Load(); p != nil {
		c = *p
	}
	s.freed.Add(int64(c.lazy(f)))
}

// SetLazyFree sets the lazyfree-lazy-* settings counted from now on.
func (n *Node) SetLazyFree(c LazyFree) { n.lazyfree.cfg.Store(&c) }

// LazyFreed is INFO's lazyfreed_objects: the values freed by the groups
// led here that Redis would have freed in the background, since the start
// or the last ResetLazyFreed.
func (n *Node) LazyFreed() int64 { return n.lazyfree.freed.Load() }

// ResetLazyFreed zeroes it (CONFIG RESETSTAT).
func (n *Node) ResetLazyFreed() { n.lazyfree.freed.Store(0) }

package fsm

import (
	"fmt"

	"github.com/slotraft/slotraft/store"
)

// Cut is a point-in-time copy of a group's keys, taken in O(1)
// (copy-on-write) under the state's lock, so that it is the state at one
// applied log index: the same on every replica of the group. A backup
// reads it key by key while the group goes on (cluster/server/backup.go).
type Cut struct {
	it  *store.ViewIter
	len int
}

// Cut takes a point-in-time copy of the keys.
func (s *State) Cut() *Cut {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.store.Snapshot()
	return &Cut{it: v.Iter(), len: v.Len()}
}

// Len is the number of keys in the cut, expired ones included.
func (c *Cut) Len() int { return c.len }

// Next hands up to n keys to fn, in the cut's order, each with its
// deadline (Unix ms, 0 for none) and its value as a DUMP payload; keys
// expired at now are skipped. It reports whether keys remain.
func (c *Cut) Next(n int, now int64, fn func(key []byte, expireAt int64, payload []byte) error) (bool, error) {
	var err error
	more := c.it.Next(n, func(key []byte, o *store.Object) {
		if err != nil || (o.ExpireAt > 0 && o.ExpireAt <= now) {
			return
		}
		v, ok := dumpValue(o)
		if !ok {
			err = fmt.Errorf("key %q: a %s value cannot be dumped", key, o.Type)
			return
		}
		err = fn(key, o.ExpireAt, rdbDump(v))
	})
	return more && err == nil, err
}

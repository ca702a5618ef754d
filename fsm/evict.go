package fsm

import (
	"encoding/binary"

	"github.com/slotraft/slotraft/resp"
)

// Eviction under maxmemory: the group's leader chooses victims from its
// own access metadata (store/evict.go) and proposes their deletion as an
// EntryEvict, so every replica deletes the same keys at the same log
// position and none evicts on its own.

// EvictOp is one victim of an EntryEvict: its key and the version it was
// chosen at.
func EvictOp(key []byte, version uint64) [][]byte {
	return [][]byte{key, binary.BigEndian.AppendUint64(nil, version)}
}

// evict deletes each victim that still has the version it was chosen at
// (a key written since was just accessed, and stays), with an "evicted"
// event each when collected; one reply per op: 1 evicted, 0 not.
func (s *State) evict(now int64, ops [][][]byte) ([]Outcome, *Ctx) {
	c := &Ctx{Store: s.store, Now: now, notifyOn: s.collected(), trackOn: s.tracking(), pos: noPos}
	out := make([]Outcome, len(ops))
	for i, op := range ops {
		out[i] = Replied(zero)
		if len(op) != 2 || len(op[1]) != 8 {
			out[i] = Replied(errf("ERR bad evict op"))
			continue
		}
		o := s.store.GetRaw(op[0])
		if o == nil || o.Version != binary.BigEndian.Uint64(op[1]) {
			continue
		}
		s.store.Delete(op[0])
		c.freeing(&c.Freed.Evict, o)
		c.modified(op[0])
		c.notify(NotifyEvicted, "evicted", op[0])
		out[i] = Replied(one)
	}
	return out, c
}

// Evicted counts the keys an EntryEvict's outcomes say were evicted.
func Evicted(out []Outcome) int {
	n := 0
	for _, o := range out {
		if o.Reply.Kind == resp.KindInt && o.Reply.Int == 1 {
			n++
		}
	}
	return n
}

package store

import (
	"bytes"

	"github.com/tidwall/btree"
)

// entry is one key in the key tree. The key and the Object are shared with
// snapshot Views and never modified.
type entry struct {
	cur uint64 // slot<<48 | hash48(key)
	key []byte
	obj *Object
}

func entryLess(a, b entry) bool {
	if a.cur != b.cur {
		return a.cur < b.cur
	}
	return bytes.Compare(a.key, b.key) < 0
}

// treeOptions: no internal locks — the fsm's RWMutex serialises the live
// tree, and a View's tree is only read.
var treeOptions = btree.Options{NoLocks: true}

func newKeyTree() *btree.BTreeG[entry] {
	return btree.NewBTreeGOptions(entryLess, treeOptions)
}

// Store is the keyspace of one slot group. It is not safe for concurrent
// use; see the package documentation.
type Store struct {
	keys    *btree.BTreeG[entry]
	expires *btree.BTreeG[expiry]
	counts  *[slotCount]int32
	// gen grows with every Snapshot: an Object stored in an earlier
	// generation may be shared with a View and must be cloned before it is
	// changed in place (Mutable).
	gen uint64
	// dels counts deletions per slot, for WATCH on absent keys (watch.go).
	dels delCounts
}

// New returns an empty Store.
func New() *Store {
	return &Store{
		keys:    newKeyTree(),
		expires: newExpiryTree(),
		counts:  new([slotCount]int32),
		gen:     1,
	}
}

// Mutable returns key's Object for changing its collection in place, or nil
// if the key is absent or expired at now. If the stored Object may be
// shared with a snapshot View, it is first replaced by a copy whose
// collection is Cloned (cheap: collections share structure), so the View
// keeps its point in time. Change ExpireAt only through Put.
func (s *Store) Mutable(key []byte, now int64) *Object {
	e, ok := s.keys.Get(probe(key))
	if !ok || e.obj.ExpiredAt(now) {
		return nil
	}
	if e.obj.gen == s.gen {
		return e.obj
	}
	o := *e.obj
	if o.Coll != nil {
		o.Coll = o.Coll.Clone()
	}
	o.gen = s.gen
	e.obj = &o
	s.keys.Set(e) // same key and deadline: the expiry index is unchanged
	return e.obj
}

func probe(key []byte) entry {
	return entry{cur: cursorOf(key), key: key}
}

// Get returns key's Object, or nil if it is absent or expired at now
// (Object.ExpiredAt).
func (s *Store) Get(key []byte, now int64) *Object {
	o := s.GetRaw(key)
	if o == nil || o.ExpiredAt(now) {
		return nil
	}
	return o
}

// GetRaw returns key's Object even if it has expired but was not deleted yet;
// nil if absent.
func (s *Store) GetRaw(key []byte) *Object {
	e, ok := s.keys.Get(probe(key))
	if !ok {
		return nil
	}
	return e.obj
}

// Put inserts or replaces key's Object and keeps the slot counts and the
// expiry index up to date. The key is copied; o is stored as is and must not
// be modified afterwards. Put(key, nil) is Delete(key).
func (s *Store) Put(key []byte, o *Object) {
	if o == nil {
		s.Delete(key)
		return
	}
	key = bytes.Clone(key) // one tree search beats Get+Set without the copy
	if key == nil {
		key = []byte{}
	}
	if o.gen == 0 {
		o.gen = s.gen // a new Object: no View has it yet
	}
	e := entry{cur: cursorOf(key), key: key, obj: o}
	old, ok := s.keys.Set(e)
	if !ok {
		s.counts[CursorSlot(e.cur)]++
	} else if old.obj.ExpireAt != o.ExpireAt {
		s.unindexExpiry(old.key, old.obj)
	}
	// Same deadline: Set replaces the index entry's key with the new copy.
	s.indexExpiry(e.key, o)
}

// Delete removes key; it reports whether something (even an expired key) was
// removed.
func (s *Store) Delete(key []byte) bool {
	old, ok := s.keys.Delete(probe(key))
	if !ok {
		return false
	}
	s.counts[CursorSlot(old.cur)]--
	s.unindexExpiry(old.key, old.obj)
	s.noteDelete(CursorSlot(old.cur)) // WATCH (watch.go)
	return true
}

// Len returns the number of stored keys, expired-but-not-deleted included
// (like DBSIZE).
func (s *Store) Len() int {
	return s.keys.Len()
}

// Flush removes every key. Views taken before are not affected.
func (s *Store) Flush() {
	gen, counts, dels := s.gen, s.counts, s.dels
	*s = *New()
	s.gen, s.dels = gen, dels
	s.noteFlush(counts) // WATCH (watch.go)
}

// CountInSlot returns the number of keys stored in slot (expired ones
// included) in O(1).
func (s *Store) CountInSlot(slot uint16) int {
	if int(slot) >= slotCount {
		return 0
	}
	return int(s.counts[slot])
}

// KeysInSlot returns up to count keys of slot in cursor order, expired ones
// included (like CLUSTER GETKEYSINSLOT). The slices are shared: do not
// modify them.
func (s *Store) KeysInSlot(slot uint16, count int) [][]byte {
	if count <= 0 || s.CountInSlot(slot) == 0 {
		return nil
	}
	keys := make([][]byte, 0, min(count, s.CountInSlot(slot)))
	s.keys.Ascend(entry{cur: SlotCursor(slot)}, func(e entry) bool {
		if CursorSlot(e.cur) != slot {
			return false
		}
		keys = append(keys, e.key)
		return len(keys) < count
	})
	return keys
}

// Ascend calls fn for every key in cursor order, expired ones included,
// until fn returns false.
func (s *Store) Ascend(fn func(key []byte, o *Object) bool) {
	s.keys.Scan(func(e entry) bool { return fn(e.key, e.obj) })
}

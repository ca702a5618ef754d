package store

import (
	"github.com/tidwall/btree"
)

// treeOptions: no internal locks — the fsm's RWMutex serialises the live
// tree, and a View's tree is only read. Degree 32 (nodes of up to 63
// entries): BenchmarkStoreMemoryPerKey measured 101, 90, 87 and 86 B/key at
// degrees 16, 32, 64 and 128; a larger node saves little and costs more to
// copy on the first write after a Snapshot.
var treeOptions = btree.Options{NoLocks: true, Degree: 32}

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
	// bytes is the dataset's estimated size (dataset.go).
	bytes int64
	// limits are the encoding thresholds its collections follow (limits.go).
	limits Limits
}

// New returns an empty Store.
func New() *Store {
	return &Store{
		keys:    newKeyTree(),
		expires: newExpiryTree(),
		counts:  new([slotCount]int32),
		gen:     1,
		limits:  DefaultLimits(),
	}
}

// Mutable returns key's Object for changing its collection in place, or nil
// if the key is absent or expired at now. If the stored Object may be
// shared with a snapshot View, it is first replaced by a copy whose
// collection is Cloned (cheap: collections share structure), so the View
// keeps its point in time. An inline string (entry.go) gets an Object of
// its own, so that the contract holds for strings too. Change ExpireAt only
// through Put.
func (s *Store) Mutable(key []byte, now int64) *Object {
	e, ok := s.find(key)
	if !ok || e.r.expiredAt(now) {
		return nil
	}
	if !e.r.inline() && e.r.obj.gen == s.gen {
		s.stamp(e.r.obj)
		return e.r.obj
	}
	o := *e.r.object()
	if o.Coll != nil {
		o.Coll = o.Coll.Clone()
	}
	o.gen = s.gen
	if e.r.inline() {
		o.mem = valueBytes(&o, DefaultUsageSamples)
	}
	// A new record: the old one may be shared with a View. Same key and
	// deadline: the expiry index only takes the new record.
	r := &record{key: e.r.keyBytes(), obj: &o}
	r.access.Store(e.r.access.Load())
	s.keys.Set(entry{cur: e.cur, r: r})
	s.indexExpiry(r)
	s.bytes += r.memBytes() - e.r.memBytes()
	s.stamp(&o)
	return &o
}

// Get returns key's Object, or nil if it is absent or expired at now
// (Object.ExpiredAt). For an inline string it is a new Object on every call.
func (s *Store) Get(key []byte, now int64) *Object {
	o := s.GetRaw(key)
	if o == nil || o.ExpiredAt(now) {
		return nil
	}
	return o
}

// GetString is Get for a caller that wants a string value: val is the
// live string at key, or typ is the type of the live key that is not a
// string; found is false if there is no live key. An inline string is read
// in place (no Object is made), which is what GET and MGET need. A live
// key's access is recorded if p is not nil (Lookup).
func (s *Store) GetString(key []byte, now int64, p *AccessParams) (val []byte, typ Type, found bool) {
	e, ok := s.find(key)
	if !ok || e.r.expiredAt(now) {
		return nil, 0, false
	}
	r := e.r
	if p != nil {
		r.touch(now, *p)
	}
	if r.inline() {
		end := r.valueEnd()
		return r.key[len(r.key):end:end], TypeString, true
	}
	return r.obj.Str, r.obj.Type, true
}

// ExpiringLen is the number of keys with a deadline (expired ones not yet
// deleted included), from the expiry index.
func (s *Store) ExpiringLen() int { return s.expires.Len() }

// CopiesString reports whether Put copies a string value of n bytes (it is
// stored inline), so the caller need not copy it first.
func CopiesString(n int) bool { return n <= inlineMax }

// GetRaw returns key's Object even if it has expired but was not deleted yet;
// nil if absent.
func (s *Store) GetRaw(key []byte) *Object {
	e, ok := s.find(key)
	if !ok {
		return nil
	}
	return e.r.object()
}

// Put inserts or replaces key's Object and keeps the slot counts and the
// expiry index up to date. The key is copied. A small string is copied too
// (stored inline, entry.go) and o is not kept; otherwise o is stored as is
// and must not be modified afterwards.
// Put(key, nil) is Delete(key).
func (s *Store) Put(key []byte, o *Object) {
	if o == nil {
		s.Delete(key)
		return
	}
	if o.gen == 0 {
		o.gen = s.gen // a new Object: no View has it yet
	}
	s.stamp(o)
	estimate(o)
	e := entry{cur: cursorOf(key), r: newRecord(key, o)}
	s.bytes += e.r.memBytes()
	old, ok := s.keys.Set(e)
	if ok {
		e.r.carryAccess(old.r, o.Touched)
		s.bytes -= old.r.memBytes()
	}
	if !ok {
		s.counts[CursorSlot(e.cur)]++
	} else if old.r.expireAt() != o.ExpireAt {
		s.unindexExpiry(old.r)
	}
	// Same deadline: Set replaces the index entry's record with the new one.
	s.indexExpiry(e.r)
}

// Delete removes key; it reports whether something (even an expired key) was
// removed.
func (s *Store) Delete(key []byte) bool {
	e, ok := s.find(key)
	if !ok {
		return false
	}
	s.keys.Delete(e)
	s.bytes -= e.r.memBytes()
	s.counts[CursorSlot(e.cur)]--
	s.unindexExpiry(e.r)
	s.noteDelete(CursorSlot(e.cur)) // WATCH (watch.go)
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
		keys = append(keys, e.r.keyBytes())
		return len(keys) < count
	})
	return keys
}

// Ascend calls fn for every key in cursor order, expired ones included,
// until fn returns false. fn must not keep o after it returns: an inline
// string's Object is a scratch one, reused for the next key.
func (s *Store) Ascend(fn func(key []byte, o *Object) bool) {
	var scratch Object
	s.keys.Scan(func(e entry) bool { return fn(e.r.keyBytes(), e.r.visit(&scratch)) })
}

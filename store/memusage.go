package store

import "unsafe"

// MEMORY USAGE for slotraft's own layout. Redis sums its allocator's sizes
// of the key, the dict entry and the value's encoding; those numbers do not
// exist here, so this is an estimate of what a key costs this store: the
// key's record and its index entry, the Object of a value that is not
// inline, and for a collection its elements' bytes plus a fixed overhead
// per element for the slices and tree nodes that hold them. Like Redis's
// objectComputeSize, a collection's elements are sampled and the average
// applied to all of them.

// Per-element overheads: slice headers and a share of the btree node each
// element sits in (degree-32 nodes: about 1.5 pointers per item).
const (
	sliceHeader  = int64(unsafe.Sizeof([]byte(nil)))
	treeSlot     = 12
	entryBytes   = int64(unsafe.Sizeof(entry{})) + treeSlot
	recordBytes  = int64(unsafe.Sizeof(record{}))
	objectBytes  = int64(unsafe.Sizeof(Object{}))
	listElemOver = sliceHeader
	pairOver     = 2*sliceHeader + treeSlot
	memberOver   = sliceHeader + treeSlot
	zsetOver     = int64(unsafe.Sizeof("")) + 8 + 2*treeSlot // member, score, two indexes
	streamOver   = int64(unsafe.Sizeof(StreamEntry{})) + treeSlot
)

// IndexEntryBytes is what the key index pays per key beyond the key's
// bytes (MEMORY STATS' overhead.hashtable.* for slotraft's btree).
const IndexEntryBytes = entryBytes + recordBytes

// DefaultUsageSamples is MEMORY USAGE's default SAMPLES.
const DefaultUsageSamples = 5

// MemoryUsage is the estimated bytes of the live key, its value included,
// with at most samples elements of a collection looked at (samples <= 0:
// all); false if there is no live key.
func (s *Store) MemoryUsage(key []byte, now int64, samples int) (int64, bool) {
	e, ok := s.find(key)
	if !ok {
		return 0, false
	}
	r := e.r
	n := entryBytes + recordBytes + int64(cap(r.key))
	if r.inline() {
		if DeadlinePassed(r.expireAt(), now) {
			return 0, false
		}
		return n, true // the value and any deadline share the key's array
	}
	o := r.obj
	if o.ExpiredAt(now) {
		return 0, false
	}
	return n + objectBytes + valueBytes(o, samples), true
}

// valueBytes estimates the bytes of o's value.
func valueBytes(o *Object, samples int) int64 {
	if o.Type == TypeString {
		return int64(cap(o.Str))
	}
	var sampler usageSampler
	sampler.limit = samples
	switch c := o.Coll.(type) {
	case *List:
		c.Range(0, -1, func(v []byte) bool { return sampler.add(int64(len(v)) + listElemOver) })
	case *Hash:
		c.Ascend(func(f, v []byte) bool { return sampler.add(int64(len(f)+len(v)) + pairOver) })
	case *Set:
		c.Ascend(func(m []byte) bool { return sampler.add(int64(len(m)) + memberOver) })
	case *ZSet:
		c.Ascend(0, func(m string, _ float64) bool { return sampler.add(int64(len(m)) + zsetOver) })
	case *Stream:
		c.Range(StreamID{}, MaxStreamID, false, func(se StreamEntry) bool {
			b := streamOver
			for _, f := range se.Fields {
				b += int64(len(f)) + sliceHeader
			}
			return sampler.add(b)
		})
	default:
		return 0
	}
	return sampler.total(o.Coll.Len())
}

// usageSampler averages the first limit elements' sizes.
type usageSampler struct {
	limit int
	n     int
	sum   int64
}

// add counts one element's bytes; false once limit elements are counted.
func (u *usageSampler) add(b int64) bool {
	u.sum += b
	u.n++
	return u.limit <= 0 || u.n < u.limit
}

// total extrapolates the sampled average to count elements.
func (u *usageSampler) total(count int) int64 {
	if u.n == 0 {
		return 0
	}
	return u.sum * int64(count) / int64(u.n)
}

package store

import "github.com/tidwall/btree"

// View is a read-only point-in-time copy of a Store's keys, taken in O(1) by
// Snapshot. It may be read from any goroutine (several at once) while the
// Store keeps changing.
type View struct {
	keys *btree.BTreeG[entry]
	dels *[slotCount]uint64 // deletion counts for WATCH (watch.go); shared, read-only
}

// Snapshot returns a point-in-time View in O(1) (copy-on-write). It writes to
// the live tree's bookkeeping, so call it with the Store's write lock held.
func (s *Store) Snapshot() *View {
	v := &View{keys: s.keys.Copy(), dels: s.snapshotDels()}
	s.gen++ // every Object stored so far is now shared with v
	return v
}

// Len returns the number of keys in the View.
func (v *View) Len() int {
	return v.keys.Len()
}

// ViewIter walks a View's keys in order, a batch at a time: a backup reads
// a point-in-time copy of a group this way while the group goes on.
type ViewIter struct {
	v    *View
	last entry // the last key visited; zero before the first
	done bool
}

// Iter starts a walk of v's keys.
func (v *View) Iter() *ViewIter { return &ViewIter{v: v} }

// Next visits up to n keys after the last one visited (expired ones
// included: the caller filters by time) and reports whether keys remain.
// fn must not keep o after it returns.
func (it *ViewIter) Next(n int, fn func(key []byte, o *Object)) (more bool) {
	if it.done {
		return false
	}
	visited := 0
	var scratch Object
	started := it.last.r != nil
	it.v.keys.Ascend(it.last, func(e entry) bool {
		if started && !entryLess(it.last, e) {
			return true // the pivot itself, visited by the previous batch
		}
		if visited == max(n, 1) {
			more = true
			return false
		}
		fn(e.r.keyBytes(), e.r.visit(&scratch))
		it.last = e
		visited++
		return true
	})
	it.done = !more
	return more
}

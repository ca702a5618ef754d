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

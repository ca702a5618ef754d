package store

// Fork returns a writable copy of the Store in O(1) plus the per-slot key
// counts (copy-on-write, as Snapshot): the key tree, the expiry index and
// every Object are shared until one side changes them, and each side then
// copies what it changes. A Lua debugging session runs its script against
// such a copy and throws it away, as Redis's forked debugging child does.
//
// Like Snapshot it marks the live Store's bookkeeping, so call it under the
// Store's write lock. The two Stores share structures that a change copies
// (Mutable clones a shared collection, and some collections' Clone marks
// the original), so changes to the copy must be serialised with changes to
// the original: fsm runs every command of a debugging session under its
// group's write lock, however short, and never during Apply.
func (s *Store) Fork() *Store {
	counts := *s.counts
	f := &Store{
		keys:    s.keys.Copy(),
		expires: s.expires.Copy(),
		counts:  &counts,
		dels:    s.dels, // copied by the first deletion of either side (noteDelete)
		bytes:   s.bytes,
		limits:  s.limits,
	}
	// Every Object stored so far is now shared by both: neither side may
	// change one in place (Mutable compares generations). Both move to one
	// generation above every Object's, and each only stamps new Objects
	// with it, which the other side never sees.
	s.gen++
	f.gen = s.gen
	return f
}

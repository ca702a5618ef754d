package store

// Scan visits keys in cursor order starting at cursor, expired ones included
// (the caller filters by time and pattern). It visits at least count keys,
// then goes on while the next key shares the last visited key's cursor (slot
// and hash48), so that a returned cursor never splits a run of equal
// cursors. It returns the cursor of the next key, or 0 when the end is
// reached. A key present during a whole iteration (from cursor 0 until 0 is
// returned) is visited at least once whatever is inserted or deleted in
// between, because every key whose cursor lies below the returned cursor
// has been visited and the order of keys never changes. As with Ascend, fn
// must not keep o after it returns.
func (s *Store) Scan(cursor uint64, count int, fn func(key []byte, o *Object)) (next uint64) {
	count = max(count, 1)
	visited := 0
	var last uint64
	var scratch Object // see Ascend: fn must not keep o
	s.keys.Ascend(entry{cur: cursor}, func(e entry) bool {
		// A key at cursor 0 can't be the resume point (0 means "done"):
		// visit it now, it is visited again by the next iteration anyway.
		if visited >= count && e.cur != last && e.cur != 0 {
			next = e.cur
			return false
		}
		fn(e.r.keyBytes(), e.r.visit(&scratch))
		visited++
		last = e.cur
		return true
	})
	return next
}

// RandomKey returns a non-expired key chosen by r, or nil if there is none.
// r picks a point in the cursor range between the first and the last key;
// the result is the first non-expired key at or after that point, wrapping
// around. In the worst case (almost every key expired but not yet deleted)
// this walks the whole keyspace.
func (s *Store) RandomKey(r uint64, now int64) []byte {
	first, ok := s.keys.Min()
	if !ok {
		return nil
	}
	lastE, _ := s.keys.Max()
	span := lastE.cur - first.cur + 1 // cursors are < 2^62: no overflow
	point := first.cur + r%span
	var found []byte
	pick := func(e entry) bool {
		if e.r.expiredAt(now) {
			return true
		}
		found = e.r.keyBytes()
		return false
	}
	s.keys.Ascend(entry{cur: point}, pick)
	if found == nil {
		s.keys.Scan(func(e entry) bool {
			return e.cur < point && pick(e)
		})
	}
	return found
}

package store

// LazyFreeThreshold is Redis's LAZYFREE_THRESHOLD: a value whose free
// effort is above it is freed in the background by UNLINK, FLUSHALL ASYNC
// and the lazyfree-lazy-* settings, and counted in INFO's
// lazyfreed_objects.
const LazyFreeThreshold = 64

// FreeEffort is Redis 7.2's lazyfreeGetFreeEffort of o: the allocations
// freeing it takes. A quicklist counts its nodes (estimated here from the
// listpack bytes the list would take and list-max-listpack-size, as nodes
// filled at the ends are); a hashtable set or hash and a skiplist sorted
// set count their elements; a stream counts its radix tree's nodes plus,
// per consumer group, one and the first group's pending entries; anything
// else (a string, a listpack, an intset) is one allocation.
func FreeEffort(o *Object) int {
	if o == nil {
		return 0
	}
	switch c := o.Coll.(type) {
	case *List:
		if c.Encoding() == "quicklist" {
			return c.quicklistNodes()
		}
	case *Set:
		if c.Encoding() == "hashtable" {
			return c.Len()
		}
	case *Hash:
		if c.Encoding() == "hashtable" {
			return c.Len()
		}
	case *ZSet:
		if c.Encoding() == "skiplist" {
			return c.Len()
		}
	case *Stream:
		return c.freeEffort()
	}
	return 1
}

// quicklistNodes estimates how many listpack nodes Redis's quicklist of l
// has: each filled up to the size class's bytes, or to the element count
// (within the 8 KB safety limit) when list-max-listpack-size is positive.
func (l *List) quicklistNodes() int {
	lim := limitsOr(l.lim)
	ceil := func(a, b int) int { return (a + b - 1) / b }
	if b := lim.listBytes(); b > 0 {
		return max(1, ceil(l.lp, b-listpackHeader))
	}
	return max(1, ceil(l.n, int(max(lim.ListSize, 1))), ceil(l.lp, listSafetyLimit-listpackHeader))
}

// freeEffort is a stream's share of FreeEffort. The radix tree has at
// least one node per listpack plus its root, so past the threshold the
// exact count is not needed (and its cost is not paid).
func (s *Stream) freeEffort() int {
	effort := s.Nodes() + 1
	if effort <= LazyFreeThreshold {
		effort = s.RaxNodes()
	}
	if n := s.NumGroups(); n > 0 {
		first := 0
		s.Groups(func(g *StreamGroup) bool {
			first = g.PendingLen()
			return false
		})
		effort += n * (1 + first)
	}
	return effort
}

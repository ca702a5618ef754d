package store

import (
	"github.com/tidwall/btree"
)

// ZSet is a sorted set: members ordered by (score, member bytes) in an
// order-statistic B-tree (rank, select and ranges in O(log N)), plus an
// index from member to score ordered by (hash of the member, member), which
// gives O(log N) score lookups and a stable order for ZSCAN cursors. Both
// structures share nodes with their clones (Clone is O(1)).
type ZSet struct {
	tree  ztree
	index *btree.BTreeG[zentry]
	// big is set once the set outgrows Redis's listpack limits: Redis then
	// reports "skiplist" and never converts back.
	big bool
	lim *Limits // the store's encoding limits (nil: the defaults)
}

type zentry struct {
	hash   uint64
	member string
	score  float64
}

func zentryLess(a, b zentry) bool {
	if a.hash != b.hash {
		return a.hash < b.hash
	}
	return a.member < b.member
}

// NewZSet returns an empty sorted set (listpack-encoded) under lim (nil:
// the defaults).
func NewZSet(lim *Limits) *ZSet {
	return &ZSet{tree: newZtree(), index: btree.NewBTreeGOptions(zentryLess, treeOptions), lim: lim}
}

// NewZSetHint returns an empty sorted set that will hold about n members of
// at most maxLen bytes: like Redis's zsetTypeCreate, it starts as a
// skiplist when those exceed the listpack limits.
func NewZSetHint(lim *Limits, n, maxLen int) *ZSet {
	z := NewZSet(lim)
	l := limitsOr(lim)
	z.big = int64(n) > l.ZSetEntries || int64(maxLen) > l.ZSetValue
	return z
}

func (z *ZSet) setLimits(lim *Limits) { z.lim = lim }

// Len is the number of members.
func (z *ZSet) Len() int { return z.tree.len() }

// Clone returns a copy sharing structure with z (O(1)).
func (z *ZSet) Clone() Collection {
	return &ZSet{tree: z.tree.clone(), index: z.index.Copy(), big: z.big, lim: z.lim}
}

// Encoding is what OBJECT ENCODING reports.
func (z *ZSet) Encoding() string {
	if z.big {
		return "skiplist"
	}
	return "listpack"
}

// FitEncoding chooses the encoding from the contents, as Redis does for a
// sorted set built by a store command (ZUNIONSTORE, ZRANGESTORE…):
// listpack if it fits the limits lim (nil: the defaults), which it follows
// from then on, else skiplist.
func (z *ZSet) FitEncoding(lim *Limits) {
	z.lim = lim
	l := limitsOr(lim)
	z.big = int64(z.Len()) > l.ZSetEntries
	if !z.big {
		z.tree.ascend(0, func(it zitem) bool {
			z.big = int64(len(it.member)) > l.ZSetValue
			return !z.big
		})
	}
}

func probeZ(member []byte) zentry {
	return zentry{hash: keyHash(member), member: string(member)}
}

// Score returns member's score.
func (z *ZSet) Score(member []byte) (float64, bool) {
	e, ok := z.index.Get(probeZ(member))
	return e.score, ok
}

// Add sets member's score, adding the member if needed; it reports whether
// the member is new. score must not be NaN.
func (z *ZSet) Add(member []byte, score float64) (added bool) {
	e := probeZ(member)
	old, ok := z.index.Get(e)
	if ok {
		if old.score == score {
			return false
		}
		z.tree.delete(zitem{score: old.score, member: old.member})
		e.member = old.member // share the stored string
	} else if l := limitsOr(z.lim); !z.big && (int64(z.Len()+1) > l.ZSetEntries || int64(len(member)) > l.ZSetValue) {
		z.big = true
	}
	e.score = score
	z.index.Set(e)
	z.tree.insert(zitem{score: score, member: e.member})
	return !ok
}

// Remove deletes member; it reports whether it was present.
func (z *ZSet) Remove(member []byte) bool {
	old, ok := z.index.Delete(probeZ(member))
	if ok {
		z.tree.delete(zitem{score: old.score, member: old.member})
	}
	return ok
}

func (z *ZSet) removeItem(it zitem) {
	z.index.Delete(zentry{hash: keyHash([]byte(it.member)), member: it.member})
	z.tree.delete(it)
}

// Rank returns member's 0-based position in ascending order and its score.
func (z *ZSet) Rank(member []byte) (rank int, score float64, ok bool) {
	e, ok := z.index.Get(probeZ(member))
	if !ok {
		return 0, 0, false
	}
	return z.tree.rank(zitem{score: e.score, member: e.member}), e.score, true
}

// At returns the member at 0-based ascending position i (0 <= i < Len).
func (z *ZSet) At(i int) (member string, score float64) {
	it := z.tree.at(i)
	return it.member, it.score
}

// Ascend calls fn for the members from position start upwards, in
// ascending order, until fn returns false. The set must not change during
// the walk.
func (z *ZSet) Ascend(start int, fn func(member string, score float64) bool) {
	z.tree.ascend(start, func(it zitem) bool { return fn(it.member, it.score) })
}

// Descend calls fn for the members from position start downwards until fn
// returns false.
func (z *ZSet) Descend(start int, fn func(member string, score float64) bool) {
	z.tree.descend(start, func(it zitem) bool { return fn(it.member, it.score) })
}

// CountScoreBelow returns the number of members whose score is below s, or
// at most s when inclusive is set: the position of the first member past
// that bound.
func (z *ZSet) CountScoreBelow(s float64, inclusive bool) int {
	if inclusive {
		return z.tree.countBefore(func(it zitem) bool { return it.score <= s })
	}
	return z.tree.countBefore(func(it zitem) bool { return it.score < s })
}

// CountMemberBelow returns the number of members that sort before m (or
// not after m when inclusive is set), assuming the members of equal score
// are what ranges by lex are meant for (all scores equal); otherwise the
// answer is some consistent position, as with Redis.
func (z *ZSet) CountMemberBelow(m []byte, inclusive bool) int {
	s := string(m)
	if inclusive {
		return z.tree.countBefore(func(it zitem) bool { return it.member <= s })
	}
	return z.tree.countBefore(func(it zitem) bool { return it.member < s })
}

// RemoveRange deletes the members at positions [start, end) and returns
// how many were removed.
func (z *ZSet) RemoveRange(start, end int) int {
	start, end = max(start, 0), min(end, z.Len())
	if start >= end {
		return 0
	}
	doomed := make([]zitem, 0, end-start)
	z.tree.ascend(start, func(it zitem) bool {
		doomed = append(doomed, it)
		return len(doomed) < end-start
	})
	for _, it := range doomed {
		z.removeItem(it)
	}
	return len(doomed)
}

// Scan visits members in cursor order from cursor, at least count of them
// (finishing every member that shares the last one's hash), and returns
// the cursor to continue from, 0 at the end.
func (z *ZSet) Scan(cursor uint64, count int, fn func(member string, score float64)) uint64 {
	var next uint64
	seen := 0
	var last uint64
	z.index.Ascend(zentry{hash: cursor}, func(e zentry) bool {
		if seen >= count && e.hash != last {
			next = e.hash
			return false
		}
		fn(e.member, e.score)
		seen++
		last = e.hash
		return true
	})
	return next
}

package store

import "bytes"

// Lists (Redis's list type): a deque of chunks of up to listChunkMax
// elements, so that pushes and pops at both ends are O(1) amortised, an
// index lookup walks chunks from the nearer end, and Clone copies only the
// ring of chunk pointers: the chunks are shared until one side changes one
// (copy on write, decided per chunk by its owner and epoch).
//
// Indexes given to List methods follow Redis: 0 is the head, -1 the tail;
// Index and Set take one position, Range and Trim an inclusive start..stop
// pair clamped as LRANGE and LTRIM clamp it.

// List is the value of a list key. Elements are owned by the list and never
// changed in place; push methods copy their arguments. The zero value is not
// usable: NewList or NewListOf.
type List struct {
	ring  []*listChunk // circular; len is 0 or a power of two
	head  int          // ring index of the first chunk
	nch   int          // chunks in use
	n     int          // elements
	lp    int          // listpack bytes the elements would take (no header)
	quick bool         // Redis would hold it as a quicklist
	own   *listOwner
	lim   *Limits // the store's encoding limits (nil: the defaults)
}

// NewList returns an empty list.
func NewList() *List { return &List{own: &listOwner{}} }

// NewListOf returns a list holding elems in order; it takes ownership of the
// slices (no copy). Its encoding is what Redis picks for a list built whole
// (RESTORE, SORT … STORE) under lim (nil: the defaults): a listpack if it
// fits one.
func NewListOf(lim *Limits, elems [][]byte) *List {
	l := NewList()
	l.lim = lim
	for len(elems) > 0 {
		n := min(len(elems), listChunkMax)
		k := l.newChunk(n, 0)
		copy(k.buf, elems[:n])
		k.hi = n
		l.pushChunkBack(k)
		for _, e := range elems[:n] {
			l.lp += lpEntrySize(e)
		}
		l.n += n
		elems = elems[n:]
	}
	l.quick = l.exceeds(l.lp+listpackHeader, l.n, false)
	return l
}

// Len returns the number of elements.
func (l *List) Len() int { return l.n }

// Clone returns a copy sharing every chunk with l; each side copies a chunk
// before its first change to it. Clone only reads l (and bumps an atomic
// epoch), so it may run while another goroutine reads l.
func (l *List) Clone() Collection {
	l.own.epoch.Add(1)
	c := &List{n: l.n, lp: l.lp, quick: l.quick, own: &listOwner{}, lim: l.lim}
	if l.nch > 0 {
		c.ring = make([]*listChunk, ringSize(l.nch))
		for i := range l.nch {
			c.ring[i] = l.chunk(i)
		}
		c.nch = l.nch
	}
	return c
}

// Encoding returns what OBJECT ENCODING reports in Redis 7.2: "listpack"
// or "quicklist". Redis converts on list-max-listpack-size (checked before
// a push with the raw sizes of the new elements) and back when a
// single-node quicklist shrinks under half of it; here the second
// condition is approximated by the total size.
func (l *List) Encoding() string {
	if l.quick {
		return "quicklist"
	}
	return "listpack"
}

// --- pushes and pops --------------------------------------------------------

// PushFront pushes copies of vals one after the other at the head (LPUSH
// a b c leaves c first).
func (l *List) PushFront(vals ...[]byte) {
	l.grow(rawSize(vals), len(vals))
	for _, v := range vals {
		l.pushFront(bytes.Clone(nonNil(v)))
	}
}

// PushBack appends copies of vals at the tail.
func (l *List) PushBack(vals ...[]byte) {
	l.grow(rawSize(vals), len(vals))
	for _, v := range vals {
		l.pushBack(bytes.Clone(nonNil(v)))
	}
}

func nonNil(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

func (l *List) pushFront(v []byte) {
	if l.nch == 0 || l.chunk(0).n() == listChunkMax {
		l.pushChunkFront(l.newChunk(4, 4))
	}
	k := l.mut(0)
	room(k, true)
	k.lo--
	k.buf[k.lo] = v
	l.n++
	l.lp += lpEntrySize(v)
}

func (l *List) pushBack(v []byte) {
	if l.nch == 0 || l.chunk(l.nch-1).n() == listChunkMax {
		l.pushChunkBack(l.newChunk(4, 0))
	}
	k := l.mut(l.nch - 1)
	room(k, false)
	k.buf[k.hi] = v
	k.hi++
	l.n++
	l.lp += lpEntrySize(v)
}

// PopFront removes up to n elements from the head and returns them in the
// order they were popped (head first).
func (l *List) PopFront(n int) [][]byte {
	n = min(n, l.n)
	if n <= 0 {
		return nil
	}
	out := make([][]byte, 0, n)
	l.delFront(n, func(v []byte) { out = append(out, v) })
	l.shrunk()
	return out
}

// PopBack removes up to n elements from the tail and returns them in the
// order they were popped (tail first).
func (l *List) PopBack(n int) [][]byte {
	n = min(n, l.n)
	if n <= 0 {
		return nil
	}
	out := make([][]byte, 0, n)
	l.delBack(n, func(v []byte) { out = append(out, v) })
	l.shrunk()
	return out
}

// Rotate moves one element of a non-empty list from one end to an end
// (LMOVE with the same source and destination) and returns it, checking the
// encoding in Redis's order: the push may grow it, then the pop may shrink.
func (l *List) Rotate(fromFront, toFront bool) []byte {
	var v []byte
	take := func(e []byte) { v = e }
	if fromFront {
		l.delFront(1, take)
	} else {
		l.delBack(1, take)
	}
	l.grow(len(v), 1)
	if toFront {
		l.pushFront(v)
	} else {
		l.pushBack(v)
	}
	l.shrunk()
	return v
}

// delFront removes n (<= Len) elements from the head, calling fn (if not
// nil) for each, head first. Whole chunks are dropped without copying.
func (l *List) delFront(n int, fn func([]byte)) {
	for n > 0 {
		k := l.chunk(0)
		if k.n() <= n {
			for _, v := range k.items() {
				l.gone(v, fn)
			}
			n -= k.n()
			l.n -= k.n()
			l.dropChunkFront()
			continue
		}
		k = l.mut(0)
		for i := range n {
			l.gone(k.at(i), fn)
		}
		clear(k.buf[k.lo : k.lo+n])
		k.lo += n
		l.n -= n
		n = 0
	}
}

// delBack removes n (<= Len) elements from the tail, calling fn for each,
// tail first.
func (l *List) delBack(n int, fn func([]byte)) {
	for n > 0 {
		k := l.chunk(l.nch - 1)
		if k.n() <= n {
			items := k.items()
			for i := len(items) - 1; i >= 0; i-- {
				l.gone(items[i], fn)
			}
			n -= k.n()
			l.n -= k.n()
			l.dropChunkBack()
			continue
		}
		k = l.mut(l.nch - 1)
		for i := k.n() - 1; i >= k.n()-n; i-- {
			l.gone(k.at(i), fn)
		}
		clear(k.buf[k.hi-n : k.hi])
		k.hi -= n
		l.n -= n
		n = 0
	}
}

func (l *List) gone(v []byte, fn func([]byte)) {
	l.lp -= lpEntrySize(v)
	if fn != nil {
		fn(v)
	}
}

// --- positions ------------------------------------------------------------

// index turns a Redis index (negative from the tail) into 0..Len-1; ok is
// false when it is out of range.
func (l *List) index(i int) (int, bool) {
	if i < 0 {
		i += l.n
	}
	return i, i >= 0 && i < l.n
}

// Index returns the element at Redis index i (-1 is the tail); ok is false
// when i is out of range. The slice must not be modified.
func (l *List) Index(i int) (v []byte, ok bool) {
	if i, ok = l.index(i); !ok {
		return nil, false
	}
	ci, off := l.locate(i)
	return l.chunk(ci).at(off), true
}

// Set replaces the element at Redis index i with a copy of v; false if i is
// out of range (nothing changes).
func (l *List) Set(i int, v []byte) bool {
	i, ok := l.index(i)
	if !ok {
		return false
	}
	l.grow(len(v), 1)
	ci, off := l.locate(i)
	k := l.mut(ci)
	l.lp -= lpEntrySize(k.at(off))
	v = bytes.Clone(nonNil(v))
	k.set(off, v)
	l.lp += lpEntrySize(v)
	l.shrunk()
	return true
}

// clamp converts an LRANGE/LTRIM start..stop pair to 0-based inclusive
// bounds; ok is false when the range is empty.
func (l *List) clamp(start, stop int) (int, int, bool) {
	if start < 0 {
		start += l.n
	}
	if stop < 0 {
		stop += l.n
	}
	start = max(start, 0)
	if start > stop || start >= l.n {
		return 0, 0, false
	}
	return start, min(stop, l.n-1), true
}

// RangeLen returns how many elements Range(start, stop) visits.
func (l *List) RangeLen(start, stop int) int {
	s, e, ok := l.clamp(start, stop)
	if !ok {
		return 0
	}
	return e - s + 1
}

// Range calls fn for the elements from start to stop inclusive, Redis
// indexes (negative from the tail, clamped as LRANGE), head to tail, until
// fn returns false. The slices must not be modified.
func (l *List) Range(start, stop int, fn func(v []byte) bool) {
	s, e, ok := l.clamp(start, stop)
	if !ok {
		return
	}
	left := e - s + 1
	l.walk(s, false, func(_ int, v []byte) bool {
		left--
		return fn(v) && left > 0
	})
}

// Walk calls fn for the elements from position from (0-based) towards the
// tail, or, if reverse, from position Len-1-from towards the head, until fn
// returns false.
func (l *List) Walk(from int, reverse bool, fn func(v []byte) bool) {
	if from < 0 || from >= l.n {
		return
	}
	if reverse {
		from = l.n - 1 - from
	}
	l.walk(from, reverse, func(_ int, v []byte) bool { return fn(v) })
}

// walk calls fn(index, element) from 0-based index i towards the tail (or
// the head if reverse) until fn returns false.
func (l *List) walk(i int, reverse bool, fn func(int, []byte) bool) {
	if i < 0 || i >= l.n {
		return
	}
	ci, off := l.locate(i)
	if !reverse {
		for ; ci < l.nch; ci, off = ci+1, 0 {
			k := l.chunk(ci)
			for ; off < k.n(); off++ {
				if !fn(i, k.at(off)) {
					return
				}
				i++
			}
		}
		return
	}
	for {
		k := l.chunk(ci)
		for ; off >= 0; off-- {
			if !fn(i, k.at(off)) {
				return
			}
			i--
		}
		if ci--; ci < 0 {
			return
		}
		off = l.chunk(ci).n() - 1
	}
}

// Insert puts a copy of v before (or after) the first element equal to
// pivot, searching from the head; it returns false if there is none.
func (l *List) Insert(pivot, v []byte, after bool) bool {
	at := -1
	l.walk(0, false, func(i int, e []byte) bool {
		if bytes.Equal(e, pivot) {
			at = i
			return false
		}
		return true
	})
	if at < 0 {
		return false
	}
	if after {
		at++
	}
	l.InsertAt(at, v)
	return true
}

// InsertAt inserts a copy of v so that it becomes element i (0 <= i <=
// Len; Len appends).
func (l *List) InsertAt(i int, v []byte) {
	switch {
	case i <= 0:
		l.PushFront(v)
		return
	case i >= l.n:
		l.PushBack(v)
		return
	}
	l.grow(len(v), 1)
	v = bytes.Clone(nonNil(v))
	ci, off := l.locate(i)
	k := l.mut(ci)
	if k.n() == listChunkMax { // split in two halves
		half := listChunkMax / 2
		right := l.newChunk(listChunkMax, 0)
		copy(right.buf, k.items()[half:])
		right.hi = k.n() - half
		clear(k.buf[k.lo+half : k.hi])
		k.hi = k.lo + half
		l.insertChunk(ci+1, right)
		if off > half {
			k, off = right, off-half
		}
	}
	if k.hi < len(k.buf) || k.lo == 0 {
		room(k, false)
		copy(k.buf[k.lo+off+1:k.hi+1], k.buf[k.lo+off:k.hi])
		k.hi++
	} else {
		copy(k.buf[k.lo-1:], k.buf[k.lo:k.lo+off])
		k.lo--
	}
	k.set(off, v)
	l.n++
	l.lp += lpEntrySize(v)
}

// Remove deletes elements equal to v as LREM does: count > 0 removes the
// first count from the head, count < 0 the first -count from the tail, 0
// all of them. It returns how many were removed.
func (l *List) Remove(count int, v []byte) int {
	limit, reverse := count, false
	if count < 0 {
		limit, reverse = -count, true // -MinInt overflows to MinInt: no limit left, fine
		if limit < 0 {
			limit = 0
		}
	}
	removed := 0
	full := func() bool { return limit > 0 && removed == limit }
	for j := 0; j < l.nch && !full(); j++ {
		ci := j
		if reverse {
			ci = l.nch - 1 - j
		}
		if !containsElem(l.chunk(ci).items(), v) {
			continue
		}
		k := l.mut(ci)
		removed += l.filter(k, v, reverse, limit-removed, limit == 0)
	}
	if removed > 0 {
		l.n -= removed
		l.dropEmptyChunks()
		l.shrunk()
	}
	return removed
}

func containsElem(items [][]byte, v []byte) bool {
	for _, e := range items {
		if bytes.Equal(e, v) {
			return true
		}
	}
	return false
}

// filter removes up to max elements equal to v from k (all if all),
// scanning from its tail when reverse; it returns how many went.
func (l *List) filter(k *listChunk, v []byte, reverse bool, max int, all bool) int {
	removed := 0
	take := func(e []byte) bool {
		if (all || removed < max) && bytes.Equal(e, v) {
			removed++
			l.lp -= lpEntrySize(e)
			return true
		}
		return false
	}
	if !reverse {
		w := k.lo
		for r := k.lo; r < k.hi; r++ {
			if !take(k.buf[r]) {
				k.buf[w] = k.buf[r]
				w++
			}
		}
		clear(k.buf[w:k.hi])
		k.hi = w
		return removed
	}
	w := k.hi - 1
	for r := k.hi - 1; r >= k.lo; r-- {
		if !take(k.buf[r]) {
			k.buf[w] = k.buf[r]
			w--
		}
	}
	clear(k.buf[k.lo : w+1])
	k.lo = w + 1
	return removed
}

// Trim keeps only the elements from start to stop inclusive (Redis indexes,
// clamped as LTRIM: an empty range empties the list).
func (l *List) Trim(start, stop int) {
	s, e, ok := l.clamp(start, stop)
	ltrim, rtrim := l.n, 0
	if ok {
		ltrim, rtrim = s, l.n-e-1
	}
	l.delFront(ltrim, nil)
	l.delBack(rtrim, nil)
	l.shrunk()
}

// Pos returns the 0-based indexes of elements equal to v as LPOS does:
// rank r > 0 skips the first r-1 matches from the head, r < 0 the first
// -r-1 from the tail (rank must not be 0); count > 0 stops after count
// matches, 0 returns them all; maxlen > 0 compares at most maxlen
// elements.
func (l *List) Pos(v []byte, rank, count, maxlen int) []int {
	reverse := rank < 0
	skip := rank - 1
	if reverse {
		skip = -(rank + 1) // -rank-1 without overflowing on MinInt
	}
	from := 0
	if reverse {
		from = l.n - 1
	}
	var out []int
	seen := 0
	l.walk(from, reverse, func(i int, e []byte) bool {
		if maxlen > 0 && seen >= maxlen {
			return false
		}
		seen++
		if !bytes.Equal(e, v) {
			return true
		}
		if skip > 0 {
			skip--
			return true
		}
		out = append(out, i)
		return count == 0 || len(out) < count
	})
	return out
}

package store

// The chunk layout of a List (list.go): a ring of chunks, each a window
// buf[lo:hi] of up to listChunkMax elements that is copied before its first
// change after a Clone.

import "sync/atomic"

const listChunkMax = 128

// listOwner identifies the List allowed to change a chunk in place; its
// epoch moves on when the List is cloned, so that chunks made before the
// clone (now shared) are copied before either side changes them.
type listOwner struct{ epoch atomic.Uint64 }

type listChunk struct {
	buf    [][]byte // elements are buf[lo:hi]
	lo, hi int
	owner  *listOwner
	epoch  uint64
}

func (k *listChunk) n() int              { return k.hi - k.lo }
func (k *listChunk) items() [][]byte     { return k.buf[k.lo:k.hi] }
func (k *listChunk) at(i int) []byte     { return k.buf[k.lo+i] }
func (k *listChunk) set(i int, v []byte) { k.buf[k.lo+i] = v }

func ringSize(n int) int {
	s := 1
	for s < n {
		s <<= 1
	}
	return s
}

func (l *List) slot(i int) int { return (l.head + i) & (len(l.ring) - 1) }

func (l *List) chunk(i int) *listChunk { return l.ring[l.slot(i)] }

func (l *List) setChunk(i int, k *listChunk) { l.ring[l.slot(i)] = k }

// reserveChunk makes room in the ring for one more chunk.
func (l *List) reserveChunk() {
	if l.nch < len(l.ring) {
		return
	}
	ring := make([]*listChunk, max(2*len(l.ring), 1))
	for i := range l.nch {
		ring[i] = l.chunk(i)
	}
	l.ring, l.head = ring, 0
}

func (l *List) pushChunkBack(k *listChunk) {
	l.reserveChunk()
	l.nch++
	l.setChunk(l.nch-1, k)
}

func (l *List) pushChunkFront(k *listChunk) {
	l.reserveChunk()
	l.head = (l.head - 1) & (len(l.ring) - 1)
	l.nch++
	l.setChunk(0, k)
}

// insertChunk puts k at chunk position i, moving the later ones up.
func (l *List) insertChunk(i int, k *listChunk) {
	l.reserveChunk()
	l.nch++
	for j := l.nch - 1; j > i; j-- {
		l.setChunk(j, l.chunk(j-1))
	}
	l.setChunk(i, k)
}

func (l *List) dropChunkFront() {
	l.setChunk(0, nil)
	l.head = (l.head + 1) & (len(l.ring) - 1)
	l.nch--
	l.shrinkRing()
}

func (l *List) dropChunkBack() {
	l.setChunk(l.nch-1, nil)
	l.nch--
	l.shrinkRing()
}

// dropEmptyChunks removes the chunks left empty by a removal in the middle.
func (l *List) dropEmptyChunks() {
	w := 0
	for i := range l.nch {
		if k := l.chunk(i); k.n() > 0 {
			l.setChunk(w, k)
			w++
		}
	}
	for i := w; i < l.nch; i++ {
		l.setChunk(i, nil)
	}
	l.nch = w
	l.shrinkRing()
}

// shrinkRing gives memory back when a big list became small.
func (l *List) shrinkRing() {
	if l.nch == 0 {
		l.ring, l.head = nil, 0
		return
	}
	if len(l.ring) >= 64 && l.nch <= len(l.ring)/4 {
		ring := make([]*listChunk, ringSize(2*l.nch))
		for i := range l.nch {
			ring[i] = l.chunk(i)
		}
		l.ring, l.head = ring, 0
	}
}

// newChunk returns an empty chunk of l with room for size elements, lo
// (and hi) at lo.
func (l *List) newChunk(size, lo int) *listChunk {
	return &listChunk{buf: make([][]byte, size), lo: lo, hi: lo, owner: l.own, epoch: l.own.epoch.Load()}
}

// mut returns chunk i ready to be changed in place: a copy if it may be
// shared with a clone.
func (l *List) mut(i int) *listChunk {
	k := l.chunk(i)
	if k.owner == l.own && k.epoch == l.own.epoch.Load() {
		return k
	}
	c := l.newChunk(k.n(), 0)
	copy(c.buf, k.items())
	c.hi = k.n()
	l.setChunk(i, c)
	return c
}

// room makes space for one more element in k (which has fewer than
// listChunkMax) at its front or back.
func room(k *listChunk, front bool) {
	if (front && k.lo > 0) || (!front && k.hi < len(k.buf)) {
		return
	}
	n := k.n()
	size := min(max(2*n, 4), listChunkMax)
	buf, inPlace := k.buf, len(k.buf) >= size
	if inPlace {
		size = len(buf)
	} else {
		buf = make([][]byte, size)
	}
	lo := 0
	if front {
		lo = size - n
	}
	copy(buf[lo:], k.items()) // copy handles the overlap of an in-place move
	if inPlace {
		clear(buf[:lo])
		clear(buf[lo+n:])
	}
	k.buf, k.lo, k.hi = buf, lo, lo+n
}

// locate returns the chunk and offset of element i (0 <= i < n), walking
// from the nearer end.
func (l *List) locate(i int) (ci, off int) {
	if i < l.n/2 {
		for ci = 0; ; ci++ {
			if n := l.chunk(ci).n(); i < n {
				return ci, i
			} else {
				i -= n
			}
		}
	}
	j := l.n - 1 - i
	for ci = l.nch - 1; ; ci-- {
		if n := l.chunk(ci).n(); j < n {
			return ci, n - 1 - j
		} else {
			j -= n
		}
	}
}

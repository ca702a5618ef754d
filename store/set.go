package store

import (
	"fmt"

	"github.com/tidwall/btree"
)

// Sets (Redis's set type): members in a copy-on-write B-tree ordered like
// hash fields, by (64-bit hash, member) — see hash.go for why, and for what
// SSCAN cursors are. Clone is O(1).

// The encodings Redis 7.2 would use for a set.
const (
	setIntset uint8 = iota
	setListpack
	setHashtable
)

var setEncodings = [...]string{"intset", "listpack", "hashtable"}

// Set is the value of a set key. The zero value is not usable: NewSet.
type Set struct {
	t   *btree.BTreeG[item]
	enc uint8   // never goes back to a more compact encoding, as in Redis
	lim *Limits // the store's encoding limits (nil: the defaults)
}

// NewSet returns an empty set with the encoding Redis 7.2's setTypeCreate
// picks for a set about to receive sizeHint members, the first being first
// (nil: unknown, as when a set is built for SINTERSTORE and the like use
// NewIntSet instead), under lim (nil: the defaults).
func NewSet(lim *Limits, first []byte, sizeHint int) *Set {
	s := &Set{t: newItemTree(), enc: setHashtable, lim: lim}
	l := limitsOr(lim)
	switch {
	case first != nil && isInt(first) && int64(sizeHint) <= l.SetIntsetEntries:
		s.enc = setIntset
	case int64(sizeHint) <= l.SetEntries:
		s.enc = setListpack
	}
	return s
}

// NewIntSet returns an empty intset-encoded set, which Redis uses to build
// the results of SINTERSTORE, SUNIONSTORE and SDIFFSTORE member by member.
// Its conversions follow lim (nil: the defaults).
func NewIntSet(lim *Limits) *Set { return &Set{t: newItemTree(), enc: setIntset, lim: lim} }

// isInt reports whether m reads as a 64-bit integer with string2ll's syntax.
func isInt(m []byte) bool {
	if len(m) == 0 || len(m) > 20 {
		return false
	}
	i := 0
	if m[0] == '-' {
		i = 1
		if len(m) == 1 {
			return false
		}
	}
	if m[i] == '0' {
		return len(m) == 1 // "0"; "-0" and leading zeros are not integers
	}
	var u uint64
	for ; i < len(m); i++ {
		c := m[i]
		if c < '0' || c > '9' {
			return false
		}
		d := uint64(c - '0')
		if u > (1<<64-1-d)/10 {
			return false
		}
		u = u*10 + d
	}
	if m[0] == '-' {
		return u <= 1<<63
	}
	return u <= 1<<63-1
}

// Len returns the number of members.
func (s *Set) Len() int { return s.t.Len() }

// Clone returns an independent copy in O(1) (copy-on-write).
func (s *Set) Clone() Collection { return &Set{t: s.t.Copy(), enc: s.enc, lim: s.lim} }

func (s *Set) setLimits(lim *Limits) { s.lim = lim }

// Encoding returns what Redis 7.2 reports for OBJECT ENCODING.
func (s *Set) Encoding() string { return setEncodings[s.enc] }

// Hint is Redis 7.2's setTypeMaybeConvert, called before adding up to n
// members at once (SADD's argument count): a compact set converts to a
// hashtable if n alone exceeds its limit.
func (s *Set) Hint(n int) {
	l := limitsOr(s.lim)
	if (s.enc == setListpack && int64(n) > l.SetEntries) ||
		(s.enc == setIntset && int64(n) > l.SetIntsetEntries) {
		s.enc = setHashtable
	}
}

// Has reports whether m is a member.
func (s *Set) Has(m []byte) bool {
	_, ok := s.t.Get(probeItem(m))
	return ok
}

// Add adds a copy of m; it reports whether m is new.
func (s *Set) Add(m []byte) bool {
	it := probeItem(m)
	if _, ok := s.t.Get(it); ok {
		return false
	}
	s.grow(m)
	it.k = ownBytes(m)
	s.t.Set(it)
	return true
}

// grow applies Redis 7.2's conversions (setTypeAddAux) for adding the new
// member m to a set of Len() members.
func (s *Set) grow(m []byte) {
	n, size := int64(s.t.Len()), int64(len(m))
	l := limitsOr(s.lim)
	switch s.enc {
	case setIntset:
		switch {
		case isInt(m):
			if n+1 > l.SetIntsetEntries {
				s.enc = setHashtable
			}
		case n < l.SetEntries && size <= l.SetValue:
			s.enc = setListpack
		default:
			s.enc = setHashtable
		}
	case setListpack:
		if n >= l.SetEntries || size > l.SetValue {
			s.enc = setHashtable
		}
	}
}

// Remove removes m and reports whether it was a member.
func (s *Set) Remove(m []byte) bool {
	_, ok := s.t.Delete(probeItem(m))
	return ok
}

// At returns the i-th member in element order (0 <= i < Len), in O(log N):
// with a uniform i it is a uniform random pick. The slice is shared.
func (s *Set) At(i int) []byte {
	it, _ := s.t.GetAt(i)
	return it.k
}

// Ascend calls fn for every member in element order until fn returns false.
// The slices are shared: do not modify them.
func (s *Set) Ascend(fn func(m []byte) bool) {
	s.t.Scan(func(it item) bool { return fn(it.k) })
}

// Scan visits members from cursor for SSCAN; see hash.go for the cursor.
func (s *Set) Scan(cursor uint64, count int, fn func(m []byte)) (next uint64) {
	return scanItems(s.t, cursor, count, func(it item) { fn(it.k) })
}

// Set snapshot record: encoding byte (0 intset, 1 listpack, 2 hashtable),
// uvarint member count, then each member as length-prefixed bytes.
func init() {
	registerCodec(TypeSet, codec{encode: encodeSet, decode: decodeSet})
}

func encodeSet(e *encoder, c Collection) {
	s := c.(*Set)
	e.tag(s.enc)
	e.uvarint(uint64(s.t.Len()))
	s.t.Scan(func(it item) bool {
		e.bytes(it.k)
		return e.err == nil
	})
}

func decodeSet(d *decoder) (Collection, error) {
	enc, err := d.byte()
	if err != nil {
		return nil, err
	}
	if enc > setHashtable {
		return nil, fmt.Errorf("%w: set encoding %d", ErrCorrupt, enc)
	}
	n, err := d.uvarint()
	if err != nil {
		return nil, fmt.Errorf("set length: %w", err)
	}
	s := &Set{t: newItemTree(), enc: enc}
	for i := uint64(0); i < n; i++ { // each member reads input: no trust in n
		m, err := d.bytes("set member")
		if err != nil {
			return nil, err
		}
		if enc == setIntset && !isInt(m) {
			return nil, fmt.Errorf("%w: non-integer member %q in an intset", ErrCorrupt, short(m))
		}
		if _, dup := s.t.Load(item{h: hash64(m), k: m}); dup {
			return nil, fmt.Errorf("%w: duplicate set member %q", ErrCorrupt, short(m))
		}
	}
	return s, nil
}

package store

import (
	"bytes"
	"encoding/binary"
	"sync/atomic"
)

// The key tree's layout. Most keys of a cache are small strings, so those
// are stored compactly: the tree entry is a cursor and a pointer (16 bytes,
// so a tree node holds many), the record holds the metadata, and the key,
// the value and the deadline if any share one allocation. A key whose value
// is anything else keeps an *Object.
//
// Per small string key that is 3 allocations (the tree's share, the 48-byte
// record, key+value) where an Object took 4 and twice the bytes; see
// docs/benchmarks.md, "Memory".

// inlineMax is the largest string value stored inline. A larger one keeps
// its Object, whose Str is stored without a copy: inlining copies the value
// once more, which is cheap only for small values, and a large value's
// bytes dwarf what inlining saves.
const inlineMax = 256

// entry is one key in the key tree: its cursor (slot<<48 | hash48(key))
// and its record. A probe (a lookup's pivot) has a nil record, which sorts
// before every key of its cursor.
type entry struct {
	cur uint64
	r   *record
}

// record is one stored key. It is shared with the Views taken after it was
// stored, so it is never modified (but for access): a change stores a new
// record.
//
// An inline string has obj == nil, or obj == inlineDeadline if it has a
// deadline: key holds the key and its capacity runs on over the value in
// the same array, then over the deadline's 8 bytes (little-endian) if any;
// version is the Object's Version. Anything else
// has its Object in obj, and key's capacity equals its length.
//
// access is the node-local access metadata (access.go) of every record,
// inline or not: the one field that changes in a stored record, atomically,
// since readers under the state's read lock update it.
type record struct {
	key     []byte
	version uint64
	access  atomic.Uint64
	obj     *Object
}

// inlineDeadline marks an inline string with a deadline in its bytes. It is
// only ever compared with, never read: a sentinel costs no field, so the
// record stays in the 48-byte size class.
var inlineDeadline = &Object{}

// deadlineLen is the size of an inline deadline.
const deadlineLen = 8

func (r *record) inline() bool { return r.obj == nil || r.obj == inlineDeadline }

func entryLess(a, b entry) bool {
	if a.cur != b.cur {
		return a.cur < b.cur
	}
	if a.r == nil || b.r == nil {
		return a.r == nil && b.r != nil // a probe first
	}
	return bytes.Compare(a.r.key, b.r.key) < 0
}

// inlinable reports whether o is stored inline: a string with a small
// value.
func inlinable(o *Object) bool {
	return o.Type == TypeString && len(o.Str) <= inlineMax
}

// newRecord makes key's record for o, copying the key (and, inline, the
// value: o is not kept then).
func newRecord(key []byte, o *Object) *record {
	if !inlinable(o) {
		// Never nil, even for the empty key: a nil key would read as absent
		// (a null bulk string) wherever it is handed out.
		r := &record{key: append(make([]byte, 0, len(key)), key...), obj: o}
		r.access.Store(packAccess(o.Touched, LFUInitVal))
		return r
	}
	n := len(key) + len(o.Str)
	r := &record{version: o.Version}
	r.access.Store(packAccess(o.Touched, LFUInitVal))
	var buf []byte
	if o.ExpireAt == 0 {
		buf = make([]byte, n)
	} else {
		buf = make([]byte, n+deadlineLen)
		binary.LittleEndian.PutUint64(buf[n:], uint64(o.ExpireAt))
		r.obj = inlineDeadline
	}
	copy(buf, key)
	copy(buf[len(key):], o.Str)
	r.key = buf[:len(key)]
	return r
}

// keyBytes is the key, its capacity cut to its length so that an append by
// a caller cannot write over an inline value.
func (r *record) keyBytes() []byte { return r.key[:len(r.key):len(r.key)] }

// object is the record's Object; for an inline string a new one whose Str
// shares the record's bytes (the store's slices are read-only).
func (r *record) object() *Object {
	if !r.inline() {
		return r.obj
	}
	o := &Object{}
	r.fill(o)
	return o
}

// fill sets *o to an inline string's Object.
func (r *record) fill(o *Object) {
	end := r.valueEnd()
	*o = Object{Type: TypeString, Str: r.key[len(r.key):end:end], ExpireAt: r.expireAt(),
		Version: r.version, Touched: r.accessOf().Last}
}

// valueEnd is where an inline value ends in key's array.
func (r *record) valueEnd() int {
	if r.obj == inlineDeadline {
		return cap(r.key) - deadlineLen
	}
	return cap(r.key)
}

// expireAt is the key's deadline (0: none).
func (r *record) expireAt() int64 {
	switch r.obj {
	case nil:
		return 0
	case inlineDeadline:
		return int64(binary.LittleEndian.Uint64(r.key[cap(r.key)-deadlineLen : cap(r.key)]))
	}
	return r.obj.ExpireAt
}

func (r *record) expiredAt(now int64) bool { return DeadlinePassed(r.expireAt(), now) }

// visit is how Ascend and Scan hand records to a callback without an
// allocation per inline string: it fills one scratch Object per walk,
// reused for the next key, so the callback must not keep o.
func (r *record) visit(scratch *Object) *Object {
	if !r.inline() {
		return r.obj
	}
	r.fill(scratch)
	return scratch
}

// find returns key's entry. A lookup walks from the probe of key's cursor
// over the (almost always single) keys sharing it, so it needs no record
// for the probe and allocates nothing.
func (s *Store) find(key []byte) (entry, bool) {
	cur := cursorOf(key)
	var found entry
	ok := false
	s.keys.Ascend(entry{cur: cur}, func(e entry) bool {
		if e.cur != cur {
			return false
		}
		c := bytes.Compare(e.r.key, key)
		if c == 0 {
			found, ok = e, true
		}
		return c < 0 // keys of one cursor come in key order
	})
	return found, ok
}

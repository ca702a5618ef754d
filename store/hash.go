package store

import (
	"bytes"
	"fmt"

	"github.com/slotraft/slotraft/slots"
	"github.com/tidwall/btree"
)

// The key order, and so the SCAN cursor, is (slot, hash48(key), key):
// cursor = slot<<48 | hash48. Changing keyHash changes the meaning of cursors
// that clients hold, so it must stay stable across versions (a snapshot does
// not depend on it: Restore re-inserts every key).

const hashBits = 48

const hashMask = 1<<hashBits - 1

// keyHash is hash64 (FNV-1a 64 followed by the murmur3 64-bit finaliser, so
// that the top bits depend on every input byte) truncated to its top 48 bits.
func keyHash(key []byte) uint64 { return hash64(key) >> (64 - hashBits) }

// cursorOf returns the position of key in cursor space.
func cursorOf(key []byte) uint64 {
	return SlotCursor(slots.Of(key)) | keyHash(key)
}

// CursorSlot returns the slot a cursor points into.
func CursorSlot(cursor uint64) uint16 {
	return uint16(cursor >> hashBits)
}

// SlotCursor returns the first cursor of a slot (slot<<48).
func SlotCursor(slot uint16) uint64 {
	return uint64(slot) << hashBits
}

// slotCount is slots.Count as an int, for array sizes and loops.
const slotCount = slots.Count

// ---------------------------------------------------------------------------
// Hashes (Redis's hash type): a field → value map held in a copy-on-write
// B-tree, so Clone is O(1) and a snapshot View keeps its point in time while
// the live copy changes.
//
// Element order and HSCAN cursors. Fields are ordered by (h, field), h being
// the 64-bit hash of the field (hash64). An HSCAN cursor is the h of the next
// field to visit, so a scan visits every field present for the whole scan at
// least once whatever is inserted or deleted in between (the order of the
// fields already there never changes). A call finishes every field sharing
// the boundary hash, so colliding hashes are never split across calls. Replies
// listing a whole hash (HGETALL, HKEYS…) use the same order: deterministic on
// every replica, but not Redis's hash-table order.

// hash64 is FNV-1a 64 followed by the murmur3 64-bit finaliser. Like
// keyHash (its top 48 bits) it orders elements and so defines the cursors
// clients hold: it must stay stable across versions.
func hash64(b []byte) uint64 {
	const (
		offset64 = 14695981039346656037
		prime64  = 1099511628211
	)
	h := uint64(offset64)
	for _, c := range b {
		h ^= uint64(c)
		h *= prime64
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// item is one element of a hash (k = field, v = value) or of a set (k =
// member, v unused). Both slices are owned by the collection and never
// modified: replacing a value stores a new slice.
type item struct {
	h uint64
	k []byte
	v []byte
}

func itemLess(a, b item) bool {
	if a.h != b.h {
		return a.h < b.h
	}
	return bytes.Compare(a.k, b.k) < 0
}

func newItemTree() *btree.BTreeG[item] {
	return btree.NewBTreeGOptions(itemLess, treeOptions)
}

func probeItem(k []byte) item { return item{h: hash64(k), k: k} }

// ownBytes copies b into a fresh slice (never nil).
func ownBytes(b []byte) []byte { return append(make([]byte, 0, len(b)), b...) }

// scanItems visits items from cursor in (h, k) order: at least count of them
// (fewer at the end), then every further item sharing the last one's hash.
// It returns the cursor of the next call, 0 when the end was reached.
func scanItems(t *btree.BTreeG[item], cursor uint64, count int, fn func(it item)) uint64 {
	var next uint64
	seen := 0
	var last uint64
	t.Ascend(item{h: cursor}, func(it item) bool {
		if seen >= count && it.h != last {
			next = it.h // > last >= 0, so never the final cursor 0
			return false
		}
		fn(it)
		seen++
		last = it.h
		return true
	})
	return next
}

// Hash is the value of a hash key. The zero value is not usable: NewHash.
type Hash struct {
	t *btree.BTreeG[item]
	// big is set once Redis would have converted the hash from listpack to
	// hashtable (hash-max-listpack-entries and -value, Limits); like Redis
	// it never goes back.
	big bool
	lim *Limits // the store's encoding limits (nil: the defaults)
}

// NewHash returns an empty hash (listpack encoded, as Redis creates them).
// Its conversions follow lim (nil: the defaults).
func NewHash(lim *Limits) *Hash { return &Hash{t: newItemTree(), lim: lim} }

// Len returns the number of fields.
func (h *Hash) Len() int { return h.t.Len() }

// Clone returns an independent copy in O(1) (copy-on-write).
func (h *Hash) Clone() Collection { return &Hash{t: h.t.Copy(), big: h.big, lim: h.lim} }

func (h *Hash) setLimits(lim *Limits) { h.lim = lim }

// Encoding returns what Redis 7.2 reports for OBJECT ENCODING.
func (h *Hash) Encoding() string {
	if h.big {
		return "hashtable"
	}
	return "listpack"
}

// Prepare is Redis's hashTypeTryConversion, called before setting pairs
// field/value pairs whose longest argument is maxLen bytes: a listpack hash
// converts when so many pairs or so long an argument would not fit, even if
// the fields exist already.
func (h *Hash) Prepare(pairs, maxLen int) {
	if lim := limitsOr(h.lim); int64(pairs) > lim.HashEntries || int64(maxLen) > lim.HashValue {
		h.big = true
	}
}

// Get returns field's value (shared: do not modify it).
func (h *Hash) Get(field []byte) ([]byte, bool) {
	it, ok := h.t.Get(probeItem(field))
	return it.v, ok
}

// Has reports whether field exists.
func (h *Hash) Has(field []byte) bool {
	_, ok := h.t.Get(probeItem(field))
	return ok
}

// Set stores copies of field and value; it reports whether field is new.
func (h *Hash) Set(field, value []byte) bool {
	lim := limitsOr(h.lim)
	if int64(len(field)) > lim.HashValue || int64(len(value)) > lim.HashValue {
		h.big = true
	}
	// One allocation holds the field and the value.
	buf := make([]byte, len(field)+len(value))
	n := copy(buf, field)
	copy(buf[n:], value)
	_, replaced := h.t.Set(item{h: hash64(field), k: buf[:n:n], v: buf[n:]})
	if int64(h.t.Len()) > lim.HashEntries {
		h.big = true
	}
	return !replaced
}

// Delete removes field and reports whether it existed.
func (h *Hash) Delete(field []byte) bool {
	_, ok := h.t.Delete(probeItem(field))
	return ok
}

// At returns the i-th field and value in element order (0 <= i < Len), in
// O(log N): with a uniform i it is a uniform random pick.
func (h *Hash) At(i int) (field, value []byte) {
	it, _ := h.t.GetAt(i)
	return it.k, it.v
}

// Ascend calls fn for every field in element order until fn returns false.
func (h *Hash) Ascend(fn func(field, value []byte) bool) {
	h.t.Scan(func(it item) bool { return fn(it.k, it.v) })
}

// Scan visits fields from cursor for HSCAN; see the element order above.
func (h *Hash) Scan(cursor uint64, count int, fn func(field, value []byte)) (next uint64) {
	return scanItems(h.t, cursor, count, func(it item) { fn(it.k, it.v) })
}

// Hash snapshot record: encoding byte (0 listpack, 1 hashtable), uvarint
// field count, then each field and value as length-prefixed bytes.
func init() {
	registerCodec(TypeHash, codec{encode: encodeHash, decode: decodeHash})
}

func encodeHash(e *encoder, c Collection) {
	h := c.(*Hash)
	e.tag(boolByte(h.big))
	e.uvarint(uint64(h.t.Len()))
	h.t.Scan(func(it item) bool {
		e.bytes(it.k)
		e.bytes(it.v)
		return e.err == nil
	})
}

func decodeHash(d *decoder) (Collection, error) {
	enc, err := d.byte()
	if err != nil {
		return nil, err
	}
	if enc > 1 {
		return nil, fmt.Errorf("%w: hash encoding %d", ErrCorrupt, enc)
	}
	n, err := d.uvarint()
	if err != nil {
		return nil, fmt.Errorf("hash length: %w", err)
	}
	h := &Hash{t: newItemTree(), big: enc == 1}
	for i := uint64(0); i < n; i++ { // each element reads input: no trust in n
		f, err := d.bytes("hash field")
		if err != nil {
			return nil, err
		}
		v, err := d.bytes("hash value")
		if err != nil {
			return nil, err
		}
		if _, dup := h.t.Load(item{h: hash64(f), k: f, v: v}); dup {
			return nil, fmt.Errorf("%w: duplicate hash field %q", ErrCorrupt, short(f))
		}
	}
	return h, nil
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

package store

// This file fixes the store's public surface; the implementation lives in
// the files named after what they hold (keyspace.go, expiry.go, scan.go,
// persist.go…).

// Type is the type of a key's value, as TYPE reports it.
type Type uint8

// Value types. Only strings exist so far; the others are reserved so the
// snapshot format and TYPE never renumber.
const (
	TypeNone Type = iota
	TypeString
	TypeList
	TypeHash
	TypeSet
	TypeZSet
	TypeStream
)

// Object is one key's value and metadata. A stored Object is shared with
// the snapshot Views taken after it was stored, so it is never modified,
// with one exception: an Object returned by Store.Mutable belongs to no View
// until the next Snapshot, and its Coll, Version and Touched may be changed
// in place until then (its ExpireAt only through Put, which keeps the
// expiry index). Strings are always replaced whole. A small string is not
// kept as an Object at all (Put copies it inline, entry.go), so changing an
// Object after Put changes the store only through Mutable.
type Object struct {
	Type     Type
	Str      []byte     // TypeString
	Coll     Collection // every other type
	ExpireAt int64      // unix ms; 0 = no expiry
	Version  uint64     // log index of the last change (for WATCH)
	// Touched is the access time (unix ms) Put starts the key's access
	// metadata from: the entry's time for a write, a restored key's own.
	// The live metadata, which reads move on, is Store.AccessOf's.
	Touched int64

	gen uint64 // the Store generation it was stored in; see Store.Mutable
	mem int64  // the value's estimated bytes when last accounted (dataset.go)
}

// Collection is the value of a list, hash, set, sorted set or stream.
type Collection interface {
	// Len is the number of elements; a collection with none is deleted.
	Len() int
	// Clone returns a copy that shares structure with the original (O(1)
	// or close to it): afterwards changing either one leaves the other
	// unchanged. It is what lets a snapshot keep a collection that Apply
	// goes on mutating.
	Clone() Collection
}

// String returns the name TYPE replies with.
func (t Type) String() string {
	switch t {
	case TypeNone:
		return "none"
	case TypeString:
		return "string"
	case TypeList:
		return "list"
	case TypeHash:
		return "hash"
	case TypeSet:
		return "set"
	case TypeZSet:
		return "zset"
	case TypeStream:
		return "stream"
	}
	return "unknown"
}

package store

// Limits are Redis's encoding thresholds (hash-max-listpack-entries and the
// others below): when a collection outgrows them, Redis converts it to a
// bigger encoding, which OBJECT ENCODING and the memory estimates report.
// A store's limits are part of its group's replicated state (fsm sets them
// from the group's settings, in Apply), so every replica converts at the
// same point. A collection follows the limits of the store it was put in
// or changed in; one outside a store (nil limits) follows DefaultLimits.
type Limits struct {
	HashEntries, HashValue int64 // hash-max-listpack-entries, -value
	SetIntsetEntries       int64 // set-max-intset-entries
	SetEntries, SetValue   int64 // set-max-listpack-entries, -value
	ZSetEntries, ZSetValue int64 // zset-max-listpack-entries, -value
	// ListSize is list-max-listpack-size: a positive number of elements,
	// or -1 … -5 for 4, 8, 16, 32 or 64 KB.
	ListSize int64
	// StreamNodeBytes and StreamNodeEntries are stream-node-max-bytes and
	// -entries (0: no limit).
	StreamNodeBytes, StreamNodeEntries int64
}

// DefaultLimits are Redis 7.2's defaults (its config.c, which a redis-server
// started without a config file uses; redis.conf lowers
// hash-max-listpack-entries to 128).
func DefaultLimits() Limits {
	return Limits{
		HashEntries: 512, HashValue: 64,
		SetIntsetEntries: 512, SetEntries: 128, SetValue: 64,
		ZSetEntries: 128, ZSetValue: 64,
		ListSize:        -2,
		StreamNodeBytes: 4096, StreamNodeEntries: 100,
	}
}

var defaultLimits = DefaultLimits()

// limitsOr is l, or the defaults for a collection outside a store.
func limitsOr(l *Limits) *Limits {
	if l == nil {
		return &defaultLimits
	}
	return l
}

// listBytes is the listpack size limit of a byte class of ListSize (Redis's
// optimization_level: -1 is 4 KB … -5 is 64 KB); 0 for a count limit.
func (l *Limits) listBytes() int {
	if l.ListSize >= 0 {
		return 0
	}
	class := min(-l.ListSize, 5)
	return 4096 << (class - 1)
}

// limited is a collection that follows a store's limits.
type limited interface{ setLimits(*Limits) }

// SetLimits replaces the store's encoding limits: its collections follow
// them from their next change on (what they already converted stays).
func (s *Store) SetLimits(l Limits) { s.limits = l }

// Limits is the store's encoding limits, shared with its collections (do
// not modify; SetLimits changes them).
func (s *Store) Limits() *Limits { return &s.limits }

// stamp makes o's collection follow this store's limits.
func (s *Store) stamp(o *Object) {
	if l, ok := o.Coll.(limited); ok {
		l.setLimits(&s.limits)
	}
}

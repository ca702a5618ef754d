package store

import (
	"bytes"

	"github.com/tidwall/btree"
)

// expiry is one key with a deadline in the expiry index, ordered by
// (at, key). r is the key's record in the key tree: every change of the
// record replaces it here too (indexExpiry), or the index would keep an
// old value alive. A pointer rather than the key makes the entry 16 bytes.
type expiry struct {
	at int64
	r  *record
}

func expiryLess(a, b expiry) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return bytes.Compare(a.r.key, b.r.key) < 0
}

func newExpiryTree() *btree.BTreeG[expiry] {
	return btree.NewBTreeGOptions(expiryLess, treeOptions)
}

// AverageTTL estimates the average time to live at now (ms) of the keys
// with a deadline still ahead, from at most samples entries spread evenly
// over the expiry index: O(samples log n), where a walk of every key would
// hold the state's lock for as long as the keyspace is big. Redis's
// avg_ttl is an estimate too (sampled by its expire cycle). 0 if none.
func (s *Store) AverageTTL(now int64, samples int) int64 {
	n := s.expires.Len()
	if n == 0 || samples <= 0 {
		return 0
	}
	step := max(n/samples, 1)
	var sum, live int64
	for i := 0; i < n; i += step {
		if e, ok := s.expires.GetAt(i); ok && e.at > now {
			sum += e.at - now
			live++
		}
	}
	if live == 0 {
		return 0
	}
	return sum / live
}

// DeadlinePassed reports whether deadline at (unix ms, 0 = none) has passed
// at now: the one definition of expired, for stored keys (ExpiredAt) and for
// a deadline about to be set alike.
func DeadlinePassed(at, now int64) bool { return at != 0 && at <= now }

// ExpiredAt reports whether o has expired at now (unix ms): such a key is
// hidden by Get and listed by Expired until it is deleted.
func (o *Object) ExpiredAt(now int64) bool { return DeadlinePassed(o.ExpireAt, now) }

func (s *Store) indexExpiry(r *record) {
	if at := r.expireAt(); at != 0 {
		s.expires.Set(expiry{at: at, r: r}) // replaces the key's old record
	}
}

func (s *Store) unindexExpiry(r *record) {
	if at := r.expireAt(); at != 0 {
		s.expires.Delete(expiry{at: at, r: r})
	}
}

// Expired returns up to limit keys whose Object is ExpiredAt now (the keys
// Get hides), earliest
// deadline first (ties in key order), in O(limit + log n). The slices are
// shared: do not modify them.
func (s *Store) Expired(now int64, limit int) [][]byte {
	if limit <= 0 {
		return nil
	}
	var keys [][]byte
	s.expires.Scan(func(x expiry) bool {
		if x.at > now {
			return false
		}
		if x.at != 0 { // never indexed; defensive
			keys = append(keys, x.r.keyBytes())
		}
		return len(keys) < limit
	})
	return keys
}

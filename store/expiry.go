package store

import (
	"bytes"

	"github.com/tidwall/btree"
)

// expiry is one key with a deadline in the expiry index, ordered by
// (at, key). The key slice is the one stored in the key tree.
type expiry struct {
	at  int64
	key []byte
}

func expiryLess(a, b expiry) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return bytes.Compare(a.key, b.key) < 0
}

func newExpiryTree() *btree.BTreeG[expiry] {
	return btree.NewBTreeGOptions(expiryLess, treeOptions)
}

func (s *Store) indexExpiry(key []byte, o *Object) {
	if o.ExpireAt != 0 {
		s.expires.Set(expiry{at: o.ExpireAt, key: key})
	}
}

func (s *Store) unindexExpiry(key []byte, o *Object) {
	if o.ExpireAt != 0 {
		s.expires.Delete(expiry{at: o.ExpireAt, key: key})
	}
}

// Expired returns up to limit keys with ExpireAt != 0 && ExpireAt <= now
// (the keys Get hides), earliest
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
			keys = append(keys, x.key)
		}
		return len(keys) < limit
	})
	return keys
}

package store

import "math/rand/v2"

// Reader is the read-only face of a Store. Everything outside package fsm,
// which alone mutates a store, reads one through it: lookups, counts and
// iteration. The objects it yields belong to the store and must not be
// modified.
type Reader interface {
	// Get is the live object at key at time now (nil if absent or expired).
	Get(key []byte, now int64) *Object
	// GetRaw is the object at key, expired or not.
	GetRaw(key []byte) *Object
	Len() int
	// ExpiringLen is the number of keys with a deadline.
	ExpiringLen() int
	// AverageTTL estimates the keys' average time to live (INFO keyspace).
	AverageTTL(now int64, samples int) int64
	// MemoryUsage is MEMORY USAGE's estimate for the live key at now.
	MemoryUsage(key []byte, now int64, samples int) (int64, bool)
	CountInSlot(slot uint16) int
	KeysInSlot(slot uint16, count int) [][]byte
	// Ascend and Scan hand fn an Object it must not keep after it returns
	// (an inline string's is reused for the next key).
	Ascend(fn func(key []byte, o *Object) bool)
	Scan(cursor uint64, count int, fn func(key []byte, o *Object)) (next uint64)
	Expired(now int64, limit int) [][]byte
	// AccessOf is the live key's node-local access metadata (access.go).
	AccessOf(key []byte, now int64) (Access, bool)
	// DataBytes is the dataset's estimated size (dataset.go).
	DataBytes() int64
	// Populate, PopBest and RandomVictim choose maxmemory victims
	// (evict.go); they change the pool, never the store.
	Populate(pool *EvictPool, es EvictSampling, rnd *rand.Rand) int
	PopBest(pool *EvictPool) (Candidate, int64, bool)
	RandomVictim(p EvictPolicy, rnd *rand.Rand) (Candidate, int64, bool)
}

var _ Reader = (*Store)(nil)

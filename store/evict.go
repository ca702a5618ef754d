package store

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
)

// Choosing maxmemory victims, as Redis's evict.c does: sample a few keys
// at random (from every key or only those with a deadline), score each by
// the policy (idle time, inverse frequency or nearness of the deadline),
// keep the best in a small pool that lives across rounds, and evict the
// pool's best key that still exists. The caller, a group's leader,
// proposes the victims' deletion through the log; it reads the store under
// the state's read lock.

// EvictPolicy is a maxmemory-policy.
type EvictPolicy uint8

// The policies.
const (
	NoEviction EvictPolicy = iota
	AllKeysLRU
	VolatileLRU
	AllKeysLFU
	VolatileLFU
	AllKeysRandom
	VolatileRandom
	VolatileTTL
)

// evictPolicyNames are the policies' maxmemory-policy names, by value.
var evictPolicyNames = [...]string{"noeviction", "allkeys-lru", "volatile-lru", "allkeys-lfu",
	"volatile-lfu", "allkeys-random", "volatile-random", "volatile-ttl"}

// String is the policy's maxmemory-policy name.
func (p EvictPolicy) String() string {
	if int(p) < len(evictPolicyNames) {
		return evictPolicyNames[p]
	}
	return "unknown"
}

// EvictPolicyNamed is the policy a maxmemory-policy name (lower case)
// names.
func EvictPolicyNamed(name string) (EvictPolicy, bool) {
	for i, n := range evictPolicyNames {
		if n == name {
			return EvictPolicy(i), true
		}
	}
	return NoEviction, false
}

// Volatile reports whether the policy evicts only keys with a deadline.
func (p EvictPolicy) Volatile() bool {
	return p == VolatileLRU || p == VolatileLFU || p == VolatileRandom || p == VolatileTTL
}

// LFU reports whether the policy scores keys by frequency.
func (p EvictPolicy) LFU() bool { return p == AllKeysLFU || p == VolatileLFU }

// Random reports whether the policy picks victims at random.
func (p EvictPolicy) Random() bool { return p == AllKeysRandom || p == VolatileRandom }

// EvictPoolSize is Redis's EVPOOL_SIZE.
const EvictPoolSize = 16

// Candidate is a key that may be evicted.
type Candidate struct {
	Key     []byte // a copy
	Version uint64 // the key's version when it was sampled
	Score   uint64 // higher is a better victim
}

// EvictPool is the best candidates seen so far, best last.
type EvictPool struct {
	c []Candidate
}

// Len is the number of candidates in the pool.
func (p *EvictPool) Len() int { return len(p.c) }

// Reset empties the pool (a new policy scores keys differently).
func (p *EvictPool) Reset() { p.c = p.c[:0] }

// add keeps c if the pool has room or c beats its worst candidate; a key
// already pooled is scored again.
func (p *EvictPool) add(c Candidate) {
	if i := slices.IndexFunc(p.c, func(x Candidate) bool { return bytes.Equal(x.Key, c.Key) }); i >= 0 {
		p.c = slices.Delete(p.c, i, i+1)
	}
	if len(p.c) == EvictPoolSize {
		if c.Score <= p.c[0].Score {
			return
		}
		p.c = slices.Delete(p.c, 0, 1)
	}
	i, _ := slices.BinarySearchFunc(p.c, c.Score, func(x Candidate, s uint64) int {
		switch {
		case x.Score < s:
			return -1
		case x.Score > s:
			return 1
		}
		return 0
	})
	c.Key = bytes.Clone(c.Key)
	p.c = slices.Insert(p.c, i, c)
}

// EvictSampling is how a round samples: the policy, how many keys
// (maxmemory-samples), the time and the LFU settings to score with.
type EvictSampling struct {
	Policy  EvictPolicy
	Samples int
	Now     int64
	Access  AccessParams
}

// Populate samples keys at random and adds them to the pool by the
// policy's score (Redis's evictionPoolPopulate). It reports how many keys
// the policy could choose from (0: nothing to evict).
func (s *Store) Populate(pool *EvictPool, es EvictSampling, rnd *rand.Rand) int {
	n := s.sampleSpace(es.Policy)
	for range min(es.Samples, n) {
		r := s.sampleAt(es.Policy, rnd.IntN(n))
		pool.add(Candidate{Key: r.keyBytes(), Version: r.versionOf(), Score: score(r, es)})
	}
	return n
}

// sampleSpace is the number of keys a policy samples from.
func (s *Store) sampleSpace(p EvictPolicy) int {
	if p.Volatile() {
		return s.expires.Len()
	}
	return s.keys.Len()
}

// sampleAt is the i-th record of the policy's sample space.
func (s *Store) sampleAt(p EvictPolicy, i int) *record {
	if p.Volatile() {
		e, _ := s.expires.GetAt(i)
		return e.r
	}
	e, _ := s.keys.GetAt(i)
	return e.r
}

// score rates r as a victim: idle ms for LRU, 255 minus the decayed
// counter for LFU, the nearer deadline the higher for volatile-ttl.
func score(r *record, es EvictSampling) uint64 {
	a := r.accessOf()
	switch {
	case es.Policy.LFU():
		return 255 - uint64(a.Freq(es.Now, es.Access))
	case es.Policy == VolatileTTL:
		return math.MaxUint64 - uint64(max(r.expireAt(), 0))
	}
	return uint64(a.IdleMs(es.Now))
}

// PopBest removes the pool's best candidates until one is still stored
// with the version it was sampled at, and returns it with its bytes;
// false when the pool has none left. A key changed since it was sampled
// is dropped: it was just accessed.
func (s *Store) PopBest(pool *EvictPool) (Candidate, int64, bool) {
	for len(pool.c) > 0 {
		c := pool.c[len(pool.c)-1]
		pool.c = pool.c[:len(pool.c)-1]
		if e, ok := s.find(c.Key); ok && e.r.versionOf() == c.Version {
			return c, e.r.memBytes(), true
		}
	}
	return Candidate{}, 0, false
}

// RandomVictim is a key chosen at random for a random policy, with its
// bytes; false if the policy has nothing to choose from.
func (s *Store) RandomVictim(p EvictPolicy, rnd *rand.Rand) (Candidate, int64, bool) {
	n := s.sampleSpace(p)
	if n == 0 {
		return Candidate{}, 0, false
	}
	r := s.sampleAt(p, rnd.IntN(n))
	return Candidate{Key: bytes.Clone(r.keyBytes()), Version: r.versionOf()}, r.memBytes(), true
}

// versionOf is the record's Version, inline or not.
func (r *record) versionOf() uint64 {
	if r.inline() {
		return r.version
	}
	return r.obj.Version
}

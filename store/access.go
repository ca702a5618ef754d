package store

import (
	"math/rand/v2"
)

// Access metadata: when a key was last read or written on this node and
// its logarithmic access-frequency counter, as Redis keeps them in an
// object's 24 lru bits. They drive OBJECT IDLETIME and FREQ and the
// maxmemory policies' choice of victims.
//
// They are node-local, like a Redis replica's own LRU clock: reads update
// them (atomically, under the state's read lock) and are never logged, so
// two replicas of a key may disagree, and nothing replicated may depend on
// them. Writes set them too, from the entry's time. Both counters are kept
// whatever the policy, so that switching between LRU and LFU policies
// finds them ready.
//
// The word is (unix ms of the last access) << 8 | LFU counter. A record
// that replaces another (a write) carries the counter on, as Redis keeps
// an overwritten value's LFU bits.

// LFUInitVal is the counter of a new key (Redis's LFU_INIT_VAL): a new key
// is not evicted before it had a chance to be accessed again.
const LFUInitVal = 5

// AccessParams are the settings of the LFU counter: lfu-log-factor and
// lfu-decay-time (minutes per decrement, 0 never).
type AccessParams struct {
	LogFactor int
	DecayTime int
}

// DefaultAccess is Redis's default LFU settings.
var DefaultAccess = AccessParams{LogFactor: 10, DecayTime: 1}

// Access is a key's access metadata.
type Access struct {
	Last    int64 // unix ms of the last access (read or write)
	Counter uint8 // LFU counter, not decayed
}

func packAccess(last int64, counter uint8) uint64 {
	return uint64(max(last, 0))<<8 | uint64(counter)
}

func unpackAccess(w uint64) Access { return Access{Last: int64(w >> 8), Counter: uint8(w)} }

// IdleMs is the time since the last access at now (never negative).
func (a Access) IdleMs(now int64) int64 { return max(now-a.Last, 0) }

// Freq is the counter decayed by the minutes idle at now: one per
// DecayTime minutes (Redis's LFUDecrAndReturn).
func (a Access) Freq(now int64, p AccessParams) uint8 {
	if p.DecayTime <= 0 {
		return a.Counter
	}
	periods := a.IdleMs(now) / 60000 / int64(p.DecayTime)
	if periods >= int64(a.Counter) {
		return 0
	}
	return a.Counter - uint8(periods)
}

// logIncr is Redis's LFULogIncr: the counter grows with probability
// 1/((counter-LFUInitVal)*LogFactor+1), saturating at 255. The random
// draw is node-local, as the metadata is.
func logIncr(counter uint8, p AccessParams) uint8 {
	if counter == 255 {
		return 255
	}
	base := max(float64(counter)-LFUInitVal, 0)
	if rand.Float64() < 1/(base*float64(p.LogFactor)+1) {
		counter++
	}
	return counter
}

// touch records an access at now: the decayed counter incremented
// logarithmically, and the time. Concurrent readers may lose one another's
// increment, as an approximate counter allows.
func (r *record) touch(now int64, p AccessParams) {
	a := unpackAccess(r.access.Load())
	c := logIncr(a.Freq(now, p), p)
	r.access.Store(packAccess(max(now, a.Last), c))
}

// accessOf is the record's metadata.
func (r *record) accessOf() Access { return unpackAccess(r.access.Load()) }

// Lookup is Get that also records the access (p non-nil), as Redis's
// lookupKey does unless asked not to touch.
func (s *Store) Lookup(key []byte, now int64, p *AccessParams) *Object {
	e, ok := s.find(key)
	if !ok || e.r.expiredAt(now) {
		return nil
	}
	if p != nil {
		e.r.touch(now, *p)
	}
	return e.r.object()
}

// Touch records an access of the live key at now and reports whether
// there is one (TOUCH).
func (s *Store) Touch(key []byte, now int64, p AccessParams) bool {
	e, ok := s.find(key)
	if !ok || e.r.expiredAt(now) {
		return false
	}
	e.r.touch(now, p)
	return true
}

// AccessOf is the live key's access metadata at now; false if there is no
// live key.
func (s *Store) AccessOf(key []byte, now int64) (Access, bool) {
	e, ok := s.find(key)
	if !ok || e.r.expiredAt(now) {
		return Access{}, false
	}
	return e.r.accessOf(), true
}

// SetAccess sets the key's access metadata (RESTORE IDLETIME or FREQ).
func (s *Store) SetAccess(key []byte, a Access) {
	if e, ok := s.find(key); ok {
		e.r.access.Store(packAccess(a.Last, a.Counter))
	}
}

// carryAccess gives r, which replaces old (nil for a new key), its first
// metadata: accessed at last, with old's counter or LFUInitVal.
func (r *record) carryAccess(old *record, last int64) {
	counter := uint8(LFUInitVal)
	if old != nil {
		counter = old.accessOf().Counter
	}
	r.access.Store(packAccess(last, counter))
}

package store

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// agedStore has n keys, key i last accessed at i seconds; keys with an
// even number have a deadline, at 1e9 - i seconds for volatile-ttl.
func agedStore(n int) *Store {
	s := New()
	for i := range n {
		o := &Object{Type: TypeString, Str: []byte("v"), Touched: int64(i) * 1000, Version: uint64(i + 1)}
		if i%2 == 0 {
			o.ExpireAt = 1e12 - int64(i)*1000
		}
		s.Put(fmt.Appendf(nil, "k%d", i), o)
	}
	return s
}

func keyNum(t *testing.T, k []byte) int {
	var i int
	if _, err := fmt.Sscanf(string(k), "k%d", &i); err != nil {
		t.Fatalf("victim %q: %v", k, err)
	}
	return i
}

// TestEvictPolicies draws victims from a pool fed by several rounds of
// samples, as Redis's performEvictions does, and checks each policy picks
// what it should: the least recently used, the least frequently used, the
// nearest deadline, only volatile keys for volatile-*.
func TestEvictPolicies(t *testing.T) {
	const n, now = 1000, 2_000_000
	tests := []struct {
		policy EvictPolicy
		ok     func(i int) bool
		what   string
	}{
		{AllKeysLRU, func(i int) bool { return i < n/4 }, "among the oldest quarter"},
		{VolatileLRU, func(i int) bool { return i%2 == 0 && i < n/4 }, "volatile, among the oldest quarter"},
		{VolatileTTL, func(i int) bool { return i%2 == 0 && i >= 3*n/4 }, "volatile, among the nearest deadlines"},
		{AllKeysLFU, func(i int) bool { return i >= n/2 }, "among the rarely used half"},
		{VolatileRandom, func(i int) bool { return i%2 == 0 }, "volatile"},
		{AllKeysRandom, func(int) bool { return true }, "any"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.policy), func(t *testing.T) {
			s := agedStore(n)
			if tt.policy.LFU() { // the first half is hot
				for i := range n / 2 {
					for range 50 {
						s.Touch(fmt.Appendf(nil, "k%d", i), now, AccessParams{LogFactor: 1, DecayTime: 1})
					}
				}
			}
			rnd := rand.New(rand.NewPCG(7, 7))
			var pool EvictPool
			es := EvictSampling{Policy: tt.policy, Samples: 5, Now: now, Access: DefaultAccess}
			for range 20 {
				var c Candidate
				var ok bool
				if tt.policy.Random() {
					c, _, ok = s.RandomVictim(tt.policy, rnd)
				} else {
					for range 10 {
						s.Populate(&pool, es, rnd)
					}
					c, _, ok = s.PopBest(&pool)
				}
				if !ok {
					t.Fatal("no victim")
				}
				if i := keyNum(t, c.Key); !tt.ok(i) {
					t.Fatalf("victim k%d, want one %s", i, tt.what)
				}
				s.Delete(c.Key)
			}
		})
	}
}

func TestEvictPopBestSkipsChangedKeys(t *testing.T) {
	s := agedStore(10)
	var pool EvictPool
	es := EvictSampling{Policy: AllKeysLRU, Samples: 10, Now: 1e7}
	rnd := rand.New(rand.NewPCG(1, 1))
	for range 20 {
		s.Populate(&pool, es, rnd)
	}
	if pool.Len() != 10 {
		t.Fatalf("pool holds %d candidates, want all 10 keys once", pool.Len())
	}
	// k0 is the best; it is rewritten, k1 deleted: k2 is next.
	s.Put([]byte("k0"), &Object{Type: TypeString, Str: []byte("new"), Version: 99})
	s.Delete([]byte("k1"))
	c, b, ok := s.PopBest(&pool)
	if !ok || string(c.Key) != "k2" || b <= 0 {
		t.Fatalf("PopBest = %q %d %v, want k2 with its bytes", c.Key, b, ok)
	}
	empty := New()
	if n := empty.Populate(&pool, es, rnd); n != 0 {
		t.Fatalf("an empty store offers %d keys", n)
	}
	if _, _, ok := empty.RandomVictim(VolatileRandom, rnd); ok {
		t.Fatal("an empty store gave a random victim")
	}
}

func TestEvictPoolKeepsBest(t *testing.T) {
	var p EvictPool
	for i := range 40 {
		p.add(Candidate{Key: fmt.Appendf(nil, "k%d", i), Score: uint64(i % 20)})
	}
	if p.Len() != EvictPoolSize {
		t.Fatalf("pool of %d, want %d", p.Len(), EvictPoolSize)
	}
	for i := 1; i < len(p.c); i++ {
		if p.c[i-1].Score > p.c[i].Score {
			t.Fatalf("pool not sorted: %v", p.c)
		}
	}
	if p.c[0].Score < 4 {
		t.Fatalf("pool kept a candidate of score %d while better ones were offered", p.c[0].Score)
	}
}

// TestEvictPolicyNames: every policy reads back from its maxmemory-policy
// name, and an unknown name is refused.
func TestEvictPolicyNames(t *testing.T) {
	for p := NoEviction; p <= VolatileTTL; p++ {
		if got, ok := EvictPolicyNamed(p.String()); !ok || got != p {
			t.Errorf("%d: %q reads as %d %v", p, p.String(), got, ok)
		}
	}
	if _, ok := EvictPolicyNamed("allkeys-lru "); ok {
		t.Error("a name with a space was accepted")
	}
}

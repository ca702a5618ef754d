package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestAccessTouchAndCarry(t *testing.T) {
	s := New()
	k := []byte("k")
	s.Put(k, &Object{Type: TypeString, Str: []byte("v"), Touched: 1000})
	if a, ok := s.AccessOf(k, 1000); !ok || a.Last != 1000 || a.Counter != LFUInitVal {
		t.Fatalf("new key: %+v %v, want last 1000 counter %d", a, ok, LFUInitVal)
	}
	if _, _, found := s.GetString(k, 4000, nil); !found {
		t.Fatal("GetString: not found")
	}
	if a, _ := s.AccessOf(k, 4000); a.Last != 1000 {
		t.Fatalf("a read without params touched the key: %+v", a)
	}
	p := AccessParams{LogFactor: 0, DecayTime: 0} // factor 0: every access counts
	if s.Lookup(k, 5000, &p) == nil {
		t.Fatal("Lookup: nil")
	}
	if a, _ := s.AccessOf(k, 5000); a.Last != 5000 || a.Counter != LFUInitVal+1 {
		t.Fatalf("after Lookup: %+v, want last 5000 counter %d", a, LFUInitVal+1)
	}
	s.GetString(k, 6000, &p)
	s.Put(k, &Object{Type: TypeString, Str: []byte("w"), Touched: 7000})
	if a, _ := s.AccessOf(k, 7000); a.Last != 7000 || a.Counter != LFUInitVal+2 {
		t.Fatalf("overwritten: %+v, want last 7000 and the counter carried (%d)", a, LFUInitVal+2)
	}
	if o := s.Mutable(k, 7000); o == nil {
		t.Fatal("Mutable: nil")
	}
	if a, _ := s.AccessOf(k, 7000); a.Last != 7000 || a.Counter != LFUInitVal+2 {
		t.Fatalf("after Mutable: %+v, want the metadata kept", a)
	}
	if !s.Touch(k, 9000, p) {
		t.Fatal("Touch of a live key: false")
	}
	s.Put([]byte("gone"), &Object{Type: TypeString, Str: []byte("v"), ExpireAt: 10})
	if s.Touch([]byte("gone"), 20, p) || s.Lookup([]byte("gone"), 20, &p) != nil {
		t.Fatal("an expired key was touched")
	}
	if _, ok := s.AccessOf([]byte("gone"), 20); ok {
		t.Fatal("AccessOf an expired key: ok")
	}
}

func TestAccessFreqDecay(t *testing.T) {
	const minute = 60000
	tests := []struct {
		counter uint8
		idle    int64
		decay   int
		want    uint8
	}{
		{10, 0, 1, 10},
		{10, 3*minute + 59999, 1, 7},
		{10, 6 * minute, 2, 7},
		{10, 100 * minute, 1, 0},
		{10, 100 * minute, 0, 10}, // decay off
		{255, minute - 1, 1, 255},
	}
	for _, tt := range tests {
		a := Access{Last: 1_000_000, Counter: tt.counter}
		if got := a.Freq(a.Last+tt.idle, AccessParams{LogFactor: 10, DecayTime: tt.decay}); got != tt.want {
			t.Errorf("counter %d idle %d decay %d: Freq = %d, want %d", tt.counter, tt.idle, tt.decay, got, tt.want)
		}
	}
}

// TestAccessLogIncr checks the counter against redis.conf's table for
// lfu-log-factor 10: about 18 after 1000 hits, 10 after 100.
func TestAccessLogIncr(t *testing.T) {
	p := AccessParams{LogFactor: 10}
	counts := func(hits int) uint8 {
		c := uint8(LFUInitVal)
		for range hits {
			c = logIncr(c, p)
		}
		return c
	}
	// The increment is random: the mean of 50 counters, whose spread is
	// a tenth of one counter's (a single one reached 25 for 1000 hits).
	mean := func(hits int) float64 {
		sum := 0
		for range 50 {
			sum += int(counts(hits))
		}
		return float64(sum) / 50
	}
	if c := mean(100); c < 8.5 || c > 11 {
		t.Errorf("100 hits: counters %.1f on average, want about 10", c)
	}
	if c := mean(1000); c < 17.5 || c > 21.5 {
		t.Errorf("1000 hits: counters %.1f on average, want about 18 (19.4 in a simulation)", c)
	}
	if c := logIncr(255, p); c != 255 {
		t.Errorf("saturated counter grew to %d", c)
	}
}

// TestDataBytesNoDrift: after any mix of writes, in-place changes and
// deletions the dataset's size is the sum of its records' sizes, and 0
// once every key is gone.
func TestDataBytesNoDrift(t *testing.T) {
	s := New()
	rnd := rand.New(rand.NewPCG(1, 2))
	key := func() []byte { return fmt.Appendf(nil, "k%d", rnd.IntN(50)) }
	for i := range 3000 {
		k := key()
		switch rnd.IntN(5) {
		case 0:
			s.Put(k, &Object{Type: TypeString, Str: bytes.Repeat([]byte("x"), rnd.IntN(600)), ExpireAt: int64(rnd.IntN(2)) * 1e12})
		case 1:
			h := NewHash(nil)
			h.Set([]byte("f"), []byte("v"))
			s.Put(k, &Object{Type: TypeHash, Coll: h})
		case 2:
			if o := s.Mutable(k, 0); o != nil && o.Type == TypeHash {
				o.Coll.(*Hash).Set(fmt.Appendf(nil, "f%d", i), bytes.Repeat([]byte("y"), rnd.IntN(100)))
				s.Account(k, o)
			}
		case 3:
			s.Delete(k)
		case 4:
			if i%500 == 0 {
				s.Snapshot() // a new generation: Mutable copies first
			}
		}
		if got, want := s.DataBytes(), sumRecords(s); got != want {
			t.Fatalf("step %d: DataBytes %d, records sum %d", i, got, want)
		}
	}
	var keys [][]byte
	s.Ascend(func(k []byte, _ *Object) bool { keys = append(keys, bytes.Clone(k)); return true })
	for _, k := range keys {
		s.Delete(k)
	}
	if s.DataBytes() != 0 {
		t.Fatalf("empty store: DataBytes %d", s.DataBytes())
	}
}

func sumRecords(s *Store) int64 {
	var n int64
	s.keys.Scan(func(e entry) bool { n += e.r.memBytes(); return true })
	return n
}

func TestDataBytesRestore(t *testing.T) {
	s := New()
	for i := range 100 {
		s.Put(fmt.Appendf(nil, "k%d", i), &Object{Type: TypeString, Str: bytes.Repeat([]byte("v"), i*5), Touched: int64(i)})
	}
	r := restoredCopy(t, s)
	if r.DataBytes() != s.DataBytes() {
		t.Fatalf("restored DataBytes %d, want %d", r.DataBytes(), s.DataBytes())
	}
	if a, _ := r.AccessOf([]byte("k42"), 0); a.Last != 42 {
		t.Fatalf("restored access time %d, want 42", a.Last)
	}
}

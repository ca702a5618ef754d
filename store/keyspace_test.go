package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/slotraft/slotraft/slots"
)

func str(v string, expireAt int64) *Object {
	return &Object{Type: TypeString, Str: []byte(v), ExpireAt: expireAt}
}

func TestTypeString(t *testing.T) {
	tests := []struct {
		t    Type
		want string
	}{
		{TypeNone, "none"}, {TypeString, "string"}, {TypeList, "list"}, {TypeHash, "hash"},
		{TypeSet, "set"}, {TypeZSet, "zset"}, {TypeStream, "stream"}, {Type(99), "unknown"},
	}
	for _, tt := range tests {
		if got := tt.t.String(); got != tt.want {
			t.Errorf("Type(%d).String() = %q, want %q", tt.t, got, tt.want)
		}
	}
}

func TestGetExpiry(t *testing.T) {
	tests := []struct {
		name     string
		expireAt int64
		now      int64
		visible  bool
	}{
		{"no expiry", 0, 1 << 60, true},
		{"before deadline", 100, 99, true},
		{"at deadline", 100, 100, false},
		{"after deadline", 100, 101, false},
		{"negative deadline", -1, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			s.Put([]byte("k"), str("v", tt.expireAt))
			got := s.Get([]byte("k"), tt.now)
			if (got != nil) != tt.visible {
				t.Fatalf("Get at %d = %v, visible want %v", tt.now, got, tt.visible)
			}
			raw := s.GetRaw([]byte("k"))
			if raw == nil {
				t.Fatal("GetRaw hides an expired key")
			}
			if raw.ExpiredAt(tt.now) == tt.visible || DeadlinePassed(tt.expireAt, tt.now) == tt.visible {
				t.Fatalf("ExpiredAt/DeadlinePassed at %d disagree with Get (visible %v)", tt.now, tt.visible)
			}
			if s.Len() != 1 {
				t.Fatalf("Len = %d, want 1", s.Len())
			}
		})
	}
}

func TestPutReplaceAndDelete(t *testing.T) {
	s := New()
	key := []byte("key")
	s.Put(key, str("a", 50))
	key[0] = 'X' // Put copies the key
	if s.GetRaw([]byte("key")) == nil {
		t.Fatal("Put did not copy the key")
	}
	s.Put([]byte("key"), str("b", 0))
	if o := s.Get([]byte("key"), 100); o == nil || string(o.Str) != "b" {
		t.Fatalf("after replace Get = %v", o)
	}
	if got := s.Expired(1000, 10); len(got) != 0 {
		t.Fatalf("replaced deadline still indexed: %q", got)
	}
	s.Put([]byte("key"), str("c", 10))
	tests := []struct {
		key  string
		want bool
	}{
		{"key", true}, // expired at 100 but stored: Delete removes it
		{"key", false},
		{"missing", false},
	}
	for _, tt := range tests {
		if got := s.Delete([]byte(tt.key)); got != tt.want {
			t.Fatalf("Delete(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
	if s.Len() != 0 || len(s.Expired(1<<62, 10)) != 0 || s.CountInSlot(slots.Of([]byte("key"))) != 0 {
		t.Fatalf("state left after delete: len %d", s.Len())
	}
	s.Put([]byte("n"), str("x", 0))
	s.Put([]byte("n"), nil)
	if s.Len() != 0 {
		t.Fatal("Put(nil) did not delete")
	}
}

func TestEmptyKeyAndValue(t *testing.T) {
	s := New()
	s.Put(nil, str("", 0))
	o := s.Get([]byte{}, 0)
	if o == nil || o.Str == nil || len(o.Str) != 0 {
		t.Fatalf("empty key/value: %#v", o)
	}
	if k := s.RandomKey(7, 0); k == nil || len(k) != 0 {
		t.Fatalf("RandomKey of the empty key = %#v", k)
	}
	// The empty key of a value with an Object of its own (entry.go) is
	// never nil either.
	s.Put(nil, &Object{Type: TypeList, Coll: &testColl{items: []string{"a"}}})
	if k := s.RandomKey(7, 0); k == nil || len(k) != 0 {
		t.Fatalf("RandomKey of the empty list key = %#v", k)
	}
}

func TestCountsAndKeysInSlot(t *testing.T) {
	s := New()
	want := map[uint16][][]byte{}
	for i := range 3000 {
		k := []byte(fmt.Sprintf("key:%d", i))
		if i%3 == 0 {
			k = []byte(fmt.Sprintf("{tag}%d", i)) // all in one slot
		}
		s.Put(k, str("v", 0))
		want[slots.Of(k)] = append(want[slots.Of(k)], k)
	}
	for i := 0; i < 3000; i += 5 { // delete some
		k := []byte(fmt.Sprintf("key:%d", i))
		if s.Delete(k) {
			sl := slots.Of(k)
			want[sl] = slices.DeleteFunc(want[sl], func(x []byte) bool { return bytes.Equal(x, k) })
		}
	}
	total := 0
	for sl := range uint16(slotCount) {
		n := s.CountInSlot(sl)
		total += n
		if n != len(want[sl]) {
			t.Fatalf("CountInSlot(%d) = %d, want %d", sl, n, len(want[sl]))
		}
	}
	if total != s.Len() {
		t.Fatalf("sum of counts %d != Len %d", total, s.Len())
	}
	tag := slots.Of([]byte("{tag}"))
	tests := []struct {
		count int
		want  int
	}{{0, 0}, {-1, 0}, {1, 1}, {10, 10}, {1 << 20, len(want[tag])}}
	for _, tt := range tests {
		got := s.KeysInSlot(tag, tt.count)
		if len(got) != tt.want {
			t.Fatalf("KeysInSlot(%d, %d) = %d keys, want %d", tag, tt.count, len(got), tt.want)
		}
		for _, k := range got {
			if slots.Of(k) != tag {
				t.Fatalf("KeysInSlot returned %q of slot %d", k, slots.Of(k))
			}
		}
		if !slices.IsSortedFunc(got, func(a, b []byte) int {
			return compareCursor(cursorOf(a), cursorOf(b), a, b)
		}) {
			t.Fatal("KeysInSlot not in cursor order")
		}
	}
	if got := s.KeysInSlot(slotCount-1, 10); len(got) != len(want[slotCount-1]) {
		t.Fatalf("KeysInSlot(last slot) = %q", got)
	}
	if s.CountInSlot(slotCount) != 0 {
		t.Fatal("CountInSlot out of range")
	}
	s.Flush()
	if s.Len() != 0 || s.CountInSlot(tag) != 0 || s.KeysInSlot(tag, 5) != nil {
		t.Fatal("Flush left keys")
	}
}

func compareCursor(ca, cb uint64, a, b []byte) int {
	if ca != cb {
		if ca < cb {
			return -1
		}
		return 1
	}
	return bytes.Compare(a, b)
}

func TestExpiredOrder(t *testing.T) {
	s := New()
	puts := []struct {
		key string
		at  int64
	}{
		{"c", 30}, {"a", 10}, {"b", 10}, {"z", 0}, {"d", 50}, {"e", 20}, {"f", 1000},
	}
	for _, p := range puts {
		s.Put([]byte(p.key), str("v", p.at))
	}
	s.Put([]byte("c"), str("w", 30)) // same deadline, new value
	s.Put([]byte("d"), str("v", 5))  // moved earlier
	s.Put([]byte("e"), str("v", 0))  // persisted
	tests := []struct {
		now   int64
		limit int
		want  []string
	}{
		{4, 10, nil},
		{5, 10, []string{"d"}},
		{10, 10, []string{"d", "a", "b"}},
		{30, 10, []string{"d", "a", "b", "c"}},
		{30, 2, []string{"d", "a"}},
		{30, 0, nil},
		{1 << 62, 100, []string{"d", "a", "b", "c", "f"}},
	}
	for _, tt := range tests {
		var got []string
		for _, k := range s.Expired(tt.now, tt.limit) {
			got = append(got, string(k))
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Expired(%d, %d) = %q, want %q", tt.now, tt.limit, got, tt.want)
		}
	}
}

func TestRandomKey(t *testing.T) {
	s := New()
	if k := s.RandomKey(1, 0); k != nil {
		t.Fatalf("RandomKey of empty store = %q", k)
	}
	for i := range 200 {
		at := int64(0)
		if i%2 == 0 {
			at = 10
		}
		s.Put([]byte(fmt.Sprintf("k%d", i)), str("v", at))
	}
	seen := map[string]bool{}
	for r := range uint64(2000) {
		k := s.RandomKey(r*0x9E3779B97F4A7C15, 10)
		if k == nil {
			t.Fatal("RandomKey = nil with live keys")
		}
		if s.Get(k, 10) == nil {
			t.Fatalf("RandomKey returned expired %q", k)
		}
		seen[string(k)] = true
	}
	if len(seen) < 50 {
		t.Fatalf("RandomKey covered only %d of 100 live keys", len(seen))
	}
	if k := s.RandomKey(3, 5); s.GetRaw(k) == nil {
		t.Fatalf("RandomKey = %q", k)
	}
	for i := 1; i < 200; i += 2 {
		s.Delete([]byte(fmt.Sprintf("k%d", i)))
	}
	if k := s.RandomKey(12345, 10); k != nil {
		t.Fatalf("RandomKey with only expired keys = %q", k)
	}
}

func TestAscendOrder(t *testing.T) {
	s := New()
	for i := range 500 {
		s.Put([]byte(fmt.Sprint(i)), str("v", 0))
	}
	var prev []byte
	var prevCur uint64
	n := 0
	s.Ascend(func(k []byte, o *Object) bool {
		c := cursorOf(k)
		if n > 0 && compareCursor(prevCur, c, prev, k) >= 0 {
			t.Fatalf("Ascend out of order: %q then %q", prev, k)
		}
		prev, prevCur = k, c
		n++
		return n < 400
	})
	if n != 400 {
		t.Fatalf("Ascend visited %d, want to stop at 400", n)
	}
}

func TestCursorHelpers(t *testing.T) {
	tests := []uint16{0, 1, 5460, slotCount - 1}
	for _, sl := range tests {
		c := SlotCursor(sl)
		if CursorSlot(c) != sl || CursorSlot(c|hashMask) != sl {
			t.Errorf("slot %d: cursor %x maps to %d", sl, c, CursorSlot(c))
		}
	}
	if h := keyHash([]byte("some key")); h > hashMask {
		t.Fatalf("hash %x wider than 48 bits", h)
	}
}

// checkInvariants compares the store with a model: key -> deadline.
func checkInvariants(t *testing.T, s *Store, model map[string]int64) {
	t.Helper()
	if s.Len() != len(model) {
		t.Fatalf("Len %d, model %d", s.Len(), len(model))
	}
	perSlot := map[uint16]int{}
	withTTL := 0
	for k, at := range model {
		perSlot[slots.Of([]byte(k))]++
		o := s.GetRaw([]byte(k))
		if o == nil || o.ExpireAt != at {
			t.Fatalf("key %q: %v, want deadline %d", k, o, at)
		}
		if at != 0 {
			withTTL++
		}
	}
	for sl := range uint16(slotCount) {
		if s.CountInSlot(sl) != perSlot[sl] {
			t.Fatalf("slot %d: count %d, want %d", sl, s.CountInSlot(sl), perSlot[sl])
		}
	}
	if s.expires.Len() != withTTL {
		t.Fatalf("expiry index holds %d, want %d", s.expires.Len(), withTTL)
	}
	s.expires.Scan(func(x expiry) bool {
		if model[string(x.r.key)] != x.at {
			t.Fatalf("expiry index: %q at %d, model %d", x.r.key, x.at, model[string(x.r.key)])
		}
		// The index holds the key tree's record, not an older one that
		// would keep an old value alive.
		if e, ok := s.find(x.r.key); !ok || e.r != x.r {
			t.Fatalf("expiry index: %q holds a record the key tree does not", x.r.key)
		}
		return true
	})
}

func TestRandomOpsKeepIndexes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	s := New()
	model := map[string]int64{}
	for i := range 20000 {
		k := fmt.Sprintf("{k%d}%d", r.IntN(50), r.IntN(40))
		switch op := r.IntN(10); {
		case op < 6:
			at := int64(r.IntN(3)) * 100 // 0 = no deadline
			s.Put([]byte(k), str("v", at))
			model[k] = at
		case op < 9:
			_, had := model[k]
			if s.Delete([]byte(k)) != had {
				t.Fatalf("Delete(%q) != %v", k, had)
			}
			delete(model, k)
		default:
			for _, k := range s.Expired(int64(r.IntN(300)), 5) {
				s.Delete(k)
				delete(model, string(k))
			}
		}
		if i%1000 == 0 {
			checkInvariants(t, s, model)
		}
	}
	checkInvariants(t, s, model)
}

// TestGetString: GetString agrees with Get for every kind of record, and a
// small value Put copies does not change when the caller's buffer does.
func TestGetString(t *testing.T) {
	s := New()
	big := bytes.Repeat([]byte("b"), inlineMax+1)
	s.Put([]byte("inline"), str("v", 0))
	s.Put([]byte("empty"), str("", 0))
	s.Put([]byte("deadline"), str("d", 100))
	s.Put([]byte("big"), &Object{Type: TypeString, Str: big})
	s.Put([]byte("bigdead"), &Object{Type: TypeString, Str: big, ExpireAt: 100})
	s.Put([]byte("hash"), &Object{Type: TypeHash, Coll: NewHash(nil)})
	tests := []struct {
		key, want string
		typ       Type
		found     bool
	}{
		{"inline", "v", TypeString, true},
		{"empty", "", TypeString, true},
		{"deadline", "d", TypeString, true},
		{"big", string(big), TypeString, true},
		{"bigdead", string(big), TypeString, true},
		{"hash", "", TypeHash, true},
		{"absent", "", 0, false},
	}
	for _, now := range []int64{99, 100} {
		for _, tt := range tests {
			val, typ, found := s.GetString([]byte(tt.key), now, nil)
			o := s.Get([]byte(tt.key), now)
			if found != (o != nil) {
				t.Errorf("%s at %d: found %v, Get %v", tt.key, now, found, o)
				continue
			}
			if !found {
				continue
			}
			if typ != o.Type || (typ == TypeString && (string(val) != tt.want || val == nil)) {
				t.Errorf("%s at %d: %q %v, want %q %v", tt.key, now, val, typ, tt.want, tt.typ)
			}
		}
	}
	buf := []byte("abc")
	if !CopiesString(len(buf)) || CopiesString(inlineMax+1) {
		t.Fatalf("CopiesString(%d) false or CopiesString(%d) true", len(buf), inlineMax+1)
	}
	s.Put([]byte("copied"), &Object{Type: TypeString, Str: buf})
	buf[0] = 'X'
	if val, _, _ := s.GetString([]byte("copied"), 0, nil); string(val) != "abc" {
		t.Errorf("stored %q changed with the caller's buffer", val)
	}
}

// TestAverageTTL: the sampled average of the deadlines still ahead, the
// passed ones left out.
func TestAverageTTL(t *testing.T) {
	s := New()
	if got := s.AverageTTL(0, 64); got != 0 {
		t.Fatalf("no deadlines: %d", got)
	}
	for i := range 1000 {
		s.Put([]byte(fmt.Sprintf("k%d", i)), str("v", int64(1000+i*10))) // 1000 … 10990
	}
	s.Put([]byte("plain"), str("v", 0))
	if n := s.ExpiringLen(); n != 1000 {
		t.Fatalf("ExpiringLen = %d", n)
	}
	exact := func(now int64) int64 {
		var sum, n int64
		for i := range 1000 {
			if at := int64(1000 + i*10); at > now {
				sum += at - now
				n++
			}
		}
		return sum / n
	}
	for _, now := range []int64{0, 5000, 10980} {
		got, want := s.AverageTTL(now, 64), exact(now)
		if d := got - want; d < -want/10-10 || d > want/10+10 {
			t.Errorf("at %d: %d, exact %d", now, got, want)
		}
	}
	if got := s.AverageTTL(20000, 64); got != 0 {
		t.Errorf("all passed: %d", got)
	}
}

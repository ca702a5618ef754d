package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/slotraft/slotraft/store"
)

// randomEntries makes a reproducible mix of writes, expiry and time jumps.
func randomEntries(n int) []*Entry {
	r := rand.New(rand.NewPCG(1, 2))
	ops := []string{"SET k%d v%d", "SET k%d v%d PX %d", "INCR n%d", "APPEND k%d x%d", "DEL k%d",
		"EXPIRE k%d %d", "RENAME k%d k%d", "GETEX k%d PERSIST", "SETRANGE k%d %d ab", "RANDOMKEY", "COPY k%d c%d REPLACE"}
	now := t0
	var out []*Entry
	for i := 0; i < n; i++ {
		now += int64(r.IntN(300)) - 50 // sometimes backwards: a new leader's slower clock
		e := &Entry{Type: EntryCommands, Now: now, Seed: r.Uint64()}
		for j := 0; j <= r.IntN(3); j++ {
			line := fmt.Sprintf(ops[r.IntN(len(ops))], r.IntN(20), r.IntN(20)+1, r.IntN(500)+1)
			e.Cmds = append(e.Cmds, fields(line))
		}
		if i%17 == 0 {
			e = &Entry{Type: EntryExpire, Now: now, Cmds: [][][]byte{fields("k1 k2 k3 k4 k5")}}
		}
		out = append(out, e)
	}
	return out
}

func dump(t *testing.T, s *State) []byte {
	var buf bytes.Buffer
	if _, err := s.Snapshot().view.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDeterminism(t *testing.T) {
	a, b := NewState(), NewState()
	for i, e := range randomEntries(500) {
		ra := repliesOf(a.Apply(uint64(i+1), e))
		rb := repliesOf(b.Apply(uint64(i+1), DecodeOrFail(t, e.Encode())))
		if showAll(ra) != showAll(rb) {
			t.Fatalf("entry %d: replies differ: %s vs %s", i, showAll(ra), showAll(rb))
		}
	}
	if !bytes.Equal(dump(t, a), dump(t, b)) {
		t.Fatal("states differ")
	}
	if a.LastNow() != b.LastNow() {
		t.Fatal("lastNow differs")
	}
}

func DecodeOrFail(t *testing.T, b []byte) *Entry {
	e, err := DecodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestTimeNeverGoesBack(t *testing.T) {
	s := NewState()
	s.Apply(1, &Entry{Type: EntryCommands, Now: t0, Cmds: [][][]byte{fields("SET k v PX 100")}})
	s.Apply(2, &Entry{Type: EntryCommands, Now: t0 + 200, Cmds: [][][]byte{fields("GET x")}})
	r := repliesOf(s.Apply(3, &Entry{Type: EntryCommands, Now: t0, Cmds: [][][]byte{fields("GET k")}}))
	if show(r[0]) != "nil" || s.LastNow() != t0+200 {
		t.Fatalf("GET after clock went back = %s, lastNow %d", show(r[0]), s.LastNow())
	}
	if got := show(replyOf(s.Read(t0, Lookup([]byte("get")), fields("GET k")))); got != "nil" {
		t.Fatalf("read with an old clock resurrected the key: %s", got)
	}
}

func TestApplyEntryTypes(t *testing.T) {
	s := NewState()
	r := repliesOf(s.Apply(1, &Entry{Type: EntryCommands, Now: t0, Cmds: [][][]byte{
		fields("SET a 1 PX 100"), fields("NOSUCH x y"), fields("GET"), fields("SET b 2 PX 100"), {}}}))
	want := `+OK -ERR unknown command 'NOSUCH', with args beginning with: 'x' 'y'  -ERR wrong number of arguments for 'get' command +OK -ERR unknown command '', with args beginning with: `
	if showAll(r) != want {
		t.Fatalf("replies = %q", showAll(r))
	}
	// b is rewritten before the expiry entry: only a goes.
	s.Apply(2, &Entry{Type: EntryCommands, Now: t0 + 50, Cmds: [][][]byte{fields("SET b 3")}})
	if r := s.Apply(3, &Entry{Type: EntryExpire, Now: t0 + 100, Cmds: [][][]byte{fields("a b none")}}); r != nil {
		t.Fatalf("expire replies = %v", r)
	}
	var n int
	s.View(func(st store.Reader) { n = st.Len() })
	if n != 1 {
		t.Fatalf("keys after expiry = %d", n)
	}
	if r, err := s.ApplyEntry(4, &Entry{Type: 0x7f | IgnoreUnknown}); r != nil || err != nil {
		t.Fatalf("ignorable entry: %v %v", r, err)
	}
	if _, err := s.ApplyEntry(5, &Entry{Type: 0x7f}); !errors.Is(err, ErrUnknownEntry) {
		t.Fatalf("unknown entry err = %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Apply of an unknown entry type did not panic")
		}
	}()
	s.Apply(6, &Entry{Type: 0x7e})
}

func TestReadRefusesWrites(t *testing.T) {
	s := NewState()
	if v := replyOf(s.Read(t0, Lookup([]byte("set")), fields("SET k v"))); !v.IsError() {
		t.Fatalf("Read ran a write: %s", show(v))
	}
}

func TestVersionAndTouched(t *testing.T) {
	h := newHarness(t)
	h.do("SET k v")
	h.now += 1000
	h.do("EXPIRE k 100")
	o := h.s.store.Get([]byte("k"), h.now)
	if o.Version != h.idx || o.Touched != h.now {
		t.Fatalf("version %d touched %d, want %d %d", o.Version, o.Touched, h.idx, h.now)
	}
	h.do("EXPIRE k 100 NX") // fails: changes nothing
	// Compared by value: a small string's Object is made anew by every Get
	// (store keeps it inline).
	if o2 := h.s.store.Get([]byte("k"), h.now); o2.Version != o.Version || o2.Touched != o.Touched || o2.ExpireAt != o.ExpireAt {
		t.Fatalf("a failed command changed the key: %+v, was %+v", o2, o)
	}
}

package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/slotraft/slotraft/resp"
)

// blkHarness applies entries with explicit times and terms.
type blkHarness struct {
	t    *testing.T
	s    *State
	idx  uint64
	now  int64
	term uint64
}

func newBlkHarness(t *testing.T) *blkHarness {
	return &blkHarness{t: t, s: NewState(), now: t0, term: 1}
}

// entry applies one entry of command lines and returns its result.
func (h *blkHarness) entry(lines ...string) *ApplyResult {
	h.t.Helper()
	e := &Entry{Type: EntryCommands, Now: h.now, Seed: h.idx, Term: h.term}
	for _, l := range lines {
		e.Cmds = append(e.Cmds, fields(l))
	}
	return h.apply(e)
}

func (h *blkHarness) apply(e *Entry) *ApplyResult {
	h.t.Helper()
	h.idx++
	if e.Term == 0 {
		e.Term = h.term
	}
	r, err := h.s.ApplyResult(h.idx, e)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// block applies one command that must block and returns its waiter.
func (h *blkHarness) block(line string) WaiterID {
	h.t.Helper()
	r := h.entry(line)
	id, ok := r.Outcomes[0].Waiter, r.Outcomes[0].Kind == OutcomeBlocked
	if !ok || len(r.Blocked) != 1 || r.Blocked[0].ID != id || id != (WaiterID{Index: h.idx}) {
		h.t.Fatalf("%q did not block: %s, blocked %v", line, show(repliesOf(r.Outcomes)[0]), r.Blocked)
	}
	return id
}

// showDeferred renders deferred replies as "index.pos=reply ...".
func showDeferred(ds []Deferred) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = fmt.Sprintf("%d.%d=%s", d.ID.Index, d.ID.Pos, show(replyOf(d.Outcome)))
	}
	return strings.Join(s, " ")
}

func showWaiters(ws []Blocked) string {
	s := make([]string, len(ws))
	for i, w := range ws {
		s[i] = fmt.Sprintf("%d.%d", w.ID.Index, w.ID.Pos)
	}
	return strings.Join(s, " ")
}

func TestBlockingFIFO(t *testing.T) {
	h := newBlkHarness(t)
	h.block("BLPOP k 0")    // 1
	h.block("BRPOP k x 0")  // 2
	h.block("BLPOP y k 10") // 3
	if got := showWaiters(h.s.Waiters()); got != "1.0 2.0 3.0" {
		t.Fatalf("waiters %s", got)
	}
	r := h.entry("RPUSH k a b")
	if show(repliesOf(r.Outcomes)[0]) != ":2" {
		t.Fatalf("RPUSH = %s", show(repliesOf(r.Outcomes)[0]))
	}
	if got := showDeferred(r.Deferred); got != `1.0=["k" "a"] 2.0=["k" "b"]` {
		t.Fatalf("deferred %s", got)
	}
	if got := showWaiters(h.s.Waiters()); got != "3.0" {
		t.Fatalf("waiters after push %s", got)
	}
	if got := h.read("EXISTS k"); got != ":0" {
		t.Fatalf("k left with %s", got)
	}
	// The third is served next, from its first non-empty key.
	r = h.entry("LPUSH k c", "LPUSH k d")
	if got := showDeferred(r.Deferred); got != `3.0=["k" "c"]` || h.read("LRANGE k 0 -1") != `["d"]` {
		t.Fatalf("deferred %s, k %s", got, h.read("LRANGE k 0 -1"))
	}
}

func (h *blkHarness) read(line string) string {
	args := fields(line)
	return show(replyOf(h.s.Read(h.now, Lookup(args[0]), args)))
}

func TestBlockingServedAtOnceAndNoBlock(t *testing.T) {
	h := newBlkHarness(t)
	r := h.entry("RPUSH k a", "BLPOP k 0", "BLPOP k 0", "RPUSH k b")
	if showAll(repliesOf(r.Outcomes)[:3]) != `:1 ["k" "a"] nil` || len(r.Blocked) != 1 || r.Blocked[0].ID != (WaiterID{1, 2}) {
		t.Fatalf("replies %s blocked %v", showAll(repliesOf(r.Outcomes)), r.Blocked)
	}
	// Served by a later command of the same entry.
	if got := showDeferred(r.Deferred); got != `1.2=["k" "b"]` {
		t.Fatalf("deferred %s", got)
	}
	if r.Outcomes[1].Kind != OutcomeReply {
		t.Fatal("a served command's outcome is not its reply")
	}
	// Errors and non-blocking commands never block.
	r = h.entry("BLPOP k -1", "BLPOP k x", "LPOP k", "SET s v", "BLPOP s 0")
	if len(r.Blocked) != 0 || !repliesOf(r.Outcomes)[0].IsError() || !repliesOf(r.Outcomes)[1].IsError() || !repliesOf(r.Outcomes)[4].IsError() {
		t.Fatalf("replies %s blocked %v", showAll(repliesOf(r.Outcomes)), r.Blocked)
	}
	// NoBlock (MULTI, scripts) answers the non-blocking form.
	c := &Ctx{Store: h.s.store, Now: h.now, Index: 99, NoBlock: true}
	res := &ApplyResult{}
	if v := h.s.maybeBlock(c, fields("BLPOP z 0"), 0, resp.NullArray(), 1, res); v.Kind != OutcomeReply || show(v.Reply) != "nil" || len(res.Blocked) != 0 {
		t.Fatalf("NoBlock blocked: %v", res.Blocked)
	}
}

func TestBlockingTimeouts(t *testing.T) {
	h := newBlkHarness(t)
	a := h.block("BLPOP k 0.5")
	b := h.block("BLMOVE k d LEFT LEFT 0.0001")
	c := h.block("BZPOPMIN z 0")
	ws := h.s.Waiters()
	if ws[0].Deadline != t0+500 || ws[1].Deadline != t0+1 || ws[2].Deadline != 0 || ws[0].Term != 1 {
		t.Fatalf("deadlines %+v", ws)
	}
	r := h.apply(UnblockEntry([]WaiterID{a, b, {Index: 77}}))
	if got := showDeferred(r.Deferred); got != "1.0=nil 2.0=nil" || r.Deferred[1].Outcome.Reply.Kind != resp.KindNullArray {
		t.Fatalf("unblock deferred %s", got)
	}
	if r := h.apply(UnblockEntry([]WaiterID{a})); len(r.Deferred) != 0 {
		t.Fatalf("second unblock: %s", showDeferred(r.Deferred))
	}
	if showWaiters(h.s.Waiters()) != "3.0" {
		t.Fatalf("waiters %s", showWaiters(h.s.Waiters()))
	}
	_ = c
	// A waiter whose deadline passed before a push times out instead of
	// taking the element.
	d := h.block("BLPOP k 0.1")
	h.now += 101
	r = h.entry("LPUSH k x")
	if got := showDeferred(r.Deferred); got != fmt.Sprintf("%d.0=nil", d.Index) || h.read("LLEN k") != ":1" {
		t.Fatalf("deferred %s, LLEN %s", got, h.read("LLEN k"))
	}
}

func TestBlockingChain(t *testing.T) {
	h := newBlkHarness(t)
	a := h.block("BLMOVE src mid LEFT RIGHT 0")
	b := h.block("BRPOPLPUSH mid dst 0")
	c := h.block("BLPOP dst 0")
	r := h.entry("LPUSH src x")
	want := fmt.Sprintf(`%d.0="x" %d.0="x" %d.0=["dst" "x"]`, a.Index, b.Index, c.Index)
	if got := showDeferred(r.Deferred); got != want {
		t.Fatalf("deferred %s, want %s", got, want)
	}
	if h.read("DBSIZE") != ":0" || len(h.s.Waiters()) != 0 {
		t.Fatalf("left %s keys, %d waiters", h.read("DBSIZE"), len(h.s.Waiters()))
	}
	// A waiter on a key that now holds another type stays.
	h.block("BLPOP w 0")
	if r := h.entry("SET w v"); len(r.Deferred) != 0 || len(h.s.Waiters()) != 1 {
		t.Fatalf("wrong type: %s", showDeferred(r.Deferred))
	}
}

func TestBlockingTerms(t *testing.T) {
	h := newBlkHarness(t)
	a := h.block("BLPOP k 0")
	b := h.block("BLPOP q 0")
	h.term = 2
	// A term-1 waiter is never served in term 2: the element stays.
	r := h.entry("RPUSH k x")
	if got := showDeferred(r.Deferred); got != fmt.Sprintf("%d.0=-%s", a.Index, ErrUnblocked.Error()) || h.read("LLEN k") != ":1" {
		t.Fatalf("deferred %s", got)
	}
	c := h.block("BLPOP q 0")
	r = h.apply(&Entry{Type: EntryClearWaiters})
	if got := showDeferred(r.Deferred); got != fmt.Sprintf("%d.0=-%s", b.Index, ErrUnblocked.Error()) {
		t.Fatalf("clear deferred %s", got)
	}
	if ws := h.s.Waiters(); len(ws) != 1 || ws[0].ID != c {
		t.Fatalf("waiters %s", showWaiters(ws))
	}
}

func TestBlockingZSet(t *testing.T) {
	if Lookup([]byte("zadd")) == nil {
		t.Skip("no sorted sets yet")
	}
	h := newBlkHarness(t)
	a := h.block("BZPOPMIN z 0")
	b := h.block("BZMPOP 0 2 y z MAX COUNT 5")
	r := h.entry("ZADD z 1 a 2 b 3 c")
	want := fmt.Sprintf(`%d.0=["z" "a" ,1] %d.0=["z" [["c" ,3] ["b" ,2]]]`, a.Index, b.Index)
	if got := showDeferred(r.Deferred); got != want {
		t.Fatalf("deferred %s, want %s", got, want)
	}
}

func TestBlockingSnapshot(t *testing.T) {
	var events []BlockEvent
	f := New(1, nil)
	f.SetBlockingHook(func(ev BlockEvent) { events = append(events, ev) })
	apply := func(f *FSM, idx uint64, term uint64, lines ...string) *ApplyResult {
		e := &Entry{Type: EntryCommands, Now: t0 + int64(idx), Seed: idx}
		for _, l := range lines {
			e.Cmds = append(e.Cmds, fields(l))
		}
		return f.Apply(&raft.Log{Index: idx, Term: term, Type: raft.LogCommand, Data: e.Encode()}).(*ApplyResult)
	}
	apply(f, 1, 3, "SET s v", "BLPOP k 0", "BLMOVE a k LEFT LEFT 2.5")
	apply(f, 2, 3, "BZPOPMAX z k 0", "BLMPOP 0 2 k a LEFT")
	if len(events) != 2 || len(events[0].Blocked) != 2 || events[0].Blocked[1].Deadline != t0+1+2500 || events[0].Blocked[1].Term != 3 {
		t.Fatalf("events %+v", events)
	}
	snap, _ := f.Snapshot()
	var buf bytes.Buffer
	if err := snap.Persist(&sink{Writer: &buf}); err != nil {
		t.Fatal(err)
	}
	var reset []BlockEvent
	g := New(1, nil)
	g.SetBlockingHook(func(ev BlockEvent) { reset = append(reset, ev) })
	if err := g.Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if len(reset) != 1 || !reset[0].Reset || showWaiters(reset[0].Blocked) != "1.1 1.2 2.0 2.1" {
		t.Fatalf("reset events %+v", reset)
	}
	if fmt.Sprint(f.state.Waiters()) != fmt.Sprint(g.state.Waiters()) || !bytes.Equal(dump(t, f.state), dump(t, g.state)) {
		t.Fatal("restored waiters or store differ")
	}
	// Both serve the same waiters the same way.
	ra := apply(f, 3, 3, "RPUSH k x y z w", "RPUSH a 1")
	rb := apply(g, 3, 3, "RPUSH k x y z w", "RPUSH a 1")
	if showDeferred(ra.Deferred) != showDeferred(rb.Deferred) || showDeferred(ra.Deferred) != `1.1=["k" "x"] 2.1=["k" ["y"]] 1.2="1"` {
		t.Fatalf("deferred %s vs %s", showDeferred(ra.Deferred), showDeferred(rb.Deferred))
	}
	// Corrupt waiters sections are refused.
	b := buf.Bytes()
	for name, bad := range map[string][]byte{
		"checksum":  flip(b, snapHeaderLen+6),
		"length":    setLen(b, 1<<31),
		"truncated": b[:snapHeaderLen+10],
	} {
		if err := g.Restore(io.NopCloser(bytes.NewReader(bad))); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0x40
	return c
}

func setLen(b []byte, n uint32) []byte {
	c := bytes.Clone(b)
	binary.BigEndian.PutUint32(c[snapHeaderLen:], n)
	return c
}

// TestSnapshotVersion1: a snapshot written before blocking commands (no
// waiters section) still restores.
func TestSnapshotVersion1(t *testing.T) {
	f := New(1, nil)
	applyLog(f, 1, &Entry{Type: EntryCommands, Now: t0, Cmds: [][][]byte{fields("SET k v")}})
	sn := f.state.Snapshot()
	var buf bytes.Buffer
	buf.WriteString(snapMagic)
	buf.WriteByte(1)
	_ = binary.Write(&buf, binary.BigEndian, sn.lastNow)
	if _, err := sn.view.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	g := New(1, nil)
	if err := g.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dump(t, f.state), dump(t, g.state)) || g.state.LastNow() != t0 || len(g.state.Waiters()) != 0 {
		t.Fatal("version 1 snapshot restored differently")
	}
}

// blockingEntries is a reproducible mix of blocking commands, pushes,
// unblocks and leader changes.
func blockingEntries(n int) []*Entry {
	r := rand.New(rand.NewPCG(7, 9))
	ops := []string{"BLPOP l%d l%d %d", "BRPOP l%d %d", "BLMOVE l%d l%d LEFT RIGHT %d", "BRPOPLPUSH l%d l%d 0",
		"BLMPOP %d 2 l%d l%d RIGHT COUNT 2", "LPUSH l%d a%d b%d", "RPUSH l%d c%d", "DEL l%d", "SET l%d x", "LMOVE l%d l%d LEFT LEFT"}
	now, term := t0, uint64(1)
	var out []*Entry
	var blocked []WaiterID
	for i := range n {
		now += int64(r.IntN(200))
		switch {
		case i%29 == 28:
			term++
			out = append(out, &Entry{Type: EntryClearWaiters, Now: now, Term: term})
			continue
		case i%11 == 10 && len(blocked) > 0:
			out = append(out, UnblockEntry([]WaiterID{blocked[r.IntN(len(blocked))], blocked[r.IntN(len(blocked))]}))
			out[len(out)-1].Now, out[len(out)-1].Term = now, term
			continue
		}
		e := &Entry{Type: EntryCommands, Now: now, Seed: r.Uint64(), Term: term}
		for j := 0; j <= r.IntN(3); j++ {
			line := fmt.Sprintf(ops[r.IntN(len(ops))], r.IntN(4), r.IntN(4), r.IntN(3))
			if strings.HasPrefix(line, "B") {
				blocked = append(blocked, WaiterID{Index: uint64(i + 1), Pos: uint32(j)})
			}
			e.Cmds = append(e.Cmds, fields(line))
		}
		out = append(out, e)
	}
	return out
}

func TestBlockingDeterminism(t *testing.T) {
	a, b := New(1, nil), New(1, nil)
	var evA, evB []string
	a.SetBlockingHook(func(ev BlockEvent) { evA = append(evA, fmt.Sprint(ev.Blocked), showDeferred(ev.Deferred)) })
	b.SetBlockingHook(func(ev BlockEvent) { evB = append(evB, fmt.Sprint(ev.Blocked), showDeferred(ev.Deferred)) })
	served := 0
	for i, e := range blockingEntries(600) {
		l := &raft.Log{Index: uint64(i + 1), Term: e.Term, Type: raft.LogCommand, Data: e.Encode()}
		ra := a.Apply(l).(*ApplyResult)
		rb := b.Apply(l).(*ApplyResult)
		if showAll(repliesOf(ra.Outcomes)) != showAll(repliesOf(rb.Outcomes)) {
			t.Fatalf("entry %d: replies differ", i)
		}
		served += len(ra.Deferred)
	}
	if strings.Join(evA, "|") != strings.Join(evB, "|") || served < 20 {
		t.Fatalf("events differ or too few ended waiters (%d)", served)
	}
	sa, sb := persist(t, a), persist(t, b)
	if !bytes.Equal(sa, sb) {
		t.Fatal("snapshots differ")
	}
	// A replica restored from the snapshot goes on identically.
	c := New(1, nil)
	if err := c.Restore(io.NopCloser(bytes.NewReader(sa))); err != nil {
		t.Fatal(err)
	}
	for i, e := range blockingEntries(700)[600:] {
		l := &raft.Log{Index: uint64(601 + i), Term: e.Term, Type: raft.LogCommand, Data: e.Encode()}
		ra, rc := a.Apply(l).(*ApplyResult), c.Apply(l).(*ApplyResult)
		if showAll(repliesOf(ra.Outcomes)) != showAll(repliesOf(rc.Outcomes)) || showDeferred(ra.Deferred) != showDeferred(rc.Deferred) {
			t.Fatalf("entry %d after restore differs", 600+i)
		}
	}
	if !bytes.Equal(persist(t, a), persist(t, c)) {
		t.Fatal("snapshots differ after restore")
	}
}

func persist(t *testing.T, f *FSM) []byte {
	snap, _ := f.Snapshot()
	var buf bytes.Buffer
	if err := snap.Persist(&sink{Writer: &buf}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func FuzzWaitersDecode(f *testing.F) {
	h := &blkHarness{t: &testing.T{}, s: NewState(), now: t0, term: 1}
	h.entry("BLPOP k 0", "BLMOVE a b LEFT LEFT 1")
	h.entry("BLMPOP 0 2 x y LEFT")
	f.Add(encodeWaiters(recordsOf(h.s.blk.sorted())))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		blk, err := decodeWaiters(b)
		if err != nil {
			return
		}
		if got := encodeWaiters(recordsOf(blk.sorted())); !bytes.Equal(got, b) {
			t.Fatalf("re-encoding differs")
		}
	})
}

// Pushes made by a script or a transaction wake blocked clients too, once
// the script or transaction is done (as Redis serves them after EXEC/EVAL).
func TestBlockingWokenByScript(t *testing.T) {
	h := newBlkHarness(t)
	h.block("BLPOP q 0") // 1
	r := h.apply(&Entry{Type: EntryCommands, Now: h.now, Cmds: [][][]byte{{
		[]byte("EVAL"), []byte("redis.call('RPUSH', KEYS[1], 'a') return redis.call('RPUSH', KEYS[1], 'b')"),
		[]byte("1"), []byte("q"),
	}}})
	if show(repliesOf(r.Outcomes)[0]) != ":2" {
		t.Fatalf("EVAL = %s", show(repliesOf(r.Outcomes)[0]))
	}
	if got := showDeferred(r.Deferred); got != `1.0=["q" "a"]` {
		t.Fatalf("deferred %s, want the waiter served by the script's push", got)
	}
	if got := h.read("LRANGE q 0 -1"); got != `["b"]` {
		t.Fatalf("q = %s", got)
	}
}

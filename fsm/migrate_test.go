package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
	"github.com/slotraft/slotraft/store"
)

// Keys tagged {a} live in slotA, {b} in slotB.
var (
	slotA = slots.Of([]byte("a"))
	slotB = slots.Of([]byte("b"))
)

// expand replaces $A and $B by the slots of {a} and {b}.
func expand(s string) string {
	return strings.NewReplacer("$A", strconv.Itoa(int(slotA)), "$B", strconv.Itoa(int(slotB))).Replace(s)
}

// migHarness drives a State with command entries and migrate entries.
type migHarness struct{ *blkHarness }

func newMigHarness(t *testing.T) migHarness { return migHarness{newBlkHarness(t)} }

// apply applies e at the harness's time unless it has one.
func (h migHarness) apply(e *Entry) *ApplyResult {
	h.t.Helper()
	if e.Now == 0 {
		e.Now = h.now
	}
	return h.blkHarness.apply(e)
}

// mig applies one EntryMigrate whose ops are the lines.
func (h migHarness) mig(lines ...string) *ApplyResult {
	h.t.Helper()
	e := &Entry{Type: EntryMigrate, Now: h.now}
	for _, l := range lines {
		e.Cmds = append(e.Cmds, fields(expand(l)))
	}
	return h.apply(e)
}

// step runs one line of the steps language and renders its result:
// "mig OP" a migrate op, "read CMD" through State.Read, "sleep N" moves
// the clock, "raw KEY" says whether KEY is stored (even expired),
// "waiters" lists the waiters, anything else is a command entry.
func (h migHarness) step(line string) string {
	h.t.Helper()
	line = expand(line)
	verb, rest, _ := strings.Cut(line, " ")
	switch verb {
	case "mig":
		return showAll(repliesOf(h.mig(rest).Outcomes))
	case "read":
		return h.read(rest)
	case "sleep":
		n, _ := strconv.ParseInt(rest, 10, 64)
		h.blkHarness.now += n
		return ""
	case "raw":
		if h.s.store.GetRaw([]byte(rest)) != nil {
			return "present"
		}
		return "absent"
	case "waiters":
		return showWaiters(h.s.Waiters())
	}
	return show(repliesOf(h.entry(line).Outcomes)[0])
}

func (h migHarness) run(steps []step) {
	h.t.Helper()
	for i, st := range steps {
		got, want := h.step(st.cmd), expand(st.want)
		if prefix, ok := strings.CutSuffix(want, "*"); ok && strings.HasPrefix(got, prefix) {
			continue
		}
		if got != want {
			h.t.Errorf("step %d %q: got %s, want %s", i, st.cmd, got, want)
		}
	}
}

func TestMigrateOps(t *testing.T) {
	cases := map[string][]step{
		"out then in": {
			{"SET {a}k v", "+OK"},
			{"mig out $A 7", "+OK"},
			{"mig out $A 8", "+OK"}, // a new target replaces the old
			{"mig freeze $A {a}k", ":1"},
			{"mig out $A 8", "+OK"}, // a repeated out keeps the frozen keys
			{"SET {a}k w", "-" + resp.ErrTryAgain.Error()},
			{"mig in $A", "+OK"},
			{"SET {a}k w", "+OK"},
			{"mig drop $A {a}k", ":0"}, // no longer frozen
			{"GET {a}k", `"w"`},
		},
		"freeze needs an out-mark": {
			{"SET {a}k v", "+OK"},
			{"mig freeze $A {a}k", fmt.Sprintf("-ERR migrate freeze: slot %d is not migrating out", slotA)},
			{"SET {a}k w", "+OK"},
		},
		"freeze live, expired, absent, other slot": {
			{"SET {a}live v", "+OK"},
			{"SET {a}old v PX 10", "+OK"},
			{"SET {b}other v", "+OK"},
			{"sleep 20", ""},
			{"mig out $A 2", "+OK"},
			{"mig freeze $A {a}live {a}old {a}none {b}other", ":1"},
			{"raw {a}old", "absent"}, // deleted as an expiry
			{"mig freeze $A {a}live", ":1"},
			{"SET {b}other w", "+OK"}, // not frozen: another slot
		},
		"drop only frozen keys": {
			{"SET {a}1 v", "+OK"},
			{"SET {a}2 v", "+OK"},
			{"mig out $A 2", "+OK"},
			{"mig freeze $A {a}1", ":1"},
			{"mig drop $A {a}1 {a}2 {a}3", ":1"},
			{"raw {a}1", "absent"},
			{"raw {a}2", "present"},
			{"mig drop $A {a}1", ":0"},
			{"GET {a}1", "-ASK $A group:2"},
		},
		"drop of a frozen key that expired": {
			{"SET {a}1 v PX 10", "+OK"},
			{"mig out $A 2", "+OK"},
			{"mig freeze $A {a}1", ":1"},
			{"sleep 20", ""},
			{"mig drop $A {a}1", ":1"},
			{"raw {a}1", "absent"},
		},
		"bad ops change nothing": {
			{"mig nope 1", `-ERR unknown migrate op "nope"`},
			{"mig out 16384 1", `-ERR migrate out: bad slot "16384"`},
			{"mig out x 1", `-ERR migrate out: bad slot "x"`},
			{"mig out -1 1", `-ERR migrate out: bad slot "-1"`},
			{"mig out $A 4294967296", `-ERR migrate out: bad group "4294967296"`},
			{"mig out $A", `-ERR wrong number of arguments for migrate op "out"`},
			{"mig in", `-ERR wrong number of arguments for migrate op "in"`},
			{"mig in $A 1", `-ERR wrong number of arguments for migrate op "in"`},
			{"mig freeze", `-ERR wrong number of arguments for migrate op "freeze"`},
			{"mig drop x", `-ERR migrate drop: bad slot "x"`},
			{"mig OUT $A 1", `-ERR unknown migrate op "OUT"`},
			{"GET {a}k", "nil"}, // nothing is migrating
		},
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) { newMigHarness(t).run(steps) })
	}
}

func TestMigrateEntryOfSeveralOps(t *testing.T) {
	h := newMigHarness(t)
	h.entry("SET {a}k v")
	r := h.mig("out $A 3", "freeze $A {a}k", "drop $A {a}k", "in $A", "")
	if got := showAll(repliesOf(r.Outcomes)); got != "+OK :1 :1 +OK -ERR empty migrate op" {
		t.Fatalf("replies %s", got)
	}
	// The refused op is the entry's typed error; the others' are replies.
	if !errors.Is(r.Err, ErrOpRefused) || !strings.Contains(r.Err.Error(), "empty migrate op") {
		t.Fatalf("entry error %v, want the refused op wrapped in ErrOpRefused", r.Err)
	}
	if ok := h.mig("in $A"); ok.Err != nil {
		t.Fatalf("entry error %v for ops that all succeeded", ok.Err)
	}
	if h.s.MigratedKeys() != 1 || len(h.s.OutSlots()) != 0 {
		t.Fatalf("migrated %d, out %v", h.s.MigratedKeys(), h.s.OutSlots())
	}
	if EntryMigrate&IgnoreUnknown != 0 {
		t.Fatal("EntryMigrate may be skipped")
	}
}

// records exports keys of a source state with the given commands run.
func records(t *testing.T, lines []string, keys ...string) [][]byte {
	src := newMigHarness(t)
	for _, l := range lines {
		src.entry(l)
	}
	ks := make([][]byte, len(keys))
	for i, k := range keys {
		ks[i] = []byte(k)
	}
	return src.s.ExportRecords(src.now, ks)
}

func TestMigrateImport(t *testing.T) {
	recs := records(t, []string{"SET {a}s new PXAT " + strconv.FormatInt(t0+1000, 10), "RPUSH {a}l x y",
		"SET {a}old gone PXAT " + strconv.FormatInt(t0+10, 10), "ZADD {a}z 1 m"}, "{a}s", "{a}l", "{a}old", "{a}z", "{a}none")
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4 (the absent key left out)", len(recs))
	}
	h := newMigHarness(t)
	h.entry("SET {a}s old")
	h.entry("SET {a}old kept")
	h.now += 20 // {a}old's record has expired by now
	r := h.apply(ImportEntry(slotA, 1, 5, 1, recs))
	if show(repliesOf(r.Outcomes)[0]) != ":3" {
		t.Fatalf("import = %s", show(repliesOf(r.Outcomes)[0]))
	}
	for _, c := range []step{
		{"GET {a}s", `"new"`}, {"PEXPIRETIME {a}s", ":" + strconv.FormatInt(t0+1000, 10)},
		{"LRANGE {a}l 0 -1", `["x" "y"]`}, {"GET {a}old", `"kept"`}, {"ZSCORE {a}z m", `,1`},
	} {
		if got := h.read(c.cmd); got != c.want {
			t.Errorf("%s = %s, want %s", c.cmd, got, c.want)
		}
	}
	if o := h.s.store.GetRaw([]byte("{a}l")); o.Version != h.idx || o.Touched != h.now {
		t.Errorf("imported key stamped %d/%d, want %d/%d", o.Version, o.Touched, h.idx, h.now)
	}
}

// TestMigrateImportRefused: a bad record, a key of another slot, bad
// fence arguments or a stale fence fail the whole op; nothing is installed.
func TestMigrateImportRefused(t *testing.T) {
	recs := records(t, []string{"SET {a}1 v", "SET {a}2 v", "SET {b}1 v"}, "{a}1", "{a}2", "{b}1")
	h := newMigHarness(t)
	h.apply(ImportEntry(slotA, 1, 5, 10, nil)) // the last import from group 1: term 5, seq 10
	stale := "-ERR migrate import: stale import*"
	for _, c := range []struct {
		e    *Entry
		want string
	}{
		{ImportEntry(slotA, 1, 5, 11, [][]byte{recs[0], []byte("junk")}), "-ERR migrate import: record 1: store: bad migration record*"},
		{ImportEntry(slotA, 1, 5, 11, [][]byte{recs[0], nil}), "-ERR migrate import: record 1: store: bad migration record*"},
		{ImportEntry(slotA, 1, 5, 11, [][]byte{recs[0], recs[2]}), `-ERR migrate import: record 1: key "{b}1" is not of slot*`},
		{ImportEntry(slotA, 1, 5, 10, recs[:1]), stale},
		{ImportEntry(slotA, 1, 5, 9, recs[:1]), stale},
		{ImportEntry(slotA, 1, 4, 99, recs[:1]), stale},
		{migrateEntry(fields(expand("import $A x 5 11"))...), "-ERR migrate import: bad group, term or sequence*"},
		{migrateEntry(fields(expand("import $A 1 5 -1"))...), "-ERR migrate import: bad group, term or sequence*"},
		{migrateEntry(fields(expand("import $A 1 5"))...), `-ERR wrong number of arguments for migrate op "import"`},
	} {
		got := show(repliesOf(h.apply(c.e).Outcomes)[0])
		if prefix, ok := strings.CutSuffix(c.want, "*"); (ok && !strings.HasPrefix(got, prefix)) || (!ok && got != c.want) {
			t.Errorf("%q = %s, want %s", c.e.Cmds[0][:5], got, c.want)
		}
	}
	if h.s.store.Len() != 0 {
		t.Fatalf("a refused import installed %d keys", h.s.store.Len())
	}
	// Later fences, and other sources, are taken.
	for _, e := range []*Entry{
		ImportEntry(slotA, 1, 5, 11, recs[:1]), ImportEntry(slotA, 1, 6, 1, recs[1:2]),
		ImportEntry(slotA, 2, 1, 1, recs[:1]), ImportEntry(slotA, 1, 6, 2, nil),
	} {
		if got := show(repliesOf(h.apply(e).Outcomes)[0]); !strings.HasPrefix(got, ":") {
			t.Errorf("%q = %s", e.Cmds[0][:5], got)
		}
	}
}

// TestMigrateImportServesWaiters: a client blocked in the target on a key
// being imported is served by the import.
func TestMigrateImportServesWaiters(t *testing.T) {
	recs := records(t, []string{"RPUSH {a}l x"}, "{a}l")
	h := newMigHarness(t)
	id := h.block("BLPOP {a}l 0")
	r := h.apply(ImportEntry(slotA, 1, 1, 1, recs))
	if showDeferred(r.Deferred) != fmt.Sprintf(`%d.0=["{a}l" "x"]`, id.Index) {
		t.Fatalf("deferred %s", showDeferred(r.Deferred))
	}
}

func TestMigrateRouting(t *testing.T) {
	tryAgain := "-" + resp.ErrTryAgain.Error()
	ask := "-ASK $A group:9"
	// Every case starts from: {a}live and {a}frozen live, {a}exp expired,
	// {b}x live in a slot that is not migrating; slot A out to group 9,
	// {a}frozen frozen.
	setup := []string{"SET {a}live v", "SET {a}frozen f", "SET {a}exp v PX 10", "SET {b}x 1", "RPUSH {a}list e",
		"sleep 20", "mig out $A 9", "mig freeze $A {a}frozen"}
	cases := map[string][]step{
		"single-key write": {
			{"SET {a}live w", "+OK"}, {"SET {a}absent w", ask}, {"SET {a}exp w", ask}, {"INCR {a}absent", ask},
		},
		"single-key read": {
			{"GET {a}live", `"v"`}, {"GET {a}absent", ask}, {"GET {a}exp", ask},
			{"read GET {a}live", `"v"`}, {"read GET {a}absent", ask}, {"read GET {a}exp", ask},
		},
		"multi-key": {
			{"MGET {a}live {a}absent", tryAgain}, {"MSET {a}live 1 {a}absent 2", tryAgain},
			{"read MGET {a}live {a}absent", tryAgain}, {"MGET {a}absent {a}exp", ask},
			{"MGET {a}live {a}frozen", `["v" "f"]`}, {"DEL {a}live {a}absent", tryAgain},
		},
		"frozen": {
			{"SET {a}frozen w", tryAgain}, {"DEL {a}frozen", tryAgain}, {"MSET {a}live 1 {a}frozen 2", tryAgain},
			{"GET {a}frozen", `"f"`}, {"read GET {a}frozen", `"f"`}, {"read STRLEN {a}frozen", ":1"},
		},
		"other slots run": {
			{"SET {b}x 2", "+OK"}, {"GET {b}y", "nil"}, {"MGET {a}live {b}x", tryAgain},
		},
		"keyless commands run": {
			{"DBSIZE", ":5"}, {"read DBSIZE", ":5"},
		},
		"scripts": {
			{"EVAL return~1 1 {a}absent", ask}, {"EVAL return~1 1 {a}live", ":1"},
			{"EVAL return~1 1 {a}frozen", tryAgain}, {"EVAL_RO return~1 1 {a}frozen", ":1"},
			{"read EVAL_RO return~1 1 {a}absent", ask},
			// Every command a script calls is checked too.
			{"EVAL return~redis.call('GET','{a}absent') 1 {a}live", "-ERR Script attempted to access a non local key*"},
			{"EVAL return~redis.call('SET','{a}frozen','x') 1 {a}live", "-ERR Script attempted to access a non local key*"},
			{"EVAL return~redis.call('GET','{a}frozen') 1 {a}live", `"f"`},
			{"read EVAL_RO return~redis.call('GET','{a}exp') 1 {a}live", "-ERR Script attempted to access a non local key*"},
			{"EVAL return~redis.call('GET','{b}x') 0", "-ERR Script attempted to access a non local key*"},
		},
		"blocking": {
			{"BLPOP {a}none 0", ask}, {"waiters", ""}, {"BLPOP {a}list 0", `["{a}list" "e"]`},
			{"BLMOVE {a}list {a}none LEFT LEFT 0", ask}, {"BLPOP {a}none {a}live 0", tryAgain}, {"waiters", ""},
		},
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) {
			h := newMigHarness(t)
			for _, l := range setup {
				h.step(l)
			}
			h.run(steps)
		})
	}
}

func TestMigrateRoutingExec(t *testing.T) {
	h := newMigHarness(t)
	for _, l := range []string{"SET {a}live v", "SET {a}frozen f", "mig out $A 4", "mig freeze $A {a}frozen"} {
		h.step(l)
	}
	exec := func(lines ...string) string {
		cmds := make([][][]byte, len(lines))
		for i, l := range lines {
			cmds[i] = fields(expand(l))
		}
		return show(repliesOf(h.apply(&Entry{Type: EntryCommands, Now: h.now, Cmds: [][][]byte{ExecCommand(nil, cmds)}}).Outcomes)[0])
	}
	tryAgain := "-" + resp.ErrTryAgain.Error()
	for _, c := range []struct {
		lines []string
		want  string
	}{
		{[]string{"SET {a}new 1", "INCR {a}new2"}, expand("-ASK $A group:4")},
		{[]string{"GET {a}live", "SET {a}live w"}, `["v" +OK]`},
		{[]string{"GET {a}live", "SET {a}new 1"}, tryAgain},
		{[]string{"GET {a}frozen", "GET {a}live"}, `["f" "w"]`},
		{[]string{"GET {a}live", "SET {a}frozen x"}, tryAgain},
		{[]string{"DBSIZE"}, `[:2]`},
		{[]string{"NOSUCH {a}x", "GET {a}live"}, `[-ERR unknown command 'NOSUCH', with args beginning with: '{a}x'  "w"]`},
	} {
		if got := exec(c.lines...); got != c.want {
			t.Errorf("exec %q = %s, want %s", c.lines, got, c.want)
		}
	}
	// An undecodable payload has no keys: it fails as it would anyway.
	r := h.apply(&Entry{Type: EntryCommands, Now: h.now, Cmds: [][][]byte{{[]byte("exec"), []byte("junk")}}})
	if !strings.HasPrefix(show(repliesOf(r.Outcomes)[0]), "-ERR") {
		t.Fatalf("bad exec = %s", show(repliesOf(r.Outcomes)[0]))
	}
}

// TestMigrateEndsWaiters: a waiter whose keys leave (or are absent when
// the slot starts migrating) gets the ask reply instead of waiting in the
// source forever.
func TestMigrateEndsWaiters(t *testing.T) {
	h := newMigHarness(t)
	list := h.block(`BLPOP {a}q 0`)
	other := h.block(`BLPOP {b}q 0`)
	h.entry("XADD {a}s 1-1 f v")
	stream := h.block(`XREAD BLOCK 0 STREAMS {a}s $`)
	r := h.mig("out $A 5")
	if got := showDeferred(r.Deferred); got != expand(fmt.Sprintf("%d.0=-ASK $A group:5", list.Index)) {
		t.Fatalf("out ended %s", got)
	}
	if got := showWaiters(h.s.Waiters()); got != fmt.Sprintf("%d.0 %d.0", other.Index, stream.Index) {
		t.Fatalf("waiters %s", got)
	}
	h.mig("freeze $A {a}s")
	r = h.mig("drop $A {a}s")
	if got := showDeferred(r.Deferred); got != expand(fmt.Sprintf("%d.0=-ASK $A group:5", stream.Index)) {
		t.Fatalf("drop ended %s", got)
	}
}

// TestMigrateServeChecks: a waiter that a push would serve runs the
// routing check first: here one of its keys was deleted since it blocked,
// so it ends with TRYAGAIN instead of running in the source.
func TestMigrateServeChecks(t *testing.T) {
	h := newMigHarness(t)
	h.entry("XADD {a}s1 1-1 f v")
	h.entry("XADD {a}s2 1-1 f v")
	id := h.block("XREAD BLOCK 0 STREAMS {a}s1 {a}s2 $ $")
	if r := h.mig("out $A 5"); len(r.Deferred) != 0 {
		t.Fatalf("out ended %s: all its keys are live", showDeferred(r.Deferred))
	}
	h.entry("DEL {a}s2")
	r := h.entry("XADD {a}s1 2-1 f v")
	if got := showDeferred(r.Deferred); got != fmt.Sprintf("%d.0=-%s", id.Index, resp.ErrTryAgain.Error()) {
		t.Fatalf("served %s", got)
	}
}

func TestMigrateAccessors(t *testing.T) {
	h := newMigHarness(t)
	for i := range 150 {
		h.entry(fmt.Sprintf("SET {a}%03d v", i))
	}
	h.entry("SET {a}exp v PX 10")
	h.entry("SET {b}x v")
	h.now += 20
	if _, ok := h.s.MigratingOut(slotA); ok {
		t.Fatal("migrating before out")
	}
	h.mig("out $A 6", "out $B 7")
	if gid, ok := h.s.MigratingOut(slotA); !ok || gid != 6 {
		t.Fatalf("MigratingOut = %d %v", gid, ok)
	}
	out := h.s.OutSlots()
	out[1] = 1 // a copy
	if len(h.s.OutSlots()) != 2 {
		t.Fatalf("OutSlots %v", h.s.OutSlots())
	}
	if n := len(h.s.LiveKeysInSlot(h.now, slotA, 1000)); n != 150 {
		t.Fatalf("LiveKeysInSlot: %d keys, want 150", n)
	}
	changed := h.s.FrozenChanged()
	h.mig("freeze $A {a}010 {a}002 {a}001")
	select {
	case <-changed:
	default:
		t.Fatal("FrozenChanged not closed by freeze")
	}
	frozen := h.s.Frozen(slotA)
	if got := fmt.Sprintf("%q", frozen); got != `["{a}001" "{a}002" "{a}010"]` {
		t.Fatalf("Frozen = %s", got)
	}
	frozen[0][0] = 'X' // a copy
	if !h.s.FrozenIn([][]byte{[]byte("{b}x"), []byte("{a}001")}) || h.s.FrozenIn([][]byte{[]byte("{a}003")}) {
		t.Fatal("FrozenIn")
	}
	live := h.s.LiveKeysInSlot(h.now, slotA, 5)
	if got := len(live); got != 5 || slices.ContainsFunc(live, func(k []byte) bool { return h.s.FrozenIn([][]byte{k}) }) {
		t.Fatalf("LiveKeysInSlot(5) = %q", live)
	}
	if n := len(h.s.LiveKeysInSlot(h.now, slotA, 1000)); n != 147 || h.s.LiveKeysInSlot(h.now, slotA, 0) != nil {
		t.Fatalf("LiveKeysInSlot: %d keys, want 147", n)
	}
	recs := h.s.ExportRecords(h.now, [][]byte{[]byte("{a}001"), []byte("{a}exp"), []byte("{a}none")})
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	if k, o, err := store.DecodeRecord(recs[0]); err != nil || string(k) != "{a}001" || string(o.Str) != "v" {
		t.Fatalf("record %q %v %v", k, o, err)
	}
	changed = h.s.FrozenChanged()
	h.mig("out $A 6") // no change to the frozen keys
	select {
	case <-changed:
		t.Fatal("FrozenChanged closed without a change")
	default:
	}
	h.mig("drop $A {a}001 {a}002")
	<-changed
	if h.s.MigratedKeys() != 2 || len(h.s.Frozen(slotA)) != 1 {
		t.Fatalf("migrated %d frozen %q", h.s.MigratedKeys(), h.s.Frozen(slotA))
	}
	changed = h.s.FrozenChanged()
	h.mig("in $A")
	<-changed
	if len(h.s.Frozen(slotA)) != 0 || h.s.FrozenIn([][]byte{[]byte("{a}010")}) {
		t.Fatal("in kept frozen keys")
	}
}

func TestMigrateEntryConstructors(t *testing.T) {
	keys := [][]byte{[]byte("k1"), []byte("k2")}
	for _, c := range []struct {
		e    *Entry
		want string
	}{
		{MigrateOutEntry(12, 34), `["out" "12" "34"]`},
		{MigrateInEntry(16383), `["in" "16383"]`},
		{FreezeEntry(5, keys), `["freeze" "5" "k1" "k2"]`},
		{DropEntry(5, keys), `["drop" "5" "k1" "k2"]`},
		{ImportEntry(5, 2, 3, 4, keys), `["import" "5" "2" "3" "4" "k1" "k2"]`},
	} {
		if c.e.Type != EntryMigrate || len(c.e.Cmds) != 1 || fmt.Sprintf("%q", c.e.Cmds[0]) != c.want {
			t.Errorf("entry %d %q, want %s", c.e.Type, c.e.Cmds, c.want)
		}
	}
}

// migratedState applies a mix of commands and migrate ops.
func migratedState(t *testing.T) migHarness {
	h := newMigHarness(t)
	for i := range 20 {
		h.entry(fmt.Sprintf("SET {a}%d v%d", i, i))
	}
	h.entry("RPUSH {a}l x")
	h.mig("out $A 3", "out $B 4", "out 0 1")
	h.mig("freeze $A {a}1 {a}2 {a}l {a}3", "freeze $B {b}none")
	h.mig("drop $A {a}1 {a}2")
	h.mig("freeze $A {a}4 {a}5")
	h.apply(ImportEntry(slotB, 7, 2, 3, nil))
	h.apply(ImportEntry(slotA, 2, 1, 1, nil))
	h.apply(ImportEntry(slotA, 1, 1, 1, nil))
	return h
}

func TestMigrateSnapshotRoundTrip(t *testing.T) {
	h := migratedState(t)
	f := &FSM{group: 1, logger: New(1, nil).logger, state: h.s}
	data := persist(t, f)
	g := New(1, nil)
	applyLog(g, 1, MigrateOutEntry(99, 1)) // replaced by Restore
	changed := g.state.FrozenChanged()
	if err := g.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	<-changed
	if !bytes.Equal(g.state.migrationSection(), h.s.migrationSection()) || !bytes.Equal(dump(t, g.state), dump(t, h.s)) {
		t.Fatal("restored state differs")
	}
	if got := show(repliesOf(applyLog(g, 2, ImportEntry(slotA, 2, 1, 1, nil)).Outcomes)[0]); !strings.HasPrefix(got, "-ERR migrate import: stale") {
		t.Fatalf("the restored fence took %s", got)
	}
	if _, ok := g.state.MigratingOut(99); ok || g.state.MigratedKeys() != 2 ||
		fmt.Sprintf("%q", g.state.Frozen(slotA)) != `["{a}3" "{a}4" "{a}5" "{a}l"]` {
		t.Fatalf("restored out %v migrated %d frozen %q", g.state.OutSlots(), g.state.MigratedKeys(), g.state.Frozen(slotA))
	}
	// A version 5 snapshot (no migration section) restores with none.
	if err := g.Restore(io.NopCloser(bytes.NewReader(asVersion(t, data, 5)))); err != nil {
		t.Fatal(err)
	}
	if len(g.state.OutSlots()) != 0 || g.state.MigratedKeys() != 0 || !bytes.Equal(dump(t, g.state), dump(t, h.s)) {
		t.Fatal("version 5 snapshot restored with migration state")
	}
}

func TestMigrationSectionBad(t *testing.T) {
	uv := func(vs ...uint64) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.AppendUvarint(b, v)
		}
		return b
	}
	key := func(k string) []byte { return append(uv(uint64(len(k))), k...) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	a, b := uint64(slotA), uint64(slotB)
	good := cat(uv(2, b, 1, a, 2, 2), key("{b}1"), key("{a}1"), uv(2, a, 1, 5, 6, a, 2, 0, 0), uv(7))
	if _, err := decodeMigration(good); err != nil {
		t.Fatalf("good section refused: %v", err)
	}
	for name, in := range map[string][]byte{
		"empty":               nil,
		"slot out of range":   uv(1, 16384, 1, 0, 0),
		"group out of range":  uv(1, 1, 1<<32, 0, 0),
		"slots out of order":  uv(2, a, 1, b, 2, 0, 0),
		"duplicate slot":      uv(2, a, 1, a, 2, 0, 0),
		"key of no out-mark":  cat(uv(1, a, 1, 1), key("{b}1"), uv(0, 0)),
		"keys out of order":   cat(uv(1, a, 1, 2), key("{a}2"), key("{a}1"), uv(0, 0)),
		"duplicate key":       cat(uv(1, a, 1, 2), key("{a}1"), key("{a}1"), uv(0, 0)),
		"slots of keys order": cat(uv(2, b, 1, a, 2, 2), key("{a}1"), key("{b}1"), uv(0, 0)),
		"fences out of order": uv(0, 0, 2, a, 2, 1, 1, a, 1, 1, 1, 0),
		"duplicate fence":     uv(0, 0, 2, a, 2, 1, 1, a, 2, 1, 2, 0),
		"fence group range":   uv(0, 0, 1, a, 1<<32, 1, 1, 0),
		"fence slot range":    uv(0, 0, 1, 16384, 1, 1, 1, 0),
		"truncated fence":     uv(0, 0, 1, a, 1, 1),
		"truncated key":       cat(uv(1, a, 1, 1, 5), []byte("{a}")),
		"no migrated count":   uv(0, 0, 0),
		"trailing bytes":      append(bytes.Clone(good), 0),
	} {
		if _, err := decodeMigration(in); !errors.Is(err, ErrBadEntry) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Framed: a flipped byte fails the checksum.
	framed := appendChecked(nil, good)
	framed[5] ^= 1
	if _, err := readMigrationSection(bytes.NewReader(framed)); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("checksum: %v", err)
	}
}

func FuzzMigrationSection(f *testing.F) {
	f.Add(migratedState(&testing.T{}).s.migrationSection())
	f.Add([]byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeMigration(data)
		if err != nil {
			return
		}
		s := NewState()
		s.mig = m
		if !bytes.Equal(s.migrationSection(), data) {
			t.Fatalf("accepted section re-encodes differently")
		}
	})
}

// FuzzMigrateOps: no op, whatever its bytes, panics, and a second State
// applying the same entries ends identical.
func FuzzMigrateOps(f *testing.F) {
	f.Add([]byte("freeze\x00" + strconv.Itoa(int(slotA)) + "\x00{a}1"))
	f.Add([]byte("import\x00" + strconv.Itoa(int(slotA)) + "\x001\x002\x003\x00\x01\x01\x03{a}\x00\x00\x00\x01v"))
	f.Add([]byte("out\x00" + strconv.Itoa(int(slotA)) + "\x007"))
	f.Fuzz(func(t *testing.T, data []byte) {
		op := bytes.Split(data, []byte{0})
		var states [2]*State
		for i := range states {
			h := newMigHarness(t)
			h.entry("SET {a}1 v")
			h.mig("out $A 2")
			h.apply(&Entry{Type: EntryMigrate, Now: h.now, Cmds: [][][]byte{op}})
			h.entry("SET {a}1 w")
			states[i] = h.s
		}
		if !bytes.Equal(states[0].migrationSection(), states[1].migrationSection()) {
			t.Fatal("states differ")
		}
	})
}

// migrateEntries is a random mix of commands and migrate ops on keys of
// slots A and B.
func migrateEntries(n int) []*Entry {
	r := rand.New(rand.NewPCG(3, 4))
	now := t0
	out := make([]*Entry, 0, n)
	for range n {
		now += int64(r.IntN(30))
		k := []byte(fmt.Sprintf("{%c}%d", "ab"[r.IntN(2)], r.IntN(6)))
		slot := slots.Of(k)
		var e *Entry
		switch r.IntN(10) {
		case 0:
			e = MigrateOutEntry(slot, uint32(r.IntN(3)+1))
		case 1:
			e = MigrateInEntry(slot)
		case 2, 3:
			e = FreezeEntry(slot, [][]byte{k, []byte("{a}1")})
		case 4:
			e = DropEntry(slot, [][]byte{k, []byte("{b}1")})
		case 5:
			exp := now + int64(r.IntN(100)) - 20
			rec := store.EncodeRecord(k, &store.Object{Type: store.TypeString, Str: []byte("i"), ExpireAt: exp})
			e = ImportEntry(slot, 1, uint64(r.IntN(3)), uint64(r.IntN(1000)), [][]byte{rec}) // sometimes stale
		default:
			lines := []string{"SET K v PX " + strconv.Itoa(r.IntN(100)+1), "GET K", "DEL K", "RPUSH K x", "INCR K"}
			line := strings.ReplaceAll(lines[r.IntN(len(lines))], "K", string(k))
			e = &Entry{Type: EntryCommands, Cmds: [][][]byte{fields(line)}}
		}
		e.Now, e.Seed = now, r.Uint64()
		out = append(out, e)
	}
	return out
}

func TestMigrateDeterminism(t *testing.T) {
	a, b := NewState(), NewState()
	for i, e := range migrateEntries(2000) {
		ra := repliesOf(a.Apply(uint64(i+1), e))
		rb := repliesOf(b.Apply(uint64(i+1), DecodeOrFail(t, e.Encode())))
		if showAll(ra) != showAll(rb) {
			t.Fatalf("entry %d: replies differ: %s vs %s", i, showAll(ra), showAll(rb))
		}
	}
	if !bytes.Equal(dump(t, a), dump(t, b)) || !bytes.Equal(a.migrationSection(), b.migrationSection()) {
		t.Fatal("states differ")
	}
	if a.MigratedKeys() == 0 || a.store.Len() == 0 {
		t.Fatalf("%d keys dropped, %d left: a weak test", a.MigratedKeys(), a.store.Len())
	}
}

package fsm

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/resp"
)

// multiExec applies one exec entry with the given watches and command lines.
func (h *harness) multiExec(watches []Watch, lines ...string) string {
	cmds := make([][][]byte, len(lines))
	for i, l := range lines {
		cmds[i] = fields(l)
	}
	return show(h.apply(ExecCommand(watches, cmds)))
}

// multiWatch observes keys as WATCH does on the leader.
func (h *harness) multiWatch(keys ...string) []Watch {
	ks := make([][]byte, len(keys))
	for i, k := range keys {
		ks[i] = []byte(k)
	}
	return h.s.Observe(h.now, ks)
}

func TestMultiExecRunsAllInOrder(t *testing.T) {
	h := newHarness(t)
	h.do("SET a x")
	got := h.multiExec(nil, "INCR {t}n", "INCR {t}n", "GET {t}n", "LPUSH {t}l v", "BLPOP {t}empty 0", "INCR a", "SET {t}s y", "GET {t}s")
	want := `[:1 :2 "2" :1 nil -ERR value is not an integer or out of range +OK "y"]`
	if got != want {
		t.Fatalf("exec = %s, want %s", got, want)
	}
	// The failing INCR changed nothing; the others did.
	if g := h.do("GET a"); g != `"x"` {
		t.Fatalf("a = %s", g)
	}
	// A blocking command inside the transaction never blocked.
	if n := len(h.s.Waiters()); n != 0 {
		t.Fatalf("%d waiters after exec", n)
	}
	// Unknown commands and wrong arity that slipped through are errors in place.
	if g := h.multiExec(nil, "NOSUCH x", "GET", "SET k v"); !strings.HasPrefix(g, "[-ERR unknown command 'NOSUCH'") || !strings.HasSuffix(g, "-ERR wrong number of arguments for 'get' command +OK]") {
		t.Fatalf("exec = %s", g)
	}
	if g := h.multiExec(nil, "EXEC x"); g != "[-ERR EXEC is not allowed inside a transaction]" {
		t.Fatalf("nested exec = %s", g)
	}
	if g := h.multiExec(nil); g != "[]" {
		t.Fatalf("empty exec = %s", g)
	}
}

func TestMultiWatch(t *testing.T) {
	cases := []struct {
		name  string
		setup string // before WATCH
		keys  []string
		// between WATCH and EXEC; "sleep N" advances the clock
		between []string
		abort   bool
	}{
		{"untouched", "SET k 1", []string{"k"}, nil, false},
		{"modified", "SET k 1", []string{"k"}, []string{"SET k 2"}, true},
		{"same value rewritten", "SET k 1", []string{"k"}, []string{"SET k 1"}, true},
		{"deleted", "SET k 1", []string{"k"}, []string{"DEL k"}, true},
		{"expire set", "SET k 1", []string{"k"}, []string{"PEXPIRE k 100000"}, true},
		{"expired since", "SET k 1 PX 50", []string{"k"}, []string{"sleep 100"}, true},
		{"absent, created", "", []string{"k"}, []string{"SET k 1"}, true},
		{"absent, created and deleted", "", []string{"k"}, []string{"SET k 1", "DEL k"}, true},
		{"absent, stays absent", "", []string{"k"}, []string{"SET other 1"}, false},
		{"absent, untouched", "", []string{"k"}, nil, false},
		{"other key written", "SET k 1", []string{"k"}, []string{"SET j 2"}, false},
		{"collection changed in place", "RPUSH k a", []string{"k"}, []string{"RPUSH k b"}, true},
		{"collection emptied", "RPUSH k a", []string{"k"}, []string{"LPOP k"}, true},
		{"flushall", "SET k 1", []string{"k"}, []string{"FLUSHALL"}, true},
		{"absent, flushall of others", "SET {k}o 1", []string{"k"}, []string{"FLUSHALL"}, true},
		{"second key modified", "SET k 1", []string{"k", "{k}j"}, []string{"SET {k}j 1"}, true},
		{"renamed onto", "SET k 1", []string{"k"}, []string{"SET {k}x 2", "RENAME {k}x k"}, true},
		{"failed write leaves it", "SET k x", []string{"k"}, []string{"INCR k", "LPUSH k x"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			if tc.setup != "" {
				h.do(tc.setup)
			}
			ws := h.multiWatch(tc.keys...)
			for _, b := range tc.between {
				if strings.HasPrefix(b, "sleep ") {
					h.now += 100
					continue
				}
				h.do(b)
			}
			got := h.multiExec(ws, "SET {k}done 1")
			if tc.abort != (got == "nil") {
				t.Fatalf("exec = %s, want abort %v", got, tc.abort)
			}
			if done := h.do("EXISTS {k}done"); (done == ":1") == tc.abort {
				t.Fatalf("aborted transaction ran (or the other way round): EXISTS = %s", done)
			}
		})
	}
}

// An expired key watched after it expired (a stale key) does not abort
// while nothing deletes it; its deletion by active expiry is a deletion in
// its slot and aborts (conservative; Redis would not).
func TestMultiWatchStaleKey(t *testing.T) {
	h := newHarness(t)
	h.do("SET k 1 PX 10")
	h.now += 20
	ws := h.multiWatch("k")
	if ws[0].Present {
		t.Fatal("expired key watched as present")
	}
	if got := h.multiExec(ws, "GET k"); got != "[nil]" {
		t.Fatalf("exec = %s", got)
	}
	h.idx++
	h.s.Apply(h.idx, &Entry{Type: EntryExpire, Now: h.now, Cmds: [][][]byte{{[]byte("k")}}})
	if got := h.multiExec(ws, "GET k"); got != "nil" {
		t.Fatalf("exec after active expiry = %s, want nil (conservative abort)", got)
	}
}

// Every replica decides the same: two states fed the same entries, one of
// them restored from a snapshot in the middle, agree on every transaction.
func TestMultiDeterministicAcrossSnapshot(t *testing.T) {
	a, b := newHarness(t), newHarness(t)
	both := func(line string) {
		a.do(line)
		b.do(line)
	}
	both("SET {s}x 1")
	both("DEL {s}x")
	ws := a.multiWatch("{s}y") // absent: records the slot's deletion count
	if !reflect.DeepEqual(ws, b.multiWatch("{s}y")) {
		t.Fatal("replicas observe differently")
	}
	// b is replaced by a restore of a snapshot of itself.
	b.s = restoredFrom(t, snapshotOf(t, b.s))
	both("SET {s}y 1")
	both("DEL {s}y")
	ga, gb := a.multiExec(ws, "SET {s}z 1"), b.multiExec(ws, "SET {s}z 1")
	if ga != "nil" || gb != "nil" {
		t.Fatalf("created-and-deleted watched key: %s / %s, want nil on both", ga, gb)
	}
	ws = a.multiWatch("{s}y")
	ga, gb = a.multiExec(ws, "SET {s}z 1"), b.multiExec(ws, "SET {s}z 1")
	if ga != "[+OK]" || gb != "[+OK]" {
		t.Fatalf("untouched: %s / %s", ga, gb)
	}
}

// The whole transaction is one command of one entry: a batch entry with a
// transaction and other commands around it applies them in order.
func TestMultiInBatch(t *testing.T) {
	h := newHarness(t)
	h.idx++
	r := h.s.Apply(h.idx, &Entry{Type: EntryCommands, Now: h.now, Cmds: [][][]byte{
		fields("SET k 1"),
		ExecCommand(nil, [][][]byte{fields("INCR k"), fields("INCR k")}),
		fields("GET k"),
	}})
	if got := showAll(repliesOf(r)); got != `+OK [:2 :3] "3"` {
		t.Fatalf("batch = %s", got)
	}
}

// A transaction that pushes to a list serves a client blocked on it after
// the whole transaction, with the final state.
func TestMultiServesBlockedAfter(t *testing.T) {
	h := newHarness(t)
	h.idx++
	r := h.s.Apply(h.idx, &Entry{Type: EntryCommands, Now: h.now, Cmds: [][][]byte{fields("BLPOP l 0")}})
	if r[0].Kind != OutcomeBlocked {
		t.Fatalf("BLPOP did not block: %s", show(replyOf(r[0])))
	}
	h.idx++
	res, err := h.s.ApplyResult(h.idx, &Entry{Type: EntryCommands, Now: h.now, Cmds: [][][]byte{
		ExecCommand(nil, [][][]byte{fields("RPUSH l a b"), fields("LPOP l")}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := show(repliesOf(res.Outcomes)[0]); got != "[:2 \"a\"]" {
		t.Fatalf("exec = %s", got)
	}
	if len(res.Deferred) != 1 || show(replyOf(res.Deferred[0].Outcome)) != `["l" "b"]` {
		t.Fatalf("deferred = %+v", res.Deferred)
	}
}

func TestExecCodecRoundTrip(t *testing.T) {
	ws := []Watch{{Key: []byte("k"), Present: true, Seq: 42}, {Key: []byte{}, Seq: 0}, {Key: []byte("x\x00y"), Seq: 1 << 40}}
	cmds := [][][]byte{fields("SET k v"), {[]byte("get"), {}}}
	b := EncodeExec(ws, cmds)
	gw, gc, err := DecodeExec(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gw, ws) || !reflect.DeepEqual(gc, cmds) {
		t.Fatalf("round trip: %+v %q", gw, gc)
	}
	for _, bad := range [][]byte{nil, {2}, {1}, {1, 0}, append(bytes.Clone(b), 0), b[:len(b)-1], {1, 1, 1, 'k', 2, 0, 0}, {1, 0, 1, 0}} {
		if _, _, err := DecodeExec(bad); err == nil {
			t.Errorf("DecodeExec(%q) accepted", bad)
		}
	}
	// A bad payload is the command's error, never a panic.
	h := newHarness(t)
	if got := show(h.apply([][]byte{[]byte("exec"), {9}})); !strings.HasPrefix(got, "-ERR") {
		t.Fatalf("bad payload = %s", got)
	}
	// The data command is refused by reads and marked noscript.
	if c := Lookup([]byte("EXEC")); c == nil || !c.Meta.Is(resp.FlagNoScript) || !c.Meta.Is(resp.FlagWrite) {
		t.Fatal("exec metadata")
	}
}

func FuzzExecDecode(f *testing.F) {
	f.Add(EncodeExec([]Watch{{Key: []byte("k"), Present: true, Seq: 7}}, [][][]byte{fields("SET k v"), fields("GET k")}))
	f.Add(EncodeExec(nil, nil))
	f.Add([]byte{1, 1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		ws, cmds, err := DecodeExec(b)
		if err != nil {
			return
		}
		if again := EncodeExec(ws, cmds); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n%x\n%x", b, again)
		}
		// Running it never panics (only cheap commands: the fuzzer could
		// otherwise ask for a 512 MB SETRANGE).
		for _, c := range cmds {
			switch strings.ToLower(string(c[0])) {
			case "get", "set", "del", "incr", "lpush", "lpop", "exists", "exec":
			default:
				return
			}
		}
		h := newHarness(t)
		h.apply([][]byte{[]byte("exec"), b})
	})
}

// TestWatchNamesItsGroup: a watch's version is a log index of the group
// whose state WATCH read, so Observe records that group; the front end
// aborts EXEC in any other group. The exec payload does not carry it: the
// log format stays the same, and a watch decodes without a group.
func TestWatchNamesItsGroup(t *testing.T) {
	f := New(7, nil)
	ws := f.State().Observe(t0, [][]byte{[]byte("k"), []byte("j")})
	if len(ws) != 2 || ws[0].Group != 7 || ws[1].Group != 7 {
		t.Fatalf("Observe in group 7 = %+v", ws)
	}
	b := EncodeExec(ws, [][][]byte{fields("SET k v")})
	if b[0] != 1 {
		t.Fatalf("exec payload version %d, want 1", b[0])
	}
	got, _, err := DecodeExec(b)
	if err != nil || got[0].Group != 0 || string(got[0].Key) != "k" {
		t.Fatalf("decoded %+v, %v", got, err)
	}
}

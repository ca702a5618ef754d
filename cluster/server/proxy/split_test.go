package proxy

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/cluster/server"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
	"github.com/slotraft/slotraft/store"
)

func argv(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

// keyOfSlot finds a key named prefix… in the slot of want.
func sameSlotAs(want, prefix string) string {
	for i := 0; ; i++ {
		k := fmt.Sprintf("%s%d", prefix, i)
		if slots.Of([]byte(k)) == slots.Of([]byte(want)) {
			return k
		}
	}
}

func TestSplitBySlot(t *testing.T) {
	table := server.Commands()
	a2 := sameSlotAs("a", "x")
	for _, tc := range []struct {
		cmd   string
		parts []string // each part's arguments
		at    [][]int
	}{
		{"MGET a", []string{"MGET a"}, [][]int{{0}}},
		{"MGET a b " + a2 + " a", []string{"MGET a " + a2 + " a", "MGET b"}, [][]int{{0, 2, 3}, {1}}},
		{"MSET a 1 b 2 " + a2 + " 3", []string{"MSET a 1 " + a2 + " 3", "MSET b 2"}, [][]int{{0, 2}, {1}}},
		{"DEL b a", []string{"DEL b", "DEL a"}, [][]int{{0}, {1}}},
	} {
		args := argv(tc.cmd)
		parts := splitBySlot(table.Lookup(args[0]), args)
		if len(parts) != len(tc.parts) {
			t.Fatalf("%s: %d parts, want %d", tc.cmd, len(parts), len(tc.parts))
		}
		for i, p := range parts {
			if got := string(resp.AppendRequest(nil, p.args)); got != string(resp.AppendRequest(nil, argv(tc.parts[i]))) {
				t.Errorf("%s part %d: %q, want %q", tc.cmd, i, p.args, tc.parts[i])
			}
			if fmt.Sprint(p.at) != fmt.Sprint(tc.at[i]) || p.slot != slots.Of(p.args[1]) {
				t.Errorf("%s part %d: at %v slot %d, want %v", tc.cmd, i, p.at, p.slot, tc.at[i])
			}
		}
	}
}

func TestMergeParts(t *testing.T) {
	parts := []part{{at: []int{0, 2}}, {at: []int{1}}}
	for _, tc := range []struct {
		name   string
		m      merge
		frames []string
		want   string
	}{
		{"mget", mergeConcat, []string{"*2\r\n$1\r\na\r\n$-1\r\n", "*1\r\n$1\r\nb\r\n"}, "*3\r\n$1\r\na\r\n$1\r\nb\r\n$-1\r\n"},
		{"mget resp3 null", mergeConcat, []string{"*2\r\n_\r\n$1\r\nc\r\n", "*1\r\n_\r\n"}, "*3\r\n_\r\n_\r\n$1\r\nc\r\n"},
		{"del", mergeSum, []string{":2\r\n", ":1\r\n"}, ":3\r\n"},
		{"mset", mergeAllOK, []string{"+OK\r\n", "+OK\r\n"}, "+OK\r\n"},
		{"first error wins", mergeSum, []string{":1\r\n", "-NOPERM no\r\n"}, "-NOPERM no\r\n"},
		{"mset error", mergeAllOK, []string{"-ERR x\r\n", "+OK\r\n"}, "-ERR x\r\n"},
		{"wrong shape", mergeConcat, []string{"*1\r\n$1\r\na\r\n", "*1\r\n$1\r\nb\r\n"}, "-ERR proxy: unexpected reply \"*1\\r\\n$1\\r\\na\\r\\n\" to a part of a split command\r\n"},
		{"not an int", mergeSum, []string{"+OK\r\n", ":1\r\n"}, "-ERR proxy: unexpected reply \"+OK\\r\\n\" to a part of a split command\r\n"},
	} {
		frames := make([][]byte, len(tc.frames))
		for i, f := range tc.frames {
			frames[i] = []byte(f)
		}
		if got := string(mergeParts(tc.m, resp.RESP2, frames, parts, 3)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestMergeFanout(t *testing.T) {
	for _, tc := range []struct {
		name   string
		m      merge
		frames []string
		want   string
	}{
		{"dbsize", mergeSum, []string{":2\r\n", ":5\r\n"}, ":7\r\n"},
		{"keys", mergeConcat, []string{"*1\r\n$1\r\na\r\n", "*0\r\n", "*1\r\n$1\r\nb\r\n"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{"script exists", mergeAnd, []string{"*2\r\n:1\r\n:1\r\n", "*2\r\n:1\r\n:0\r\n"}, "*2\r\n:1\r\n:0\r\n"},
		{"script kill none", mergeAnyOK, []string{"-NOTBUSY No scripts in execution right now.\r\n", "-NOTBUSY No scripts in execution right now.\r\n"}, "-NOTBUSY No scripts in execution right now.\r\n"},
		{"script kill one", mergeAnyOK, []string{"-NOTBUSY x\r\n", "+OK\r\n"}, "+OK\r\n"},
		{"flushall", mergeAllOK, []string{"+OK\r\n", "-ERR x\r\n"}, "-ERR x\r\n"},
		{"script load", mergeFirst, []string{"$2\r\nab\r\n", "$2\r\nab\r\n"}, "$2\r\nab\r\n"},
	} {
		frames := make([][]byte, len(tc.frames))
		for i, f := range tc.frames {
			frames[i] = []byte(f)
		}
		if got := string(mergeFanout(tc.m, resp.RESP2, frames)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := string(minInts([][]byte{[]byte(":2\r\n"), []byte(":1\r\n")}, resp.RESP2)); got != ":1\r\n" {
		t.Errorf("WAIT's min: %q", got)
	}
	if got := string(minInts([][]byte{[]byte("*2\r\n:1\r\n:2\r\n"), []byte("*2\r\n:1\r\n:1\r\n")}, resp.RESP2)); got != "*2\r\n:1\r\n:1\r\n" {
		t.Errorf("WAITAOF's min: %q", got)
	}
}

func TestParseRedirect(t *testing.T) {
	for _, tc := range []struct {
		frame string
		want  redirect
		ok    bool
	}{
		{"-MOVED 3999 127.0.0.1:6381\r\n", redirect{"MOVED", 3999, "127.0.0.1:6381"}, true},
		{"-ASK 1 h:1\r\n", redirect{"ASK", 1, "h:1"}, true},
		{"-TRYAGAIN Multiple keys request during rehashing of slot\r\n", redirect{"TRYAGAIN", -1, ""}, true},
		{"-CLUSTERDOWN The cluster is down\r\n", redirect{"CLUSTERDOWN", -1, ""}, true},
		{"-MOVED x h:1\r\n", redirect{}, false},
		{"-MOVED 16384 h:1\r\n", redirect{}, false},
		{"-ERR MOVED 1 h:1\r\n", redirect{}, false},
		{"+MOVED 1 h:1\r\n", redirect{}, false},
		{"$5\r\nMOVED\r\n", redirect{}, false},
	} {
		got, ok := parseRedirect([]byte(tc.frame))
		if ok != tc.ok || got != tc.want {
			t.Errorf("%q: %+v %v, want %+v %v", tc.frame, got, ok, tc.want, tc.ok)
		}
	}
}

func TestScanReply(t *testing.T) {
	mid := store.SlotCursor(100) | 12345
	for _, tc := range []struct {
		name string
		next uint64
		end  uint16
		want uint64
	}{
		{"within the range", mid, 200, mid},
		{"the range ended", 0, 200, store.SlotCursor(201)},
		{"the node went past the range", store.SlotCursor(300), 200, store.SlotCursor(201)},
		{"the last slot", 0, slots.Count - 1, 0},
	} {
		frame := resp.Array(resp.BulkString(fmt.Sprint(tc.next)), resp.BulkArray([][]byte{[]byte("k")})).Append(nil, resp.RESP2)
		want := string(resp.Array(resp.BulkString(fmt.Sprint(tc.want)), resp.BulkArray([][]byte{[]byte("k")})).Append(nil, resp.RESP2))
		if got := string(scanReply(frame, tc.end)); got != want {
			t.Errorf("%s: %q, want %q", tc.name, got, want)
		}
	}
}

func TestConnStateReplay(t *testing.T) {
	st := connState{proto: resp.RESP2}
	if cmds := st.replay(); len(cmds) != 0 {
		t.Fatalf("a new connection replays %q", cmds)
	}
	st = st.apply("auth", argv("AUTH pw"))
	st = st.apply("client|setname", argv("CLIENT SETNAME app"))
	st = st.apply("hello", argv("HELLO 3"))
	st = st.apply("client|setinfo", argv("CLIENT SETINFO LIB-NAME lib"))
	st = st.apply("client|no-touch", argv("CLIENT NO-TOUCH on"))
	got := fmt.Sprintf("%q", st.replay())
	want := fmt.Sprintf("%q", [][][]byte{argv("HELLO 3 AUTH default pw SETNAME app"), argv("CLIENT SETINFO LIB-NAME lib"), argv("CLIENT NO-TOUCH ON")})
	if got != want {
		t.Fatalf("replay %s, want %s", got, want)
	}
	st = st.apply("hello", argv("HELLO 2 AUTH bob pw2 SETNAME b"))
	st = st.apply("client|setname", argv("CLIENT SETNAME x")).apply("client|setname", [][]byte{[]byte("CLIENT"), []byte("SETNAME"), {}})
	if got := fmt.Sprintf("%q", st.replay()[0]); got != fmt.Sprintf("%q", argv("HELLO 2 AUTH bob pw2")) {
		t.Fatalf("after HELLO 2 AUTH and an empty name: %s", got)
	}
}

// TestRules: every rule names a command of the one table, and the split
// commands have keys to split.
func TestRules(t *testing.T) {
	table := server.Commands()
	names := map[string]*resp.Command{}
	for _, c := range table.All() {
		for _, cc := range append([]*resp.Command{c}, c.Subcommands...) {
			if cc.Name != strings.ToLower(cc.Name) {
				t.Errorf("%q: ruleOf looks rules up by the table's names, lowercase", cc.Name)
			}
			names[cc.Name] = cc
		}
	}
	for name, r := range rules {
		c := names[name]
		if c == nil {
			t.Errorf("rule %q: no such command in the table", name)
			continue
		}
		if r.kind == kindSplit && (c.FirstKey != 1 || c.LastKey != -1) {
			t.Errorf("split rule %q: keys at %d..%d", name, c.FirstKey, c.LastKey)
		}
		if r.kind == kindRefuse && r.why == "" {
			t.Errorf("refusal %q without a reason", name)
		}
	}
}

// TestRulesDocumented: docs/proxy.md lists every rule in a table row
// with its note, so the documentation says what the proxy does.
func TestRulesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/proxy.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range rules {
		row := "| `" + strings.ToUpper(strings.ReplaceAll(name, "|", " ")) + "` | "
		i := strings.Index(string(doc), row)
		if i < 0 {
			t.Errorf("docs/proxy.md has no table row for %s", name)
			continue
		}
		line, _, _ := strings.Cut(string(doc[i+len(row):]), "\n")
		if r.why != "" && !strings.Contains(line, r.why) {
			t.Errorf("docs/proxy.md's row for %s (%q) does not say %q", name, line, r.why)
		}
	}
}

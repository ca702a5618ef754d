package fsm

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/store"
)

// streamFields splits a command line on spaces ("~" stays itself: XADD's
// approximate trimming); `""` is an empty argument.
func streamFields(line string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(line) {
		if f == `""` {
			f = ""
		}
		out = append(out, []byte(f))
	}
	return out
}

// streamRun is harness.run with streamFields.
func streamRun(h *harness, steps []step) {
	h.t.Helper()
	for i, st := range steps {
		var got string
		switch {
		case strings.HasPrefix(st.cmd, "sleep "):
			n, _ := strconv.ParseInt(st.cmd[6:], 10, 64)
			h.now += n
			continue
		case strings.HasPrefix(st.cmd, "read "):
			args := streamFields(st.cmd[5:])
			got = show(replyOf(h.s.Read(h.now, Lookup(args[0]), args)))
		default:
			got = show(h.apply(streamFields(st.cmd)))
		}
		if got != st.want {
			h.t.Errorf("step %d %q: got %s, want %s", i, st.cmd, got, st.want)
		}
	}
}

func streamTable(t *testing.T, cases map[string][]step) {
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) { streamRun(newHarness(t), steps) })
	}
}

// Stream commands, table-driven; the expected replies are redis-server's
// (checked by hand against 7.0.15 and Redis 7.2's t_stream.c where they
// differ). Times: entries run at t0 (1700000000000) plus sleeps.

func TestStreamXAdd(t *testing.T) {
	streamTable(t, map[string][]step{
		"ids": {
			{"xadd s 1-1 a 1", `"1-1"`},
			{"xadd s 1-1 a 1", `-ERR The ID specified in XADD is equal or smaller than the target stream top item`},
			{"xadd s 0-0 a 1", `-ERR The ID specified in XADD must be greater than 0-0`},
			{"xadd s 1-* a 1", `"1-2"`},
			{"xadd s 5-* a 1", `"5-0"`},
			{"xadd s 5 a 1", `-ERR The ID specified in XADD is equal or smaller than the target stream top item`},
			{"xadd s 5-1 a 1", `"5-1"`},
			{"xadd s * a 1", `"1700000000000-0"`},
			{"xadd s * a 1", `"1700000000000-1"`},
			{"sleep 3", ""},
			{"xadd s * a 1", `"1700000000003-0"`},
			{"xadd s 9999999999999-18446744073709551615 a 1", `"9999999999999-18446744073709551615"`},
			{"xadd s 9999999999999-* a 1", `-ERR The ID specified in XADD is equal or smaller than the target stream top item`},
			{"xadd s * a 1", `"10000000000000-0"`},
			{"xadd s bad a 1", `-ERR Invalid stream ID specified as stream command argument`},
			{"xadd s 1-x a 1", `-ERR Invalid stream ID specified as stream command argument`},
			{"xadd s + a 1", `-ERR Invalid stream ID specified as stream command argument`},
			{"xadd s * a", `-ERR wrong number of arguments for 'xadd' command`},
			{"xadd s a b c", `-ERR Invalid stream ID specified as stream command argument`},
			{"xlen s", ":9"},
			{"xadd s 18446744073709551615-18446744073709551615 a 1", `"18446744073709551615-18446744073709551615"`},
			{"xadd s * a 1", `-ERR The stream has exhausted the last possible ID, unable to add more items`},
			{"object encoding s", `"stream"`},
			{"type s", `+stream`},
		},
		"nomkstream and types": {
			{"xadd s nomkstream * a 1", "nil"},
			{"exists s", ":0"},
			{"set k v", "+OK"},
			{"xadd k * a 1", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
			{"xlen k", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
			{"xlen nokey", ":0"},
		},
		"trim options": {
			{"xadd s maxlen 2 1 a 1", `"1-0"`},
			{"xadd s maxlen 2 2 a 1", `"2-0"`},
			{"xadd s maxlen = 2 3 a 1", `"3-0"`},
			{"xrange s - +", `[["2-0" ["a" "1"]] ["3-0" ["a" "1"]]]`},
			{"xadd s minid 3 4 a 1", `"4-0"`},
			{"xlen s", ":2"},
			{"xadd s maxlen ~ 1 5 a 1", `"5-0"`},
			{"xlen s", ":3"},
			{"xadd s maxlen 1 minid 1 6 a 1", `-ERR syntax error, MAXLEN and MINID options at the same time are not compatible`},
			{"xadd s maxlen -1 6 a 1", `-ERR The MAXLEN argument must be >= 0.`},
			{"xadd s maxlen x 6 a 1", `-ERR value is not an integer or out of range`},
			{"xadd s limit 10 6 a 1", `-ERR syntax error, LIMIT cannot be used without specifying a trimming strategy`},
			{"xadd s maxlen 1 limit 10 6 a 1", `-ERR syntax error, LIMIT cannot be used without the special ~ option`},
			{"xadd s maxlen ~ 1 limit -1 6 a 1", `-ERR The LIMIT argument must be >= 0.`},
			{"xadd s maxlen ~ 1 limit 10 6 a 1", `"6-0"`},
			{"xtrim s", `-ERR wrong number of arguments for 'xtrim' command`},
			{"xtrim s foo 1", `-ERR syntax error`},
			{"xtrim s limit 1 x", `-ERR syntax error`},
			{"xtrim s maxlen 1", ":3"},
			{"xtrim s minid 100", ":1"},
			{"xlen s", ":0"},
			{"exists s", ":1"},
			{"xtrim nokey maxlen 1", ":0"},
		},
	})
}

func TestStreamApproxTrim(t *testing.T) {
	h := newHarness(t)
	for i := 1; i <= 250; i++ {
		h.apply(fields("xadd s 1-" + itoaTest(i) + " f " + itoaTest(i)))
	}
	streamRun(h, []step{
		{"xinfo stream s", `{"length" :250 "radix-tree-keys" :3 "radix-tree-nodes" :5 "last-generated-id" "1-250" "max-deleted-entry-id" "0-0" "entries-added" :250 "recorded-first-entry-id" "1-1" "groups" :0 "first-entry" ["1-1" ["f" "1"]] "last-entry" ["1-250" ["f" "250"]]}`},
		{"xtrim s maxlen ~ 10", ":200"},
		{"xtrim s maxlen ~ 10", ":0"},
		{"xtrim s minid ~ 1-249", ":0"},
		{"xtrim s minid 1-249", ":48"},
		{"xinfo stream s", `{"length" :2 "radix-tree-keys" :1 "radix-tree-nodes" :2 "last-generated-id" "1-250" "max-deleted-entry-id" "0-0" "entries-added" :250 "recorded-first-entry-id" "1-249" "groups" :0 "first-entry" ["1-249" ["f" "249"]] "last-entry" ["1-250" ["f" "250"]]}`},
	})
}

func itoaTest(i int) string { return string(itoa(int64(i))) }

func TestStreamRangeDel(t *testing.T) {
	streamTable(t, map[string][]step{
		"range": {
			{"xadd s 1-1 a 1", `"1-1"`},
			{"xadd s 1-2 b 2", `"1-2"`},
			{"xadd s 2-1 c 3 d 4", `"2-1"`},
			{"xrange s - +", `[["1-1" ["a" "1"]] ["1-2" ["b" "2"]] ["2-1" ["c" "3" "d" "4"]]]`},
			{"xrange s 1 1", `[["1-1" ["a" "1"]] ["1-2" ["b" "2"]]]`},
			{"xrange s (1-1 +", `[["1-2" ["b" "2"]] ["2-1" ["c" "3" "d" "4"]]]`},
			{"xrange s - (2-1", `[["1-1" ["a" "1"]] ["1-2" ["b" "2"]]]`},
			{"xrange s - + count 1", `[["1-1" ["a" "1"]]]`},
			{"xrange s - + count 0", `nil`},
			{"xrange s - + count -5", `nil`},
			{"xrevrange s + - count 2", `[["2-1" ["c" "3" "d" "4"]] ["1-2" ["b" "2"]]]`},
			{"xrevrange s (2-1 -", `[["1-2" ["b" "2"]] ["1-1" ["a" "1"]]]`},
			{"xrange s + -", `[]`},
			{"xrange s (- +", `-ERR Invalid stream ID specified as stream command argument`},
			{"xrange s (18446744073709551615-18446744073709551615 +", `-ERR invalid start ID for the interval`},
			{"xrange s - (0-0", `-ERR invalid end ID for the interval`},
			{"xrange s - + foo", `-ERR syntax error`},
			{"xrange s - + count x", `-ERR value is not an integer or out of range`},
			{"xrange nokey - +", `[]`},
			{"xrange s x +", `-ERR Invalid stream ID specified as stream command argument`},
			{"xrange s 007 +", `[["7-0" ["x" "y"]]]`[0:0] + `[]`},
		},
		"del": {
			{"xadd s 1-1 a 1", `"1-1"`},
			{"xadd s 1-2 b 2", `"1-2"`},
			{"xadd s 1-3 b 2", `"1-3"`},
			{"xdel s 1-2 1-2 9-9", ":1"},
			{"xdel s 1-1 bad", `-ERR Invalid stream ID specified as stream command argument`},
			{"xlen s", ":2"},
			{"xdel nokey bad", ":0"},
			{"xdel s 1-1 1-3", ":2"},
			{"xlen s", ":0"},
			{"exists s", ":1"},
			{"xinfo stream s", `{"length" :0 "radix-tree-keys" :0 "radix-tree-nodes" :1 "last-generated-id" "1-3" "max-deleted-entry-id" "1-3" "entries-added" :3 "recorded-first-entry-id" "0-0" "groups" :0 "first-entry" nil "last-entry" nil}`},
			{"xadd s 1-3 a 1", `-ERR The ID specified in XADD is equal or smaller than the target stream top item`},
		},
		"setid": {
			{"xsetid s 5-5", `-ERR no such key`},
			{"xadd s 3-1 a 1", `"3-1"`},
			{"xsetid s 2-1", `-ERR The ID specified in XSETID is smaller than the target stream top item`},
			{"xsetid s 5-5 entriesadded 0", `-ERR The entries_added specified in XSETID is smaller than the target stream length`},
			{"xsetid s 5-5 entriesadded -1", `-ERR entries_added must be positive`},
			{"xsetid s 5-5 maxdeletedid 6-0", `-ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id`},
			{"xsetid s 5-5 entriesadded 10 maxdeletedid 2-0", `+OK`},
			{"xadd s 5-5 a 1", `-ERR The ID specified in XADD is equal or smaller than the target stream top item`},
			{"xadd s 5-* a 1", `"5-6"`},
			{"xsetid s 5-6 foo", `-ERR syntax error`},
		},
	})
}

func TestStreamXRead(t *testing.T) {
	streamTable(t, map[string][]step{
		"read": {
			{"xadd s1 1-1 a 1", `"1-1"`},
			{"xadd s1 1-2 b 2", `"1-2"`},
			{"xadd s2 2-1 c 3", `"2-1"`},
			{"read xread streams s1 s2 0 0", `[["s1" [["1-1" ["a" "1"]] ["1-2" ["b" "2"]]]] ["s2" [["2-1" ["c" "3"]]]]]`},
			{"read xread count 1 streams s1 s2 1-1 $", `[["s1" [["1-2" ["b" "2"]]]]]`},
			{"read xread streams s1 $", "nil"},
			{"read xread streams nokey 0", "nil"},
			{"read xread streams s1 s2 0", `-ERR Unbalanced 'xread' list of streams: for each stream key an ID or '$' must be specified.`},
			{"read xread count 1 s1 0", `-ERR syntax error`},
			{"read xread block -1 streams s1 0", `-ERR timeout is negative`},
			{"read xread block x streams s1 0", `-ERR timeout is not an integer or out of range`},
			{"read xread streams s1 >", `-ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.`},
			{"read xread streams s1 +", `-ERR Invalid stream ID specified as stream command argument`},
			{"read xread group g c streams s1 0", `-ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.`},
			{"read xread noack streams s1 0", `-ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.`},
			{"set k v", "+OK"},
			{"read xread streams s1 k 0 0", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		},
	})
}

func TestStreamGroups(t *testing.T) {
	streamTable(t, map[string][]step{
		"create": {
			{"xgroup create s g $", `-ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.`},
			{"xgroup create s g $ mkstream", "+OK"},
			{"xgroup create s g $", "-BUSYGROUP Consumer Group name already exists"},
			{"xgroup create s g2 0 entriesread -2", "-ERR value for ENTRIESREAD must be positive or -1"},
			{"xgroup create s g2 0 foo", "-ERR unknown subcommand or wrong number of arguments for 'create'. Try XGROUP HELP."},
			{"xgroup create s g2 bad", "-ERR Invalid stream ID specified as stream command argument"},
			{"xgroup setid s nog 0", "-NOGROUP No such consumer group 'nog' for key name 's'"},
			{"xgroup setid s g 5-5 entriesread 3", "+OK"},
			{"xinfo groups s", `[{"name" "g" "consumers" :0 "pending" :0 "last-delivered-id" "5-5" "entries-read" :3 "lag" :0}]`},
			{"xgroup createconsumer s g alice", ":1"},
			{"xgroup createconsumer s g alice", ":0"},
			{"xgroup delconsumer s g bob", ":0"},
			{"xgroup delconsumer s g alice", ":0"},
			{"xgroup destroy s g", ":1"},
			{"xgroup destroy s g", ":0"},
			{"xgroup foo s g", "-ERR unknown subcommand 'foo'. Try XGROUP HELP."},
			{"xgroup destroy s", "-ERR wrong number of arguments for 'xgroup|destroy' command"},
		},
		"consume": {
			{"xadd s 1-1 a 1", `"1-1"`},
			{"xadd s 1-2 b 2", `"1-2"`},
			{"xadd s 1-3 c 3", `"1-3"`},
			{"xgroup create s g 0", "+OK"},
			{"xreadgroup group g alice count 2 streams s >", `[["s" [["1-1" ["a" "1"]] ["1-2" ["b" "2"]]]]]`},
			{"sleep 100", ""},
			{"xreadgroup group g bob streams s >", `[["s" [["1-3" ["c" "3"]]]]]`},
			{"xreadgroup group g bob streams s >", `nil`},
			{"xreadgroup group g alice streams s 0", `[["s" [["1-1" ["a" "1"]] ["1-2" ["b" "2"]]]]]`},
			{"xreadgroup group nog alice streams s >", `-NOGROUP No such key 's' or consumer group 'nog' in XREADGROUP with GROUP option`},
			{"xreadgroup group g alice streams s $", `-ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.`},
			{"xreadgroup count 1 noack streams s >", `-ERR Missing GROUP option for XREADGROUP`},
			{"xreadgroup group g alice streams s", `-ERR wrong number of arguments for 'xreadgroup' command`},
			{"xreadgroup group g alice streams s t >", `-ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' must be specified.`},
			{"read xpending s g", `[:3 "1-1" "1-3" [["alice" "2"] ["bob" "1"]]]`},
			{"sleep 50", ""},
			{"read xpending s g - + 10", `[["1-1" "alice" :50 :2] ["1-2" "alice" :50 :2] ["1-3" "bob" :50 :1]]`},
			{"read xpending s g idle 60 - + 10", `[]`},
			{"read xpending s g - + 10 bob", `[["1-3" "bob" :50 :1]]`},
			{"read xpending s g - + 10 nobody", `[]`},
			{"read xpending s g (1-1 + 1", `[["1-2" "alice" :50 :2]]`},
			{"read xpending s g - +", `-ERR syntax error`},
			{"read xpending s nog", `-NOGROUP No such key 's' or consumer group 'nog'`},
			{"xack s g 1-1 1-1 9-9", ":1"},
			{"xack s g bad", `-ERR Invalid stream ID specified as stream command argument`},
			{"xack s nog 1-1", ":0"},
			{"xclaim s g carol 100 1-2", `[]`},
			{"xclaim s g carol 10 1-2", `[["1-2" ["b" "2"]]]`},
			{"read xpending s g - + 10", `[["1-2" "carol" :0 :3] ["1-3" "bob" :50 :1]]`},
			{"xclaim s g carol 0 1-3 justid", `["1-3"]`},
			{"read xpending s g - + 10", `[["1-2" "carol" :0 :3] ["1-3" "carol" :0 :1]]`},
			{"xclaim s g dave 0 1-1 force retrycount 7 idle 5 justid lastid 2-0", `["1-1"]`},
			{"read xpending s g - + 10 dave", `[["1-1" "dave" :5 :7]]`},
			{"xclaim s g dave 0 1-1 foo", `-ERR Unrecognized XCLAIM option 'foo'`},
			{"xclaim s g dave x 1-1", `-ERR Invalid min-idle-time argument for XCLAIM`},
			{"xclaim s nog dave 0 1-1", `-NOGROUP No such key 's' or consumer group 'nog'`},
			{"xdel s 1-2", ":1"},
			{"xautoclaim s g erin 0 0 count 10", `["0-0" [["1-1" ["a" "1"]] ["1-3" ["c" "3"]]] ["1-2"]]`},
			{"read xpending s g", `[:2 "1-1" "1-3" [["erin" "2"]]]`},
			{"xautoclaim s g erin 0 0 count 1 justid", `["1-3" ["1-1"] []]`},
			{"xautoclaim s g erin 0 0 count 0", `-ERR COUNT must be > 0`},
			{"xautoclaim s g erin 0 bad", `-ERR Invalid stream ID specified as stream command argument`},
			{"xautoclaim s g erin 0 0 foo", `-ERR syntax error`},
			{"xinfo groups s", `[{"name" "g" "consumers" :5 "pending" :2 "last-delivered-id" "2-0" "entries-read" :3 "lag" :0}]`},
			{"read xinfo consumers s g", `[{"name" "alice" "pending" :0 "idle" :50 "inactive" :150} {"name" "bob" "pending" :0 "idle" :50 "inactive" :50} {"name" "carol" "pending" :0 "idle" :0 "inactive" :0} {"name" "dave" "pending" :0 "idle" :0 "inactive" :0} {"name" "erin" "pending" :2 "idle" :0 "inactive" :0}]`},
			{"xgroup delconsumer s g erin", ":2"},
			{"read xpending s g", `[:0 nil nil nil]`},
		},
		"noack and history after delete": {
			{"xadd s 1-1 a 1", `"1-1"`},
			{"xgroup create s g 0", "+OK"},
			{"xreadgroup group g c noack streams s >", `[["s" [["1-1" ["a" "1"]]]]]`},
			{"read xpending s g", `[:0 nil nil nil]`},
			{"xadd s 1-2 b 2", `"1-2"`},
			{"xreadgroup group g c streams s >", `[["s" [["1-2" ["b" "2"]]]]]`},
			{"xdel s 1-2", ":1"},
			{"xreadgroup group g c streams s 0", `[["s" [["1-2" nil]]]]`},
		},
	})
}

func TestStreamXInfoFull(t *testing.T) {
	h := newHarness(t)
	streamRun(h, []step{
		{"xadd s 1-1 a 1", `"1-1"`},
		{"xgroup create s g 0", "+OK"},
		{"xreadgroup group g c streams s >", `[["s" [["1-1" ["a" "1"]]]]]`},
		{"read xinfo stream s full", `{"length" :1 "radix-tree-keys" :1 "radix-tree-nodes" :2 "last-generated-id" "1-1" "max-deleted-entry-id" "0-0" "entries-added" :1 "recorded-first-entry-id" "1-1" "entries" [["1-1" ["a" "1"]]] "groups" [{"name" "g" "last-delivered-id" "1-1" "entries-read" :1 "lag" :0 "pel-count" :1 "pending" [["1-1" "c" :1700000000000 :1]] "consumers" [{"name" "c" "seen-time" :1700000000000 "active-time" :1700000000000 "pel-count" :1 "pending" [["1-1" :1700000000000 :1]]}]}]}`},
		{"read xinfo stream s full count", `-ERR unknown subcommand or wrong number of arguments for 'stream'. Try XINFO HELP.`},
		{"read xinfo stream nokey", `-ERR no such key`},
		{"read xinfo foo s", `-ERR unknown subcommand 'foo'. Try XINFO HELP.`},
	})
}

// TestStreamBlocking: XREAD BLOCK with "$" waits for entries added after it
// blocked; XREADGROUP BLOCK with ">" is served by XADD and answered with
// NOGROUP when its group or key goes away.
func TestStreamBlocking(t *testing.T) {
	h := newBlkHarness(t)
	h.entry("xadd s 1-1 a 1")
	w1 := h.block("xread block 0 streams s $")
	if got := h.s.blk.waiters[w1].args[5]; string(got) != "1-1" {
		t.Fatalf("$ resolved to %q", got)
	}
	h.entry("xgroup create s g $")
	w2 := h.block("xreadgroup group g c block 1000 streams s >")
	r := h.entry("xadd s 1-2 b 2")
	if got := showDeferred(r.Deferred); got != `2.0=[["s" [["1-2" ["b" "2"]]]]] 4.0=[["s" [["1-2" ["b" "2"]]]]]` {
		t.Fatalf("served %s (waiters %v %v)", got, w1, w2)
	}
	// A blocked XREADGROUP gets NOGROUP when its group is destroyed or its
	// key deleted.
	h.block("xreadgroup group g c block 0 streams s >")
	r = h.entry("xgroup destroy s g")
	if got := showDeferred(r.Deferred); got != `6.0=-NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option` {
		t.Fatalf("destroy: %s", got)
	}
	h.entry("xgroup create s g $")
	h.block("xreadgroup group g c block 0 streams s >")
	r = h.entry("del s")
	if got := showDeferred(r.Deferred); got != `9.0=-NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option` {
		t.Fatalf("del: %s", got)
	}
	// A blocked XREAD on a missing key waits for its creation; "$" of a
	// missing key is 0-0.
	h.block("xread block 0 streams t $")
	r = h.entry("xadd t 5-5 x y")
	if got := showDeferred(r.Deferred); got != `11.0=[["t" [["5-5" ["x" "y"]]]]]` {
		t.Fatalf("t: %s", got)
	}
	// Without BLOCK nothing blocks; a timeout gives the deadline in ms.
	if r := h.entry("xread streams t $"); len(r.Blocked) != 0 {
		t.Fatal("XREAD without BLOCK blocked")
	}
	r = h.entry("xread block 250 streams t $")
	if len(r.Blocked) != 1 || r.Blocked[0].Deadline != h.now+250 {
		t.Fatalf("deadline %v", r.Blocked)
	}
	if len(h.s.Waiters()) != 1 {
		t.Fatalf("waiters %v", showWaiters(h.s.Waiters()))
	}
}

func TestStreamBlocksOn(t *testing.T) {
	for line, want := range map[string]bool{
		"xread streams s 0": false, "xread block 0 streams s $": true, "xread count 1 block 10 streams s 0": true,
		"xreadgroup group g c streams s >": false, "xreadgroup group g c block 5 streams s >": true,
		"blpop l 0": true, "get k": false,
	} {
		args := fields(line)
		if got := Lookup(args[0]).BlocksOn(args); got != want {
			t.Errorf("BlocksOn(%q) = %v", line, got)
		}
	}
}

// TestStreamSnapshot: entries, groups, PELs, consumers and counters survive
// a snapshot, and the clone a snapshot keeps is independent of the live
// stream (run with -race: the View is written while the stream changes).
func TestStreamSnapshot(t *testing.T) {
	h := newHarness(t)
	streamRun(h, []step{
		{"xadd s 1-1 a 1", `"1-1"`},
		{"xadd s 1-2 b 2", `"1-2"`},
		{"xgroup create s g 0 entriesread 0", "+OK"},
		{"xreadgroup group g alice count 1 streams s >", `[["s" [["1-1" ["a" "1"]]]]]`},
		{"xgroup createconsumer s g bob", ":1"},
		{"xdel s 1-2", ":1"},
	})
	before := h.read("xinfo stream s full")
	view := h.s.store.Snapshot()
	done := make(chan []byte)
	go func() {
		var buf bytes.Buffer
		if _, err := view.WriteTo(&buf); err != nil {
			t.Error(err)
		}
		done <- buf.Bytes()
	}()
	for i := 0; i < 200; i++ {
		h.apply(fields("xadd s * f v"))
		h.apply(fields("xreadgroup group g bob count 1 streams s >"))
		h.apply(fields("xack s g 1-1"))
		h.apply(fields("xgroup createconsumer s g c" + itoaTest(i)))
	}
	data := <-done
	st := store.New()
	if err := st.Restore(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	h2 := newHarness(t)
	h2.s.store = st
	if got := h2.read("xinfo stream s full"); got != before {
		t.Fatalf("restored:\n%s\nwant\n%s", got, before)
	}
	// The live stream went on: its round trip matches too.
	var buf bytes.Buffer
	if _, err := h.s.store.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	st2 := store.New()
	if err := st2.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	h3 := newHarness(t)
	h3.s.store = st2
	for _, cmd := range []string{"xinfo stream s full count 0", "xinfo groups s", "xpending s g - + 1000"} {
		if a, b := h.read(cmd), h3.read(cmd); a != b {
			t.Fatalf("%s after restore:\n%s\nwant\n%s", cmd, b, a)
		}
	}
}

func FuzzStreamDecode(f *testing.F) {
	h := newHarness(&testing.T{})
	for _, l := range []string{"xadd s 1-1 a 1 b 2", "xadd s 1-2 a 1", "xgroup create s g 0",
		"xreadgroup group g c streams s >", "xdel s 1-1"} {
		h.apply(fields(l))
	}
	var buf bytes.Buffer
	if _, err := h.s.store.Snapshot().WriteTo(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		st := store.New()
		_ = st.Restore(bytes.NewReader(b))
	})
}

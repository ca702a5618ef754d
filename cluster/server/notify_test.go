package server

import (
	"strings"
	"testing"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/fsm"
)

// ksMsg is the pmessage a "*" pattern subscriber gets for a keyspace
// notification on channel.
func ksMsg(proto int, channel, message string) string {
	return push(proto, bulk("pmessage"), bulk("*"), bulk(channel), bulk(message))
}

// ksPair is the two messages of one event with K and E on.
func ksPair(proto int, event, key string) []string {
	return []string{ksMsg(proto, "__keyspace@0__:"+key, event), ksMsg(proto, "__keyevent@0__:"+event, key)}
}

func TestNotifyKeyspaceEventsConfig(t *testing.T) {
	_, addr := pubsubNode(t)
	c := dialPS(t, addr)
	get := func(v string) string { return "*2\r\n" + bulk("notify-keyspace-events") + bulk(v) }
	bad := "-ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'.\r\n"
	for _, tc := range []struct{ cmd, want string }{
		{"CONFIG GET notify-keyspace-events", get("")}, // off by default
		{"CONFIG SET notify-keyspace-events KEA", "+OK\r\n"},
		{"CONFIG GET notify-keyspace-events", get("AKE")},
		{"CONFIG SET notify-keyspace-events KEAzq", bad},
		{"CONFIG GET notify-keyspace-events", get("AKE")}, // unchanged
		{"CONFIG SET Notify-Keyspace-Events Kn$", "+OK\r\n"},
		{"CONFIG GET notify-*", get("$nK")},
		{"CONFIG SET notify-keyspace-events \"\"", "+OK\r\n"},
		{"CONFIG GET notify-keyspace-events", get("")},
		// All or nothing: a failing second parameter undoes the first.
		{"CONFIG SET notify-keyspace-events Ex save 900", "-ERR CONFIG SET failed (possibly related to argument 'save') - Invalid save parameters\r\n"},
		{"CONFIG GET notify-keyspace-events", get("")},
	} {
		c.do(tc.cmd, tc.want)
	}
}

// TestNotifyKeyspaceMessages: with notifications on, writes on the leader
// reach its pattern subscribers as Redis sends them (RESP2 and RESP3), in
// Redis's order, including active expiry's "expired"; with them off,
// nothing is sent.
func TestNotifyKeyspaceMessages(t *testing.T) {
	_, addr := pubsubNode(t)
	s2, s3, w := dialPS(t, addr), dialPS(t, addr), dialPS(t, addr)
	s3.send("HELLO 3")
	s3.next()
	s2.do("PSUBSCRIBE *", confirm(2, "psubscribe", "*", 1))
	s3.do("PSUBSCRIBE *", confirm(3, "psubscribe", "*", 1))

	w.do("SET before v", "+OK\r\n") // notifications off: nothing
	w.do("CONFIG SET notify-keyspace-events KEA", "+OK\r\n")
	w.do("SET {a}k v", "+OK\r\n")
	w.do("RPUSH {a}l x", intr(1))
	w.do("RPOP {a}l", bulk("x"))
	w.do("RENAME {a}k {a}j", "+OK\r\n")
	w.do("SET {a}e v PX 30", "+OK\r\n")
	var want []string
	for _, ev := range [][2]string{
		{"set", "{a}k"}, {"rpush", "{a}l"}, {"rpop", "{a}l"}, {"del", "{a}l"},
		{"rename_from", "{a}k"}, {"rename_to", "{a}j"}, {"set", "{a}e"}, {"expire", "{a}e"},
		{"expired", "{a}e"}, // the leader's active expiry, within ~100 ms
	} {
		want = append(want, ev[0]+" "+ev[1])
	}
	for _, p := range []struct {
		c     *psConn
		proto int
	}{{s2, 2}, {s3, 3}} {
		for _, ev := range want {
			name, key, _ := strings.Cut(ev, " ")
			p.c.expect(ksPair(p.proto, name, key)...)
		}
	}

	// Only the configured classes and channel kinds: E with $ only.
	w.do("CONFIG SET notify-keyspace-events E$", "+OK\r\n")
	w.do("DEL {a}j", intr(1))
	w.do("APPEND {a}s x", intr(1))
	s2.expect(ksMsg(2, "__keyevent@0__:append", "{a}s"))
	// Off again: a later PUBLISH is the next message.
	w.do("CONFIG SET notify-keyspace-events \"\"", "+OK\r\n")
	w.do("SET {a}k v", "+OK\r\n")
	w.do("PUBLISH marker m", intr(2))
	s2.expect(ksMsg(2, "marker", "m"))
}

// TestNotifyOnlyOnLeader: followers apply the same entries but publish
// nothing; only the group's leader does.
func TestNotifyOnlyOnLeader(t *testing.T) {
	c := cluster.NewTestCluster(t, 3, 3)
	const gid = 1
	key := cluster.KeyIn(gid, 3, "nk")
	srvs := make([]*Server, 3)
	subs := make([]*psConn, 3)
	for i, n := range c.Nodes {
		var addr string
		srvs[i], addr = serveNode(t, n)
		cfg := dialPS(t, addr)
		cfg.do("CONFIG SET notify-keyspace-events KEA", "+OK\r\n")
		subs[i] = dialPS(t, addr)
		subs[i].do("PSUBSCRIBE *", confirm(2, "psubscribe", "*", 1))
	}
	// The write goes to whichever node leads now (a leader change before
	// the write only moves it).
	var li int
	var term uint64
	var applied uint64
	cluster.PollUntil(t, "a write on the leader", func() bool {
		li = c.Leader(gid)
		g := grp(c.Nodes[li], gid)
		term = g.Term()
		if _, err := g.Propose(t.Context(), [][][]byte{{[]byte("SET"), []byte(key), []byte("v")}}); err != nil {
			return false
		}
		applied = g.AppliedIndex()
		return true
	})
	subs[li].expect(ksPair(2, "set", key)...)
	for i := range c.Nodes {
		if i == li {
			continue
		}
		g := grp(c.Nodes[i], gid)
		cluster.PollUntil(t, "the follower applied the write", func() bool { return g.AppliedIndex() >= applied })
		srvs[i].publishLocal([]byte("marker"), []byte("m"))
		got := subs[i].next()
		if got != ksMsg(2, "marker", "m") {
			if g.Term() != term {
				t.Logf("node %d: leadership changed during the test (%q)", i, got)
				continue
			}
			t.Errorf("follower %d published %q before the marker", i, got)
		}
	}
}

// TestNotifyPublishFormats: the channels and messages of one event for
// each K/E setting, from the hook the group's FSM calls.
func TestNotifyPublishFormats(t *testing.T) {
	s := testServer()
	sub := testSubscriber(s, 2)
	s.ps.reg.add(sub, kindPattern, "*")
	s.n = &cluster.Node{}
	ev := []fsm.Event{{Class: fsm.NotifyGeneric, Name: "del", Key: []byte("k1")}}
	for _, tc := range []struct {
		config string
		want   []string
	}{
		{"KEg", ksPair(2, "del", "k1")},
		{"Kg", []string{ksMsg(2, "__keyspace@0__:k1", "del")}},
		{"Eg", []string{ksMsg(2, "__keyevent@0__:del", "k1")}},
	} {
		f, err := fsm.ParseNotifyClasses(tc.config)
		if err != nil {
			t.Fatal(err)
		}
		s.n.SetNotifyClasses(f)
		s.publishEvents(ev)
		if got := sub.takeOutput(); got != strings.Join(tc.want, "") {
			t.Errorf("%s: got %q, want %q", tc.config, got, strings.Join(tc.want, ""))
		}
	}
}

// grp is node n's object for group gid.
func grp(n *cluster.Node, gid uint32) *cluster.Group {
	g, _ := n.Group(gid)
	return g
}

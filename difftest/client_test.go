package difftest

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The CLIENT subcommands against redis-server. The installed redis-server
// is 7.0, so what 7.2 changed is not compared: CLIENT SETINFO, the
// lib-name and lib-ver fields, PAUSE's "timeout is out of range" (7.0
// lets the end overflow), RESET clearing NO-EVICT (7.0 keeps it). KILL's
// MAXAGE (7.4) differs by design; CLIENT HELP has 7.2's lines (SETINFO,
// NO-TOUCH). Tracking is compared in tracking_test.go.

// TestClientErrorsDifferential compares every argument error and the
// replies that do not depend on the connections, in RESP2 and RESP3.
func TestClientErrorsDifferential(t *testing.T) {
	redisAddr, slotraftAddr := startRedis(t), startSlotraft(t)
	cmds := [][]string{
		{"CLIENT", "LIST", "TYPE", "foo"}, {"CLIENT", "LIST", "ID", "1", "x"}, {"CLIENT", "LIST", "ID", "0", "-5"},
		{"CLIENT", "LIST", "TYPE", "master"}, {"CLIENT", "LIST", "TYPE", "replica"}, {"CLIENT", "LIST", "TYPE", "pubsub"},
		{"CLIENT", "LIST", "foo"}, {"CLIENT", "LIST", "TYPE", "normal", "x"},
		{"CLIENT", "KILL"}, {"CLIENT", "KILL", "1.2.3.4:5"}, {"CLIENT", "KILL", "ID", "0"}, {"CLIENT", "KILL", "ID", "x"},
		{"CLIENT", "KILL", "ID", "99999", "TYPE"}, {"CLIENT", "KILL", "TYPE", "foo"}, {"CLIENT", "KILL", "USER", "bob"},
		{"CLIENT", "KILL", "SKIPME", "maybe"}, {"CLIENT", "KILL", "FOO", "bar"}, {"CLIENT", "KILL", "ID", "99999"},
		{"CLIENT", "KILL", "TYPE", "master", "SKIPME", "no"}, {"CLIENT", "KILL", "USER", "default"},
		{"CLIENT", "PAUSE"}, {"CLIENT", "PAUSE", "x"}, {"CLIENT", "PAUSE", "-1"},
		{"CLIENT", "PAUSE", "x", "FOO"}, {"CLIENT", "PAUSE", "1", "ALL", "x"}, {"CLIENT", "PAUSE", "0"}, {"CLIENT", "PAUSE", "0", "write"},
		{"CLIENT", "UNPAUSE", "x"}, {"CLIENT", "UNPAUSE"},
		{"CLIENT", "UNBLOCK"}, {"CLIENT", "UNBLOCK", "x"}, {"CLIENT", "UNBLOCK", "x", "FOO"}, {"CLIENT", "UNBLOCK", "1", "2", "3"},
		{"CLIENT", "UNBLOCK", "99999", "error"}, {"CLIENT", "UNBLOCK", "99999"},
		{"CLIENT", "NO-EVICT", "maybe"}, {"CLIENT", "NO-EVICT", "on"}, {"CLIENT", "NO-EVICT", "OFF"}, {"CLIENT", "NO-EVICT"},
		{"CLIENT", "REPLY", "maybe"}, {"CLIENT", "REPLY"}, {"CLIENT", "REPLY", "on"},
	}
	for _, proto := range []string{"2", "3"} {
		rc, sc := connect(t, redisAddr, proto), connect(t, slotraftAddr, proto)
		for _, args := range cmds {
			same(t, rc, sc, args...)
		}
	}
}

// TestClientReplyDifferential sends runs of commands with CLIENT REPLY
// and compares the replies that come, up to a final PING.
func TestClientReplyDifferential(t *testing.T) {
	rc, sc := connect(t, startRedis(t), "2"), connect(t, startSlotraft(t), "2")
	for _, run := range [][][]string{
		{{"CLIENT", "REPLY", "OFF"}, {"SET", "r", "1"}, {"GET", "r"}, {"NOPE"}, {"CLIENT", "REPLY", "ON"}, {"GET", "r"}},
		{{"CLIENT", "REPLY", "SKIP"}, {"PING", "a"}, {"PING", "b"}},
		{{"CLIENT", "REPLY", "OFF"}, {"CLIENT", "REPLY", "SKIP"}, {"PING", "a"}, {"CLIENT", "REPLY", "ON"}, {"PING", "b"}},
		{{"CLIENT", "REPLY", "SKIP"}, {"CLIENT", "REPLY", "ON"}, {"PING", "c"}},
		{{"CLIENT", "REPLY", "SKIP"}, {"SET", "r", "2"}, {"INCR", "r"}},
		{{"CLIENT", "REPLY", "OFF"}, {"SUBSCRIBE", "ch"}, {"UNSUBSCRIBE", "ch"}, {"CLIENT", "REPLY", "ON"}},
	} {
		if w, g := untilPing(t, rc, run), untilPing(t, sc, run); w != g {
			t.Errorf("%q:\n  redis:    %s\n  slotraft: %s", run, w, g)
		}
	}
}

// untilPing sends run and a PING "end", and renders the replies up to it.
func untilPing(t *testing.T, c *client, run [][]string) string {
	t.Helper()
	_ = c.conn.SetDeadline(time.Now().Add(10 * time.Second))
	for _, cmd := range run {
		c.send(cmd...)
	}
	c.send("PING", "end")
	if err := c.w.Flush(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		r, err := c.read()
		if err != nil {
			t.Fatalf("%q: %v", run, err)
		}
		if r.typ == '$' && r.str == "end" {
			return strings.Join(got, " ")
		}
		got = append(got, r.String())
	}
}

// clientLine is CLIENT LIST ID id's line as name → value, without the
// fields whose values differ by nature (addresses, times, buffer sizes).
func clientLine(t *testing.T, c *client, id string) map[string]string {
	t.Helper()
	r, err := c.do("CLIENT", "LIST", "ID", id)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range strings.Fields(r.str) {
		kv := strings.SplitN(f, "=", 2)
		switch kv[0] {
		case "addr", "laddr", "fd", "age", "idle", "id", "qbuf-free", "rbs", "rbp", "tot-mem", "lib-name", "lib-ver", "obl":
			continue
		}
		out[kv[0]] = kv[1]
	}
	return out
}

// TestClientListDifferential compares CLIENT INFO's fields and another
// connection's line in several states.
func TestClientListDifferential(t *testing.T) {
	rAddr, sAddr := startRedis(t), startSlotraft(t)
	ra, sa := connect(t, rAddr, "2"), connect(t, sAddr, "2")
	rb, sb := connect(t, rAddr, "2"), connect(t, sAddr, "2")
	names := func(c *client) string {
		r, _ := c.do("CLIENT", "INFO")
		var ns []string
		for _, f := range strings.Fields(r.str) {
			if n := strings.SplitN(f, "=", 2)[0]; n != "lib-name" && n != "lib-ver" {
				ns = append(ns, n)
			}
		}
		return strings.Join(ns, " ")
	}
	if w, g := names(ra), names(sa); w != g {
		t.Errorf("CLIENT INFO fields:\n  redis:    %s\n  slotraft: %s", w, g)
	}
	rID, sID := idOf(t, rb), idOf(t, sb)
	for _, step := range [][]string{
		{"CLIENT", "SETNAME", "b"}, {"CLIENT", "NO-EVICT", "on"}, {"MULTI"}, {"SET", "k", "v"}, {"GET", "k"},
		{"DISCARD"}, {"HELLO", "3"}, {"CLIENT", "NO-EVICT", "off"}, {"RESET"},
		{"SUBSCRIBE", "a"}, {"PSUBSCRIBE", "p*"}, {"SSUBSCRIBE", "s"}, {"UNSUBSCRIBE", "a"},
	} {
		_, _ = rb.do(step...)
		_, _ = sb.do(step...)
		w, g := clientLine(t, ra, rID), settledLine(t, sa, sID)
		if !mapsEqual(w, g) {
			t.Errorf("after %q:\n  redis:    %v\n  slotraft: %v", step, w, g)
		}
	}
	// A watched key changed by another client: flag d until EXEC.
	_, _ = rb.do("RESET")
	_, _ = sb.do("RESET")
	for _, step := range []struct {
		by   string // "a" or "b"
		args []string
	}{
		{"b", []string{"WATCH", "{w}1", "{w}2"}}, {"a", []string{"SET", "{w}3", "x"}}, {"a", []string{"SET", "{w}2", "x"}},
		{"b", []string{"MULTI"}}, {"b", []string{"EXEC"}},
		{"b", []string{"WATCH", "{w}1"}}, {"a", []string{"DEL", "{w}1"}}, {"a", []string{"SET", "{w}1", "y"}}, {"b", []string{"UNWATCH"}},
	} {
		rc, sc := rb, sb
		if step.by == "a" {
			rc, sc = ra, sa
		}
		_, _ = rc.do(step.args...)
		_, _ = sc.do(step.args...)
		w, g := clientLine(t, ra, rID), settledLine(t, sa, sID)
		if !mapsEqual(w, g) {
			t.Errorf("after %s's %q:\n  redis:    %v\n  slotraft: %v", step.by, step.args, w, g)
		}
	}
}

// settledLine is clientLine once the connection's output queue is empty:
// a subscriber's reply leaves the queue's count a moment after the client
// has read it (the writer updates the count after its write returns).
func settledLine(t *testing.T, c *client, id string) map[string]string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		l := clientLine(t, c, id)
		if l["oll"] == "0" || time.Now().After(deadline) {
			return l
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func idOf(t *testing.T, c *client) string {
	t.Helper()
	r, err := c.do("CLIENT", "ID")
	if err != nil {
		t.Fatal(err)
	}
	return r.str
}

// TestClientBlockingDifferential: a client blocked in BLPOP, then held by
// CLIENT PAUSE, then killed, seen and acted on from another connection.
func TestClientBlockingDifferential(t *testing.T) {
	rAddr, sAddr := startRedis(t), startSlotraft(t)
	for _, tc := range []struct {
		name  string
		block []string
		act   []string // %ID is the blocked client's id
	}{
		{"unblock timeout", []string{"BLPOP", "bl", "0"}, []string{"CLIENT", "UNBLOCK", "%ID"}},
		{"unblock error", []string{"BLPOP", "bl", "0"}, []string{"CLIENT", "UNBLOCK", "%ID", "ERROR"}},
		{"unblock xread", []string{"XREAD", "BLOCK", "0", "STREAMS", "st", "$"}, []string{"CLIENT", "UNBLOCK", "%ID", "ERROR"}},
		{"write pause", []string{"SET", "pk", "1"}, []string{"CLIENT", "UNPAUSE"}},
		{"publish held", []string{"PUBLISH", "ch", "m"}, []string{"CLIENT", "UNPAUSE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen [2]string
			for i, addr := range []string{rAddr, sAddr} {
				seen[i] = blockedRun(t, addr, tc.block, tc.act)
			}
			if seen[0] != seen[1] {
				t.Errorf("\n  redis:    %s\n  slotraft: %s", seen[0], seen[1])
			}
		})
	}
}

var blockedRe = regexp.MustCompile(`blocked_clients:(\d+)`)

// blockedRun blocks a client with block (after a CLIENT PAUSE WRITE for
// writes), waits until INFO counts it blocked, runs act from another
// connection and renders what both saw.
func blockedRun(t *testing.T, addr string, block, act []string) string {
	a, b := connect(t, addr, "2"), connect(t, addr, "2")
	id := idOf(t, b)
	paused := act[1] == "UNPAUSE"
	if paused {
		if r, _ := a.do("CLIENT", "PAUSE", "60000", "WRITE"); r.str != "OK" {
			t.Fatalf("PAUSE: %v", r)
		}
	}
	b.send(block...)
	if err := b.w.Flush(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		r, _ := a.do("INFO", "clients")
		if m := blockedRe.FindStringSubmatch(r.str); m != nil && m[1] == "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %q never blocked", addr, block)
		}
	}
	flags := regexp.MustCompile(`flags=(\S+)`).FindStringSubmatch(mustDo(t, a, "CLIENT", "LIST", "ID", id).str)[1]
	args := slices.Clone(act)
	for i := range args {
		args[i] = strings.ReplaceAll(args[i], "%ID", id)
	}
	acted := mustDo(t, a, args...)
	_ = b.conn.SetDeadline(time.Now().Add(10 * time.Second))
	got, err := b.read()
	if err != nil {
		t.Fatalf("%s: blocked reply: %v", addr, err)
	}
	return "flags=" + flags + " act=" + acted.String() + " reply=" + got.String()
}

func mustDo(t *testing.T, c *client, args ...string) reply {
	t.Helper()
	r, err := c.do(args...)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return r
}

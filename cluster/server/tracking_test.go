package server

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/slots"
)

// Client-side caching, as Redis's tests/unit/tracking.tcl checks it, on
// real connections. The expected bytes are Redis 7.2's formats (the
// differential tests in difftest compare them with redis-server).

// inv is the RESP3 invalidate push of keys (a flush's null when keys is
// nil).
func inv(keys ...string) string {
	return ">2\r\n" + bulk("invalidate") + keysArray(keys)
}

// invMsg is the RESP2 message on __redis__:invalidate a subscribed
// redirection gets.
func invMsg(keys ...string) string {
	return "*3\r\n" + bulk("message") + bulk("__redis__:invalidate") + keysArray(keys)
}

func keysArray(keys []string) string {
	if keys == nil {
		return "_\r\n"
	}
	s := "*" + strconv.Itoa(len(keys)) + "\r\n"
	for _, k := range keys {
		s += bulk(k)
	}
	return s
}

// redirTarget is a RESP2 connection subscribed to __redis__:invalidate,
// and its client ID.
func redirTarget(t *testing.T, addr string) (*psConn, string) {
	t.Helper()
	rd := dialPS(t, addr)
	rd.send("CLIENT ID")
	id := strings.TrimSuffix(strings.TrimPrefix(rd.next(), ":"), "\r\n")
	rd.do("SUBSCRIBE __redis__:invalidate", confirm(2, "subscribe", "__redis__:invalidate", 1))
	return rd, id
}

func resp3(t *testing.T, addr string) *psConn {
	t.Helper()
	c := dialPS(t, addr)
	c.send("HELLO 3")
	c.next()
	return c
}

// invKeys reads invalidations (pushes or messages) until they named all
// of want, in any grouping; a key outside want fails.
func invKeys(t *testing.T, c *psConn, want ...string) {
	t.Helper()
	left := slices.Clone(want)
	for len(left) > 0 {
		got := c.next()
		keys, ok := invalidated(got)
		if !ok {
			t.Fatalf("got %q, want an invalidation of %q", got, left)
		}
		for _, k := range keys {
			i := slices.Index(left, k)
			if i < 0 {
				t.Fatalf("invalidation of %q, want only %q", k, left)
			}
			left = slices.Delete(left, i, i+1)
		}
	}
}

// invalidated parses an invalidation push or message: its keys.
func invalidated(raw string) ([]string, bool) {
	var rest string
	switch {
	case strings.HasPrefix(raw, ">2\r\n"+bulk("invalidate")):
		rest = strings.TrimPrefix(raw, ">2\r\n"+bulk("invalidate"))
	case strings.HasPrefix(raw, invMsg()[:len(invMsg())-3]):
		rest = strings.TrimPrefix(raw, invMsg()[:len(invMsg())-3])
	default:
		return nil, false
	}
	lines := strings.Split(rest, "\r\n")
	if !strings.HasPrefix(lines[0], "*") {
		return nil, false
	}
	var keys []string
	for i := 2; i < len(lines); i += 2 {
		keys = append(keys, lines[i])
	}
	return keys, true
}

func TestTrackingRedirectAndBcast(t *testing.T) {
	addr := singleNodeAddr(t)
	rd, id := redirTarget(t, addr)
	r := dialPS(t, addr)

	r.do("CLIENT TRACKING on REDIRECT "+id, "+OK\r\n")
	r.do("SET a{t} 1", "+OK\r\n")
	r.do("SET b{t} 1", "+OK\r\n")
	r.do("GET a{t}", bulk("1"))
	r.do("INCR b{t}", ":2\r\n") // not read: no invalidation
	r.do("INCR a{t}", ":2\r\n")
	rd.expect(invMsg("a{t}"))
	r.do("MGET a{t} b{t} c{t}", "*3\r\n"+bulk("2")+bulk("2")+"$-1\r\n")
	r.do("CLIENT TRACKING off", "+OK\r\n")

	// BCAST with the empty prefix: every key changed.
	r.do("CLIENT TRACKING on BCAST REDIRECT "+id, "+OK\r\n")
	r.do("MSET a{t} 1 b{t} 2 c{t} 3", "+OK\r\n")
	rd.expect(invMsg("a{t}", "b{t}", "c{t}"))

	// Prefixes: one message per prefix of one entry (the transaction).
	r.do("CLIENT TRACKING off", "+OK\r\n")
	r.do("CLIENT TRACKING on BCAST REDIRECT "+id+" PREFIX a: PREFIX b:", "+OK\r\n")
	r.do("MULTI", "+OK\r\n")
	for _, k := range []string{"a:1{t}", "a:2{t}", "b:1{t}", "b:2{t}", "c:1{t}"} {
		r.do("INCR "+k, "+QUEUED\r\n")
	}
	r.send("EXEC")
	r.next()
	rd.expect(invMsg("a:1{t}", "a:2{t}"), invMsg("b:1{t}", "b:2{t}"))

	// Adding a prefix while on.
	r.do("CLIENT TRACKING on BCAST REDIRECT "+id+" PREFIX c:", "+OK\r\n")
	r.do("INCR c:1234", ":1\r\n")
	rd.expect(invMsg("c:1234"))
	r.do("CLIENT TRACKINGINFO", "*6\r\n"+bulk("flags")+"*2\r\n"+bulk("on")+bulk("bcast")+
		bulk("redirect")+":"+id+"\r\n"+bulk("prefixes")+"*3\r\n"+bulk("a:")+bulk("b:")+bulk("c:"))
}

// infoLike returns what c answers to cmd (for a step whose reply is not
// checked byte by byte).
func infoLike(c *psConn, cmd string) string {
	c.send(cmd)
	return c.next()
}

func TestTrackingNoloop(t *testing.T) {
	addr := singleNodeAddr(t)
	rd, id := redirTarget(t, addr)
	r, w := dialPS(t, addr), dialPS(t, addr)

	r.do("CLIENT TRACKING on REDIRECT "+id+" NOLOOP", "+OK\r\n")
	r.do("MGET o1{t} loop{t} o2{t}", "*3\r\n$-1\r\n$-1\r\n$-1\r\n")
	w.do("SET o1{t} 1", "+OK\r\n")
	r.do("SET loop{t} 1", "+OK\r\n") // its own change: not sent
	w.do("SET o2{t} 1", "+OK\r\n")
	rd.expect(invMsg("o1{t}"), invMsg("o2{t}"))
	// loop{t} stays tracked for it after its own change (Redis forgets
	// it): another client's change is sent.
	w.do("SET loop{t} 2", "+OK\r\n")
	rd.expect(invMsg("loop{t}"))

	r.do("CLIENT TRACKING off", "+OK\r\n")
	r.do("CLIENT TRACKING on BCAST REDIRECT "+id+" NOLOOP", "+OK\r\n")
	w.do("SET other1 1", "+OK\r\n")
	r.do("SET loopkey 1", "+OK\r\n")
	w.do("SET other2 1", "+OK\r\n")
	invKeys(t, rd, "other1", "other2")

	// Active expiry is nobody's change: a NOLOOP client is told.
	r.do("SET mykey v PX 1", "+OK\r\n")
	r.do("SET mykeyother v", "+OK\r\n")
	invKeys(t, rd, "mykey")
}

func TestTrackingRESP3(t *testing.T) {
	addr := singleNodeAddr(t)
	rd, id := redirTarget(t, addr)
	r, w := resp3(t, addr), dialPS(t, addr)

	r.do("CLIENT TRACKING on", "+OK\r\n")
	w.do("SET key1 1", "+OK\r\n")
	r.do("GET key1", bulk("1"))
	w.do("SET key1 2", "+OK\r\n")
	r.expect(inv("key1"))

	// Redirected from a RESP3 client; keys remembered in RESP2 still
	// invalidated after switching.
	r.do("CLIENT TRACKING off", "+OK\r\n")
	r.do("CLIENT TRACKING on REDIRECT "+id, "+OK\r\n")
	w.do("SET key1 1", "+OK\r\n")
	r.do("GET key1", bulk("1"))
	w.do("SET key1 2", "+OK\r\n")
	rd.expect(invMsg("key1"))
	r.send("HELLO 2")
	r.next()
	r.do("GET key1", bulk("2"))
	r.send("HELLO 3")
	r.next()
	w.do("SET key1 3", "+OK\r\n")
	rd.expect(invMsg("key1"))

	// After switching from normal tracking to BCAST, pre-BCAST keys are
	// not invalidated as such.
	r.do("CLIENT TRACKING off", "+OK\r\n")
	r.do("CLIENT TRACKING on", "+OK\r\n")
	r.do("GET key1", bulk("3"))
	r.do("CLIENT TRACKING off", "+OK\r\n")
	r.do("CLIENT TRACKING on BCAST", "+OK\r\n")
	w.do("INCR key1", ":4\r\n")
	r.expect(inv("key1")) // the broadcast, once
	r.do("PING", "+PONG\r\n")

	// HDEL's invalidation comes after its reply; a transaction's after EXEC's.
	r.do("CLIENT TRACKING off", "+OK\r\n")
	r.do("CLIENT TRACKING on", "+OK\r\n")
	r.do("HSET myhash f 1", ":1\r\n")
	r.do("HGET myhash f", bulk("1"))
	r.do("HDEL myhash f", ":1\r\n", inv("myhash"))
	r.do("MSET a{t} 1 b{t} 2", "+OK\r\n")
	r.do("GET a{t}", bulk("1"))
	r.do("MULTI", "+OK\r\n")
	r.do("INCR a{t}", "+QUEUED\r\n")
	r.do("GET b{t}", "+QUEUED\r\n")
	r.do("EXEC", "*2\r\n:2\r\n"+bulk("2"), inv("a{t}"))
	// Keys read inside a transaction are remembered.
	w.do("SET b{t} 3", "+OK\r\n")
	r.expect(inv("b{t}"))

	// A redirection to a RESP3 client that never subscribed: pushes.
	r3 := resp3(t, addr)
	r3.send("CLIENT ID")
	id3 := strings.TrimSuffix(strings.TrimPrefix(r3.next(), ":"), "\r\n")
	r.do("CLIENT TRACKING off", "+OK\r\n")
	r.do("CLIENT TRACKING on REDIRECT "+id3, "+OK\r\n")
	r.do("GET key1", bulk("4"))
	w.do("INCR key1", ":5\r\n")
	r3.expect(inv("key1"))
	// ... even with its replies off, as Redis.
	r3.send("CLIENT REPLY OFF")
	r.do("GET key1", bulk("5"))
	w.do("INCR key1", ":6\r\n")
	r3.expect(inv("key1"))
	r3.do("CLIENT REPLY ON", "+OK\r\n")
	r3.do("PING", "+PONG\r\n")
}

func TestTrackingRedirBroken(t *testing.T) {
	addr := singleNodeAddr(t)
	rd, id := redirTarget(t, addr)
	r, w := resp3(t, addr), dialPS(t, addr)
	r.do("CLIENT TRACKING on REDIRECT "+id, "+OK\r\n")
	w.do("SET key1 1", "+OK\r\n")
	r.do("GET key1", bulk("1"))
	rd.do("QUIT", "+OK\r\n")
	rd.expectEOF()
	cluster.PollUntil(t, "the redirection gone", func() bool {
		return !strings.Contains(infoLike(w, "CLIENT LIST"), "id="+id+" ")
	})
	w.do("SET key1 2", "+OK\r\n")
	r.expect(">2\r\n" + bulk("tracking-redir-broken") + ":" + id + "\r\n")
	r.do("CLIENT TRACKINGINFO", "%3\r\n"+bulk("flags")+"~2\r\n"+bulk("on")+bulk("broken_redirect")+
		bulk("redirect")+":"+id+"\r\n"+bulk("prefixes")+"*0\r\n")
	line := infoLike(r, "CLIENT INFO")
	if !strings.Contains(line, "flags=tR ") || !strings.Contains(line, "redir="+id+" ") {
		t.Errorf("CLIENT INFO %q: want flags=tR and redir=%s", line, id)
	}
}

func TestTrackingOptinOptout(t *testing.T) {
	addr := singleNodeAddr(t)
	rd, id := redirTarget(t, addr)
	r, w := dialPS(t, addr), dialPS(t, addr)

	r.do("CLIENT TRACKING on OPTIN REDIRECT "+id, "+OK\r\n")
	w.do("SET key1 1", "+OK\r\n")
	r.do("GET key1", bulk("1")) // not remembered: no CACHING yes
	w.do("SET key1 2", "+OK\r\n")
	r.do("CLIENT CACHING yes", "+OK\r\n")
	r.do("CLIENT ID", ":"+idOf(t, r)+"\r\n") // a CLIENT command keeps CACHING
	r.do("GET key2", "$-1\r\n")
	r.do("GET key3", "$-1\r\n") // CACHING was for one command
	w.do("SET key3 1", "+OK\r\n")
	w.do("SET key2 1", "+OK\r\n")
	rd.expect(invMsg("key2"))

	r.do("CLIENT TRACKING off", "+OK\r\n")
	r.do("CLIENT TRACKING on OPTOUT REDIRECT "+id, "+OK\r\n")
	r.do("CLIENT CACHING no", "+OK\r\n")
	r.do("GET key1", bulk("2")) // not remembered
	r.do("GET key2", bulk("1"))
	w.do("SET key1 3", "+OK\r\n")
	w.do("SET key2 2", "+OK\r\n")
	rd.expect(invMsg("key2"))

	// A pipeline: CACHING covers the read right after it only.
	r.send("CLIENT CACHING no")
	r.send("GET key4")
	r.send("GET key5")
	r.expect("+OK\r\n", "$-1\r\n", "$-1\r\n")
	w.do("SET key4 1", "+OK\r\n")
	w.do("SET key5 1", "+OK\r\n")
	rd.expect(invMsg("key5"))
}

// idOf is c's client ID.
func idOf(t *testing.T, c *psConn) string {
	t.Helper()
	c.send("CLIENT ID")
	return strings.TrimSuffix(strings.TrimPrefix(c.next(), ":"), "\r\n")
}

func TestTrackingScripts(t *testing.T) {
	addr := singleNodeAddr(t)
	r, w := resp3(t, addr), dialPS(t, addr)
	r.do("CLIENT TRACKING on", "+OK\r\n")
	w.do("MSET key1{t} 1 key2{t} 1", "+OK\r\n")
	// A script that reads nothing tracks nothing, whatever its keys.
	r.do("EVAL \"redis.call('set', 'key3{t}', 'bar')\" 2 key1{t} key2{t}", "_\r\n")
	w.do("MSET key2{t} 2 key1{t} 2", "+OK\r\n")
	r.do("PING", "+PONG\r\n")
	// A script tracks the keys its read commands read, only.
	r.do("EVAL \"redis.call('get', 'key2{t}')\" 2 key1{t} key2{t}", "_\r\n")
	w.do("MSET key2{t} 3 key1{t} 3", "+OK\r\n")
	r.expect(inv("key2{t}"))
	r.do("PING", "+PONG\r\n")
	// Read-only variants, run outside the log.
	r.do("EVAL_RO \"redis.call('ping')\" 2 key1{t} key2{t}", "_\r\n")
	w.do("MSET key2{t} 4 key1{t} 4", "+OK\r\n")
	r.do("PING", "+PONG\r\n")
	r.do("EVAL_RO \"redis.call('get', 'key2{t}')\" 2 key1{t} key2{t}", "_\r\n")
	w.do("MSET key2{t} 5 key1{t} 5", "+OK\r\n")
	r.expect(inv("key2{t}"))
	r.do("PING", "+PONG\r\n")

	// NOLOOP: a script's write is the client's own change.
	n := resp3(t, addr)
	n.do("CLIENT TRACKING on NOLOOP", "+OK\r\n")
	n.do("GET key1{t}", bulk("5"))
	n.do("EVAL \"return redis.call('set', KEYS[1], '6')\" 1 key1{t}", "+OK\r\n")
	n.do("GET key1{t}", bulk("6"))
	w.do("SET key1{t} 7", "+OK\r\n")
	n.expect(inv("key1{t}"))
}

func TestTrackingFlush(t *testing.T) {
	addr := singleNodeAddr(t)
	rd, id := redirTarget(t, addr)
	r, w, r3 := dialPS(t, addr), dialPS(t, addr), resp3(t, addr)
	r.do("CLIENT TRACKING on REDIRECT "+id, "+OK\r\n")
	r3.do("CLIENT TRACKING on", "+OK\r\n")
	w.do("SET key1 1", "+OK\r\n")
	r.do("GET key1", bulk("1"))
	r.do("GET key2", "$-1\r\n")
	r3.do("GET key1", bulk("1"))
	if got := infoField(infoLike(w, "INFO stats"), "tracking_total_keys"); got != "2" {
		t.Errorf("tracking_total_keys %s, want 2", got)
	}
	// FLUSHALL flushes every group led here: one null each, nonetheless.
	w.do("FLUSHALL ASYNC", "+OK\r\n")
	rd.expect("*3\r\n" + bulk("message") + bulk("__redis__:invalidate") + "$-1\r\n")
	r3.expect(inv())
	if got := infoField(infoLike(w, "INFO stats"), "tracking_total_keys"); got != "0" {
		t.Errorf("tracking_total_keys %s after FLUSHALL, want 0", got)
	}
	r3.do("PING", "+PONG\r\n")
	// The flushing client's own null comes after its reply, in a
	// transaction too.
	r3.do("SET a{t} 1", "+OK\r\n")
	r3.do("GET a{t}", bulk("1"))
	r.do("GET a{t}", bulk("1"))
	r3.do("MULTI", "+OK\r\n")
	r3.do("FLUSHDB", "+QUEUED\r\n")
	r3.do("EXEC", "*1\r\n+OK\r\n", inv())
	rd.expect("*3\r\n" + bulk("message") + bulk("__redis__:invalidate") + "$-1\r\n")
	r3.do("PING", "+PONG\r\n")

	// A client that read nothing since its last null holds nothing: the
	// next flush sends it no other (here, r's redirection gets nothing
	// before the next key).
	w.do("FLUSHALL", "+OK\r\n")
	r.do("GET b", "$-1\r\n")
	w.do("SET b 1", "+OK\r\n")
	rd.expect(invMsg("b"))
	r3.do("PING", "+PONG\r\n")
}

func TestTrackingTableLimit(t *testing.T) {
	addr := singleNodeAddr(t)
	rd, id := redirTarget(t, addr)
	r, w := dialPS(t, addr), dialPS(t, addr)
	r.do("CLIENT TRACKING on REDIRECT "+id, "+OK\r\n")
	const n = 250
	for i := range n {
		r.do(fmt.Sprintf("GET key%d", i), "$-1\r\n")
	}
	w.do("CONFIG SET tracking-table-max-keys 1", "+OK\r\n")
	// Evicted keys are invalidated as if they changed, until one is left
	// (beyond the first round's effort of 100 keys).
	for range n - 1 {
		if _, ok := invalidated(rd.next()); !ok {
			t.Fatal("not an invalidation")
		}
	}
	if got := infoField(infoLike(w, "INFO stats"), "tracking_total_keys"); got != "1" {
		t.Errorf("tracking_total_keys %s, want 1", got)
	}
	w.do("CONFIG SET tracking-table-max-keys 0", "+OK\r\n")
}

func TestTrackingInfoAndFlags(t *testing.T) {
	addr := singleNodeAddr(t)
	_, id := redirTarget(t, addr)
	r, b, w := dialPS(t, addr), dialPS(t, addr), dialPS(t, addr)
	r.do("CLIENT GETREDIR", ":-1\r\n")
	r.do("CLIENT TRACKINGINFO", "*6\r\n"+bulk("flags")+"*1\r\n"+bulk("off")+bulk("redirect")+":-1\r\n"+bulk("prefixes")+"*0\r\n")
	r.do("CLIENT TRACKING on REDIRECT "+id, "+OK\r\n")
	r.do("CLIENT GETREDIR", ":"+id+"\r\n")
	w.do("SET key1 1", "+OK\r\n")
	w.do("SET key2 2", "+OK\r\n")
	r.do("GET key1", bulk("1"))
	r.do("GET key2", bulk("2"))
	b.do("CLIENT TRACKING on BCAST PREFIX prefix:", "+OK\r\n")
	w.do("SET prefix:key1 1", "+OK\r\n")
	info := infoLike(w, "INFO")
	for f, want := range map[string]string{"tracking_total_items": "2", "tracking_total_keys": "2",
		"tracking_total_prefixes": "1", "tracking_clients": "2"} {
		if got := infoField(info, f); got != want {
			t.Errorf("%s: %s, want %s", f, got, want)
		}
	}
	for _, c := range []struct {
		conn         *psConn
		flags, redir string
	}{{r, "t", id}, {b, "tB", "0"}, {w, "N", "-1"}} {
		line := infoLike(c.conn, "CLIENT INFO")
		if fieldOf(line, "flags") != c.flags || fieldOf(line, "redir") != c.redir {
			t.Errorf("CLIENT INFO %q: want flags=%s redir=%s", line, c.flags, c.redir)
		}
	}
	r.do("CLIENT TRACKING off", "+OK\r\n")
	r.do("CLIENT TRACKING on optin noloop", "+OK\r\n")
	r.do("CLIENT CACHING yes", "+OK\r\n")
	r.do("CLIENT TRACKINGINFO", "*6\r\n"+bulk("flags")+"*4\r\n"+bulk("on")+bulk("optin")+bulk("caching-yes")+bulk("noloop")+
		bulk("redirect")+":0\r\n"+bulk("prefixes")+"*0\r\n")
	r.do("CLIENT GETREDIR", ":0\r\n")
	// RESET turns tracking off.
	b.do("RESET", "+RESET\r\n")
	b.do("CLIENT TRACKINGINFO", "*6\r\n"+bulk("flags")+"*1\r\n"+bulk("off")+bulk("redirect")+":-1\r\n"+bulk("prefixes")+"*0\r\n")
	info = infoLike(w, "INFO")
	if infoField(info, "tracking_clients") != "1" || infoField(info, "tracking_total_prefixes") != "0" {
		t.Errorf("after RESET: tracking_clients %s, prefixes %s", infoField(info, "tracking_clients"), infoField(info, "tracking_total_prefixes"))
	}
	// CLIENT HELP is Redis 7.2's text (networking.c), tracking lines included.
	want := "*" + strconv.Itoa(len(clientHelp72)+3) + "\r\n+CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n"
	for _, l := range clientHelp72 {
		want += "+" + l + "\r\n"
	}
	r.do("CLIENT HELP", want+"+HELP\r\n+    Print this help.\r\n")
}

// clientHelp72 is Redis 7.2's CLIENT HELP, from its source.
var clientHelp72 = []string{
	"CACHING (YES|NO)",
	"    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
	"GETREDIR",
	"    Return the client ID we are redirecting to when tracking is enabled.",
	"GETNAME",
	"    Return the name of the current connection.",
	"ID",
	"    Return the ID of the current connection.",
	"INFO",
	"    Return information about the current client connection.",
	"KILL <ip:port>",
	"    Kill connection made from <ip:port>.",
	"KILL <option> <value> [<option> <value> [...]]",
	"    Kill connections. Options are:",
	"    * ADDR (<ip:port>|<unixsocket>:0)",
	"      Kill connections made from the specified address",
	"    * LADDR (<ip:port>|<unixsocket>:0)",
	"      Kill connections made to specified local address",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	"      Kill connections by type.",
	"    * USER <username>",
	"      Kill connections authenticated by <username>.",
	"    * SKIPME (YES|NO)",
	"      Skip killing current connection (default: yes).",
	"LIST [options ...]",
	"    Return information about client connections. Options:",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	"      Return clients of specified type.",
	"UNPAUSE",
	"    Stop the current client pause, resuming traffic.",
	"PAUSE <timeout> [WRITE|ALL]",
	"    Suspend all, or just write, clients for <timeout> milliseconds.",
	"REPLY (ON|OFF|SKIP)",
	"    Control the replies sent to the current connection.",
	"SETNAME <name>",
	"    Assign the name <name> to the current connection.",
	"SETINFO <option> <value>",
	"    Set client meta attr. Options are:",
	"    * LIB-NAME: the client lib name.",
	"    * LIB-VER: the client lib version.",
	"UNBLOCK <clientid> [TIMEOUT|ERROR]",
	"    Unblock the specified blocked client.",
	"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
	"         [OPTIN] [OPTOUT] [NOLOOP]",
	"    Control server assisted client side caching.",
	"TRACKINGINFO",
	"    Report tracking status for the current connection.",
	"NO-EVICT (ON|OFF)",
	"    Protect current client connection from eviction.",
	"NO-TOUCH (ON|OFF)",
	"    Will not touch LRU/LFU stats when this mode is on.",
}

func TestTrackingErrors(t *testing.T) {
	addr := singleNodeAddr(t)
	r := dialPS(t, addr)
	for _, tc := range [][2]string{
		{"CLIENT TRACKING ON BCAST PREFIX FOOBAR PREFIX FOO", "-ERR Prefix 'FOOBAR' overlaps with another provided prefix 'FOO'. Prefixes for a single client must not overlap.\r\n"},
		{"CLIENT TRACKING ON BCAST PREFIX FOO PREFIX FOOBAR", "-ERR Prefix 'FOO' overlaps with another provided prefix 'FOOBAR'. Prefixes for a single client must not overlap.\r\n"},
		{"CLIENT TRACKING ON BCAST PREFIX FOO PREFIX BAR", "+OK\r\n"},
		{"CLIENT TRACKING ON BCAST PREFIX FO", "-ERR Prefix 'FO' overlaps with an existing prefix 'FOO'. Prefixes for a single client must not overlap.\r\n"},
		{"CLIENT TRACKING ON BCAST PREFIX BARB", "-ERR Prefix 'BARB' overlaps with an existing prefix 'BAR'. Prefixes for a single client must not overlap.\r\n"},
		{"CLIENT TRACKING ON", "-ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.\r\n"},
		{"CLIENT TRACKING ON BCAST OPTIN", "-ERR OPTIN and OPTOUT are not compatible with BCAST\r\n"},
		{"CLIENT CACHING yes", "-ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.\r\n"},
		{"CLIENT TRACKING OFF", "+OK\r\n"},
		{"CLIENT CACHING yes", "-ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled\r\n"},
		{"CLIENT TRACKING ON PREFIX a", "-ERR PREFIX option requires BCAST mode to be enabled\r\n"},
		{"CLIENT TRACKING ON OPTIN OPTOUT", "-ERR You can't specify both OPTIN mode and OPTOUT mode\r\n"},
		{"CLIENT TRACKING ON REDIRECT 987654", "-ERR The client ID you want redirect to does not exist\r\n"},
		{"CLIENT TRACKING OFF REDIRECT 987654", "-ERR The client ID you want redirect to does not exist\r\n"},
		{"CLIENT TRACKING ON REDIRECT x", "-ERR value is not an integer or out of range\r\n"},
		{"CLIENT TRACKING ON REDIRECT", "-ERR syntax error\r\n"},
		{"CLIENT TRACKING ON FOO", "-ERR syntax error\r\n"},
		{"CLIENT TRACKING MAYBE", "-ERR syntax error\r\n"},
		{"CLIENT TRACKING ON OPTIN", "+OK\r\n"},
		{"CLIENT TRACKING ON OPTOUT", "-ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.\r\n"},
		{"CLIENT CACHING no", "-ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.\r\n"},
		{"CLIENT CACHING maybe", "-ERR syntax error\r\n"},
		{"CLIENT CACHING", "-ERR wrong number of arguments for 'client|caching' command\r\n"},
		{"CLIENT TRACKING", "-ERR wrong number of arguments for 'client|tracking' command\r\n"},
		{"CLIENT GETREDIR x", "-ERR wrong number of arguments for 'client|getredir' command\r\n"},
	} {
		r.do(tc[0], tc[1])
	}
	id := idOf(t, r)
	r.do("CLIENT TRACKING ON REDIRECT "+id+" REDIRECT "+id, "-ERR A client can only redirect to a single other client\r\n")
}

// TestTrackingBlockedMove: an unblocked BLMOVE's reply comes before the
// invalidation of the key it pushed to.
func TestTrackingBlockedMove(t *testing.T) {
	addr := singleNodeAddr(t)
	r, w := resp3(t, addr), dialPS(t, addr)
	w.do("RPUSH list2{t} a", ":1\r\n")
	r.do("CLIENT TRACKING on", "+OK\r\n")
	r.do("LRANGE list2{t} 0 -1", "*1\r\n"+bulk("a"))
	r.send("BLMOVE list1{t} list2{t} left left 0")
	cluster.PollUntil(t, "BLMOVE blocked", func() bool { return infoField(infoLike(w, "INFO clients"), "blocked_clients") == "1" })
	w.do("RPUSH list1{t} foo", ":1\r\n")
	r.expect(bulk("foo"), inv("list2{t}"))
}

// TestTrackingExpiryAndEviction: keys deleted by active expiry and by
// eviction under maxmemory are invalidated.
func TestTrackingExpiryAndEviction(t *testing.T) {
	addr := singleNodeAddr(t)
	r, w := resp3(t, addr), dialPS(t, addr)
	r.do("CLIENT TRACKING on", "+OK\r\n")
	w.do("SET ex v PX 300", "+OK\r\n")
	r.do("GET ex", bulk("v"))
	r.expect(inv("ex")) // the leader's active expiry, within ~100 ms

	w.do("SET big "+strings.Repeat("x", 100000), "+OK\r\n")
	w.do("SETEX volatile 10000 x", "+OK\r\n")
	r.do("GET volatile", bulk("x"))
	w.do("CONFIG SET maxmemory-policy volatile-random", "+OK\r\n")
	w.do("CONFIG SET maxmemory 1000", "+OK\r\n")
	r.expect(inv("volatile"))
	w.do("CONFIG SET maxmemory 0", "+OK\r\n")
}

// TestTrackingAcrossNodes: a client of a node that does not lead the
// key's group reads it from its local replica (READONLY); the key's
// changes, written on the leader through another node's connection, reach
// it when its replica applies them — writes, active expiry, and a write
// proposed by the leader of a later term.
func TestTrackingAcrossNodes(t *testing.T) {
	c := cluster.NewTestCluster(t, 3, 3)
	const gid = 1
	li, leaderAddr := serveLeader(t, c, gid)
	fi := (li + 1) % 3
	_, followerAddr := serveNode(t, c.Nodes[fi])
	key := cluster.KeyIn(gid, 3, "tk")

	w := dialPS(t, leaderAddr)
	w.do("SET "+key+" v1", "+OK\r\n")
	r := resp3(t, followerAddr)
	r.do("READONLY", "+OK\r\n")
	cluster.PollUntil(t, "the follower applied the write", func() bool {
		r.send("GET " + key)
		return r.next() == bulk("v1")
	})
	r.do("CLIENT TRACKING on", "+OK\r\n")
	r.do("GET "+key, bulk("v1"))
	w.do("SET "+key+" v2", "+OK\r\n")
	r.expect(inv(key))
	r.do("GET "+key, bulk("v2")) // the follower applied before it invalidated

	// A RESP2 redirection on the follower node, and active expiry (the
	// leader proposes the deletion, the follower applies it).
	rd, id := redirTarget(t, followerAddr)
	r2 := dialPS(t, followerAddr)
	r2.do("READONLY", "+OK\r\n")
	w.do("SET "+key+" v3 PX 1500", "+OK\r\n")
	r.expect(inv(key))
	cluster.PollUntil(t, "the follower has v3", func() bool {
		r2.send("GET " + key)
		return r2.next() == bulk("v3")
	})
	r2.do("CLIENT TRACKING on REDIRECT "+id, "+OK\r\n")
	r2.do("GET "+key, bulk("v3"))
	rd.expect(invMsg(key)) // expired on the leader, applied here

	// The leader's own tracking client is told too: each node its own.
	l := resp3(t, leaderAddr)
	l.do("CLIENT TRACKING on", "+OK\r\n")
	l.send("GET " + key)
	l.next()
	wf := dialPS(t, followerAddr) // a write sent to the follower is redirected
	wf.send("SET " + key + " x")
	if got := wf.next(); !strings.HasPrefix(got, "-MOVED") {
		t.Fatalf("SET on the follower: %q, want MOVED", got)
	}
	w.do("SET "+key+" v4", "+OK\r\n")
	l.expect(inv(key))
}

// TestTrackingSlotMigration: moving a tracked key's slot to another group
// deletes the key from its old group (the migration's drop), which
// invalidates it; the key reads the same from its new group.
func TestTrackingSlotMigration(t *testing.T) {
	c := cluster.NewTestCluster(t, 1, 1)
	for gid := uint32(1); gid <= 3; gid++ {
		c.Leader(gid)
	}
	n := c.Nodes[0]
	_, addr := serveNode(t, n)
	const key = "mig{m}"
	r, w := resp3(t, addr), dialPS(t, addr)
	w.do("SET "+key+" v", "+OK\r\n")
	r.do("CLIENT TRACKING on", "+OK\r\n")
	r.do("GET "+key, bulk("v"))
	slot := slots.Of([]byte(key))
	m := n.Map()
	from, _ := m.GroupOf(slot)
	to := m.Groups[0].ID
	if to == from.ID {
		to = m.Groups[1].ID
	}
	if k, err := n.MoveSlots(t.Context(), to, []uint16{slot}); err != nil || k != 1 {
		t.Fatalf("MoveSlots: %d, %v", k, err)
	}
	r.expect(inv(key))
	cluster.PollUntil(t, "the slot in its new group", func() bool {
		g, _ := n.Map().GroupOf(slot)
		return g.ID == to && len(n.Map().Migrations) == 0
	})
	r.do("GET "+key, bulk("v"))
}

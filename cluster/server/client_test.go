package server

import (
	"errors"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
	"github.com/slotraft/slotraft/store"
)

// clientNode serves a one-node cluster whose every group is led here.
func clientNode(t *testing.T) (*Server, *cluster.Node, string) {
	c := cluster.NewTestCluster(t, 1, 1)
	for gid := uint32(1); gid <= 3; gid++ {
		c.Leader(gid)
	}
	srv, addr := serveNode(t, c.Nodes[0])
	return srv, c.Nodes[0], addr
}

// do sends one command and reads its reply.
func (b *blkConn) do(args ...string) string {
	b.t.Helper()
	b.send(args...)
	return b.read(10 * time.Second)
}

// silent checks that nothing arrives for a moment (a reply dropped or
// held back): the read deadline is the wait, no condition is polled.
func (b *blkConn) silent(d time.Duration) {
	b.t.Helper()
	_ = b.c.SetReadDeadline(time.Now().Add(d))
	if n, err := b.rd.Peek(1); err == nil {
		b.t.Fatalf("got %q, want nothing", n)
	} else if ne := (net.Error)(nil); !errors.As(err, &ne) || !ne.Timeout() {
		b.t.Fatalf("read: %v, want a timeout", err)
	}
}

// closed checks that the server closed the connection.
func (b *blkConn) closed() {
	b.t.Helper()
	_ = b.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := b.rd.ReadByte(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		b.t.Fatalf("connection still open (%v)", err)
	}
}

// fieldOf is the value of field name in a CLIENT LIST line.
func fieldOf(line, name string) string {
	m := regexp.MustCompile(`(?:^| )` + regexp.QuoteMeta(name) + `=(\S*)`).FindStringSubmatch(line)
	if m == nil {
		return "<none>"
	}
	return m[1]
}

func TestClientArgumentErrors(t *testing.T) {
	_, _, addr := clientNode(t)
	c := dialBlk(t, addr)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"CLIENT", "LIST", "TYPE", "foo"}, "-ERR Unknown client type 'foo'"},
		{[]string{"CLIENT", "LIST", "ID", "1", "x"}, "-ERR Invalid client ID"},
		{[]string{"CLIENT", "LIST", "ID", "0", "-5"}, ""},
		{[]string{"CLIENT", "LIST", "TYPE", "master"}, ""},
		{[]string{"CLIENT", "LIST", "TYPE", "replica"}, ""},
		{[]string{"CLIENT", "LIST", "foo"}, "-ERR syntax error"},
		{[]string{"CLIENT", "LIST", "TYPE", "normal", "x"}, "-ERR syntax error"},
		{[]string{"CLIENT", "KILL"}, "-ERR wrong number of arguments for 'client|kill' command"},
		{[]string{"CLIENT", "KILL", "1.2.3.4:5"}, "-ERR No such client"},
		{[]string{"CLIENT", "KILL", "ID", "0"}, "-ERR client-id should be greater than 0"},
		{[]string{"CLIENT", "KILL", "ID", "x"}, "-ERR client-id should be greater than 0"},
		{[]string{"CLIENT", "KILL", "ID", "99999", "TYPE"}, "-ERR syntax error"},
		{[]string{"CLIENT", "KILL", "TYPE", "foo"}, "-ERR Unknown client type 'foo'"},
		{[]string{"CLIENT", "KILL", "USER", "bob"}, "-ERR No such user 'bob'"},
		{[]string{"CLIENT", "KILL", "USER", "Default"}, "-ERR No such user 'Default'"},
		{[]string{"CLIENT", "KILL", "SKIPME", "maybe"}, "-ERR syntax error"},
		{[]string{"CLIENT", "KILL", "MAXAGE", "x"}, "-ERR maxage is not an integer or out of range"},
		{[]string{"CLIENT", "KILL", "MAXAGE", "0"}, "-ERR maxage should be greater than 0"},
		{[]string{"CLIENT", "KILL", "FOO", "bar"}, "-ERR syntax error"},
		{[]string{"CLIENT", "KILL", "ID", "99999"}, ":0"},
		{[]string{"CLIENT", "KILL", "USER", "default"}, ":0"},
		{[]string{"CLIENT", "KILL", "TYPE", "master", "SKIPME", "no"}, ":0"},
		{[]string{"CLIENT", "PAUSE", "x"}, "-ERR timeout is not an integer or out of range"},
		{[]string{"CLIENT", "PAUSE", "-1"}, "-ERR timeout is negative"},
		{[]string{"CLIENT", "PAUSE", "9223372036854775807"}, "-ERR timeout is out of range"},
		{[]string{"CLIENT", "PAUSE", "x", "FOO"}, "-ERR CLIENT PAUSE mode must be WRITE or ALL"},
		{[]string{"CLIENT", "PAUSE", "1", "ALL", "x"}, "-ERR unknown subcommand or wrong number of arguments for 'PAUSE'. Try CLIENT HELP."},
		{[]string{"CLIENT", "PAUSE", "0"}, "+OK"},
		{[]string{"CLIENT", "UNPAUSE", "x"}, "-ERR wrong number of arguments for 'client|unpause' command"},
		{[]string{"CLIENT", "UNPAUSE"}, "+OK"},
		{[]string{"CLIENT", "UNBLOCK", "x"}, "-ERR value is not an integer or out of range"},
		{[]string{"CLIENT", "UNBLOCK", "x", "FOO"}, "-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"},
		{[]string{"CLIENT", "UNBLOCK", "1", "2", "3"}, "-ERR unknown subcommand or wrong number of arguments for 'UNBLOCK'. Try CLIENT HELP."},
		{[]string{"CLIENT", "UNBLOCK", "99999", "error"}, ":0"},
		{[]string{"CLIENT", "NO-EVICT", "maybe"}, "-ERR syntax error"},
		{[]string{"CLIENT", "REPLY", "maybe"}, "-ERR syntax error"},
		{[]string{"CLIENT", "SETINFO", "lib-name", "a b"}, "-ERR lib-name cannot contain spaces, newlines or special characters."},
		{[]string{"CLIENT", "SETINFO", "LIB-VER", "1\n"}, "-ERR LIB-VER cannot contain spaces, newlines or special characters."},
		{[]string{"CLIENT", "SETINFO", "foo", "x"}, "-ERR Unrecognized option 'foo'"},
		{[]string{"CLIENT", "SETINFO", "lib-name", ""}, "+OK"},
	} {
		if got := c.do(tc.args...); got != tc.want {
			t.Errorf("%q = %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestClientInfoFields(t *testing.T) {
	_, _, addr := clientNode(t)
	a, b := dialBlk(t, addr), dialBlk(t, addr)
	info := strings.TrimSuffix(a.do("CLIENT", "INFO"), "\n")
	var names []string
	for _, f := range strings.Split(info, " ") {
		names = append(names, strings.SplitN(f, "=", 2)[0])
	}
	want := "id addr laddr fd name age idle flags db sub psub ssub multi qbuf qbuf-free argv-mem multi-mem rbs rbp obl oll omem tot-mem events cmd user redir resp lib-name lib-ver"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("fields:\n got %s\nwant %s", got, want)
	}
	for name, want := range map[string]string{"flags": "N", "multi": "-1", "qbuf": "26", "argv-mem": "10",
		"cmd": "client|info", "user": "default", "resp": "2", "addr": a.c.LocalAddr().String(), "laddr": addr} {
		if got := fieldOf(info, name); got != want {
			t.Errorf("CLIENT INFO %s=%s, want %s (%s)", name, got, want, info)
		}
	}
	id := b.do("CLIENT", "ID")[1:]
	b.do("CLIENT", "NO-EVICT", "on")
	b.do("READONLY")
	b.do("MULTI")
	b.do("SET", "k", "v")
	// b's state is published before its reply goes out; its output
	// buffer is shown emptied once the write returned, a moment later.
	line := a.do("CLIENT", "LIST", "ID", id)
	for end := time.Now().Add(5 * time.Second); fieldOf(line, "obl") != "0" && time.Now().Before(end); {
		line = a.do("CLIENT", "LIST", "ID", id)
	}
	for name, want := range map[string]string{"flags": "xre", "multi": "1", "multi-mem": "29", "argv-mem": "0", "cmd": "set", "qbuf": "0", "obl": "0"} {
		if got := fieldOf(line, name); got != want {
			t.Errorf("other's %s=%s, want %s (%s)", name, got, want, line)
		}
	}
	b.do("DISCARD")
	b.do("RESET")
	if got := fieldOf(a.do("CLIENT", "LIST", "ID", id), "flags"); got != "N" {
		t.Errorf("flags after RESET = %s, want N", got)
	}
	if got := a.do("CLIENT", "LIST", "TYPE", "normal"); strings.Count(got, "\n") != 2 {
		t.Errorf("CLIENT LIST TYPE normal:\n%s", got)
	}
	if got := a.do("CLIENT", "LIST", "TYPE", "pubsub"); got != "" {
		t.Errorf("CLIENT LIST TYPE pubsub:\n%s", got)
	}
}

func TestClientReply(t *testing.T) {
	_, _, addr := clientNode(t)
	c := dialBlk(t, addr)
	for _, tc := range []struct {
		name string
		cmds [][]string
		want []string // the replies that come, in order
	}{
		{"off then on", [][]string{{"CLIENT", "REPLY", "OFF"}, {"SET", "r", "1"}, {"GET", "r"}, {"NOPE"}, {"CLIENT", "REPLY", "ON"}, {"GET", "r"}}, []string{"+OK", "1"}},
		{"skip", [][]string{{"CLIENT", "REPLY", "SKIP"}, {"PING", "a"}, {"PING", "b"}}, []string{"b"}},
		{"skip while off", [][]string{{"CLIENT", "REPLY", "OFF"}, {"CLIENT", "REPLY", "SKIP"}, {"PING", "a"}, {"CLIENT", "REPLY", "ON"}, {"PING", "b"}}, []string{"+OK", "b"}},
		{"skip then on", [][]string{{"CLIENT", "REPLY", "SKIP"}, {"CLIENT", "REPLY", "ON"}, {"PING", "c"}}, []string{"+OK", "c"}},
		{"skip a write batch's first", [][]string{{"CLIENT", "REPLY", "SKIP"}, {"SET", "r", "2"}, {"INCR", "r"}}, []string{":3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			for _, cmd := range tc.cmds {
				c.send(cmd...)
			}
			for _, w := range tc.want {
				if got := c.read(10 * time.Second); got != w {
					t.Fatalf("got %q, want %q", got, w)
				}
			}
			c.silent(100 * time.Millisecond)
		})
	}
}

func TestClientKill(t *testing.T) {
	_, _, addr := clientNode(t)
	a := dialBlk(t, addr)
	t.Run("by id", func(t *testing.T) {
		b := dialBlk(t, addr)
		id := b.do("CLIENT", "ID")[1:]
		if got := a.do("CLIENT", "KILL", "ID", id); got != ":1" {
			t.Fatalf("KILL ID = %q", got)
		}
		b.closed()
		if got := a.do("CLIENT", "LIST", "ID", id); got != "" {
			t.Fatalf("killed client still listed: %s", got)
		}
	})
	t.Run("old form by address", func(t *testing.T) {
		b := dialBlk(t, addr)
		b.do("PING")
		if got := a.do("CLIENT", "KILL", b.c.LocalAddr().String()); got != "+OK" {
			t.Fatalf("KILL addr = %q", got)
		}
		b.closed()
	})
	t.Run("laddr and skipme", func(t *testing.T) {
		b := dialBlk(t, addr)
		b.do("PING")
		if got := a.do("CLIENT", "KILL", "LADDR", addr, "USER", "default"); got != ":1" {
			t.Fatalf("KILL LADDR = %q", got)
		}
		b.closed()
		if got := a.do("CLIENT", "KILL", "LADDR", addr, "SKIPME", "no"); got != ":1" {
			t.Fatalf("KILL self = %q", got)
		}
		a.closed()
	})
	t.Run("blocked and paused clients", func(t *testing.T) {
		a := dialBlk(t, addr)
		b, p := dialBlk(t, addr), dialBlk(t, addr)
		b.send("BLPOP", "killed-list", "0")
		a.do("CLIENT", "PAUSE", "60000", "WRITE")
		p.send("SET", "x", "y")
		t.Cleanup(func() { a.do("CLIENT", "UNPAUSE") })
		cluster.PollUntil(t, "two blocked clients", func() bool { return blockedClients(a) == "2" })
		if got := a.do("CLIENT", "KILL", "TYPE", "normal"); got != ":2" {
			t.Fatalf("KILL TYPE normal = %q", got)
		}
		b.closed()
		p.closed()
		cluster.PollUntil(t, "no blocked client", func() bool { return blockedClients(a) == "0" })
	})
}

// blockedClients is INFO's blocked_clients.
func blockedClients(c *blkConn) string {
	m := regexp.MustCompile(`blocked_clients:(\d+)`).FindStringSubmatch(c.do("INFO", "clients"))
	if m == nil {
		return "<none>"
	}
	return m[1]
}

func TestClientPause(t *testing.T) {
	srv, _, addr := clientNode(t)
	a, b := dialBlk(t, addr), dialBlk(t, addr)
	bID := b.do("CLIENT", "ID")[1:]
	held := func(t *testing.T, cmd []string, want string) {
		t.Helper()
		b.send(cmd...)
		cluster.PollUntil(t, "b paused", func() bool { return blockedClients(a) == "1" })
		if f := fieldOf(a.do("CLIENT", "LIST", "ID", bID), "flags"); !strings.Contains(f, "b") {
			t.Errorf("paused client's flags = %s", f)
		}
		if got := a.do("CLIENT", "UNPAUSE"); got != "+OK" {
			t.Fatalf("UNPAUSE = %q", got)
		}
		if got := b.read(10 * time.Second); got != want {
			t.Fatalf("%q after UNPAUSE = %q, want %q", cmd, got, want)
		}
	}
	t.Run("write mode holds writes only", func(t *testing.T) {
		for _, tc := range []struct {
			cmd  []string
			want string
		}{
			{[]string{"SET", "p", "1"}, "+OK"},
			{[]string{"PUBLISH", "ch", "m"}, ":0"},
			{[]string{"EVAL", "return 1", "0"}, ":1"},
			{[]string{"PFCOUNT", "hll"}, ":0"},
		} {
			a.do("CLIENT", "PAUSE", "60000", "WRITE")
			if got := b.do("GET", "p"); got != "nil" && got != "1" {
				t.Fatalf("GET while write-paused = %q", got)
			}
			held(t, tc.cmd, tc.want)
		}
	})
	t.Run("write mode holds EXEC of a write", func(t *testing.T) {
		b.do("MULTI")
		b.do("INCR", "p")
		a.do("CLIENT", "PAUSE", "60000", "WRITE")
		held(t, []string{"EXEC"}, "[:2]")
		b.do("MULTI")
		b.do("GET", "p")
		a.do("CLIENT", "PAUSE", "60000", "WRITE")
		if got := b.do("EXEC"); got != "[2]" {
			t.Fatalf("read-only EXEC = %q", got)
		}
		a.do("CLIENT", "UNPAUSE")
	})
	t.Run("all mode holds everything until it ends", func(t *testing.T) {
		start := time.Now()
		a.do("CLIENT", "PAUSE", "400", "ALL")
		b.send("PING")
		cluster.PollUntil(t, "b paused", func() bool { return srv.blockedN.Load() == 1 })
		if got := a.do("CLIENT", "UNPAUSE"); got != "+OK" || time.Since(start) < 400*time.Millisecond {
			t.Fatalf("UNPAUSE = %q after %v: the pausing client waits too", got, time.Since(start))
		}
		if got := b.read(10 * time.Second); got != "+PONG" {
			t.Fatalf("PING = %q", got)
		}
	})
	t.Run("stricter mode and later end win, the pausing client waits too", func(t *testing.T) {
		a.do("CLIENT", "PAUSE", "60000", "ALL")
		a.send("CLIENT", "PAUSE", "10", "WRITE")
		cluster.PollUntil(t, "a paused", func() bool { return srv.blockedN.Load() == 1 })
		b.send("GET", "p")
		cluster.PollUntil(t, "a and b paused", func() bool { return srv.blockedN.Load() == 2 })
		srv.pause.lift() // no client could: CLIENT UNPAUSE would wait as well
		if got := a.read(10 * time.Second); got != "+OK" {
			t.Fatalf("held PAUSE = %q", got)
		}
		if got := b.read(10 * time.Second); got != "2" {
			t.Fatalf("held GET = %q", got)
		}
		if end, all, _, active := srv.pause.current(time.Now()); !active || all || time.Until(end) > time.Second {
			t.Fatalf("pause after PAUSE 10 WRITE: end in %v, all %v, active %v", time.Until(end), all, active)
		}
		a.do("CLIENT", "UNPAUSE")
	})
}

func TestClientPauseStopsActiveExpiry(t *testing.T) {
	_, n, addr := clientNode(t)
	a := dialBlk(t, addr)
	key := "{x}exp"
	g := n.GroupOf(slots.Of([]byte(key)))
	stored := func() bool { // the key is past its deadline and still in the state
		found := false
		g.State().View(func(s store.Reader) { found = len(s.Expired(time.Now().UnixMilli(), 10)) > 0 })
		return found
	}
	a.do("SET", key, "v", "PX", "100")
	a.do("CLIENT", "PAUSE", "60000", "WRITE")
	cluster.PollUntil(t, "key past its deadline", stored)
	// Active expiry runs every 100 ms: for half a second it must not run.
	for deadline := time.Now().Add(500 * time.Millisecond); time.Now().Before(deadline); {
		if !stored() {
			t.Fatal("active expiry deleted the key during CLIENT PAUSE WRITE")
		}
		a.do("PING")
	}
	if got := a.do("GET", key); got != "nil" {
		t.Fatalf("GET of the expired key = %q", got)
	}
	a.do("CLIENT", "UNPAUSE")
	cluster.PollUntil(t, "key deleted after UNPAUSE", func() bool { return !stored() })
}

func TestClientUnblock(t *testing.T) {
	srv, _, addr := clientNode(t)
	a, b := dialBlk(t, addr), dialBlk(t, addr)
	bID := b.do("CLIENT", "ID")[1:]
	for _, tc := range []struct {
		name string
		cmd  []string
		how  []string
		want string
	}{
		{"timeout", []string{"BLPOP", "ub-list", "0"}, nil, "nil"},
		{"timeout named", []string{"BZPOPMIN", "ub-zset", "0"}, []string{"TIMEOUT"}, "nil"},
		{"error", []string{"BLPOP", "ub-list", "0"}, []string{"ERROR"}, "-UNBLOCKED client unblocked via CLIENT UNBLOCK"},
		{"error on XREAD", []string{"XREAD", "BLOCK", "0", "STREAMS", "ub-stream", "$"}, []string{"error"}, "-UNBLOCKED client unblocked via CLIENT UNBLOCK"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b.t = t
			b.send(tc.cmd...)
			cluster.PollUntil(t, "b blocked", func() bool { return srv.blockedN.Load() == 1 })
			if f := fieldOf(a.do("CLIENT", "LIST", "ID", bID), "flags"); f != "b" {
				t.Errorf("blocked client's flags = %s", f)
			}
			if got := a.do(append([]string{"CLIENT", "UNBLOCK", bID}, tc.how...)...); got != ":1" {
				t.Fatalf("UNBLOCK = %q", got)
			}
			if got := a.do(append([]string{"CLIENT", "UNBLOCK", bID}, tc.how...)...); got != ":0" {
				t.Fatalf("second UNBLOCK = %q", got)
			}
			if got := b.read(10 * time.Second); got != tc.want {
				t.Fatalf("%q = %q, want %q", tc.cmd, got, tc.want)
			}
			if got := b.do("PING"); got != "+PONG" {
				t.Fatalf("PING after = %q", got)
			}
			if n := blockedClients(a); n != "0" {
				t.Fatalf("blocked_clients = %s", n)
			}
		})
	}
	t.Run("not blocked", func(t *testing.T) {
		if got := a.do("CLIENT", "UNBLOCK", bID); got != ":0" {
			t.Fatalf("UNBLOCK of an idle client = %q", got)
		}
	})
	t.Run("served before the unblock lands keeps its element", func(t *testing.T) {
		served := fsm.Replied(resp.Array(resp.BulkString("k"), resp.BulkString("v")))
		if got := unblockedOutcome(served, true); got.Reply.Kind != resp.KindArray {
			t.Fatalf("served outcome replaced: %+v", got)
		}
		if got := unblockedOutcome(fsm.Replied(resp.NullArray()), false); got.Reply.Kind != resp.KindNullArray {
			t.Fatalf("TIMEOUT outcome replaced: %+v", got)
		}
	})
}

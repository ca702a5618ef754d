package server

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
)

// readLogs reads one array of the debugger's lines.
func (b *blkConn) readLogs() []string {
	b.t.Helper()
	_ = b.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	head, err := b.rd.ReadString('\n')
	if err != nil || !strings.HasPrefix(head, "*") {
		b.t.Fatalf("debugger output %q: %v", head, err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(head[1:]))
	out := make([]string, n)
	for i := range out {
		l, err := b.rd.ReadString('\n')
		if err != nil || !strings.HasPrefix(l, "+") {
			b.t.Fatalf("debugger line %q: %v", l, err)
		}
		out[i] = strings.TrimRight(l[1:], "\r\n")
	}
	return out
}

// startSession starts a debugging session of script on a new connection
// to addr and checks its first stop.
func startSession(t *testing.T, addr, script string, keysAndArgs ...string) *blkConn {
	t.Helper()
	b := dialBlk(t, addr)
	if got := b.do("SCRIPT", "DEBUG", "YES"); got != "+OK" {
		t.Fatalf("SCRIPT DEBUG YES: %s", got)
	}
	b.send(append([]string{"EVAL", script}, keysAndArgs...)...)
	if got := b.readLogs(); len(got) != 2 || got[0] != "* Stopped at 1, stop reason = step over" {
		t.Fatalf("first stop: %q", got)
	}
	return b
}

func TestScriptDebugCommand(t *testing.T) {
	addr := singleNodeAddr(t)
	do := connDo(t, addr)
	for _, c := range []struct{ args, want string }{
		{"SCRIPT DEBUG", "-ERR wrong number of arguments for 'script|debug' command"},
		{"SCRIPT DEBUG YES NO", "-ERR wrong number of arguments for 'script|debug' command"},
		{"SCRIPT DEBUG MAYBE", "-" + errDebugMode.Error()},
		{"SCRIPT DEBUG no", "+OK"},
		{"SCRIPT DEBUG SYNC", "-" + errDebugSync.Error()},
		{"EVAL return~1 0", "-" + errDebugSync.Error()}, // redis-cli --ldb-sync-mode's EVAL: not run for real
		{"EVAL return~1 0", ":1"},                       // once
		{"SCRIPT DEBUG YES", "+OK"},
		{"SCRIPT DEBUG NO", "+OK"},
		{"EVAL return~2 0", ":2"},
		{"SCRIPT DEBUG YES", "+OK"},
		{"EVALSHA abc 0", "-NOSCRIPT No matching script. Please use EVAL."},
		{"EVALSHA " + strings.Repeat("a", 40) + " 0", "-" + errDebugEvalSHA.Error()},
		{"EVALSHA_RO " + strings.Repeat("a", 40) + " 0", "-" + errDebugEvalSHA.Error()},
		{"EVAL return~1 2 {a}1 {b}2", "-CROSSSLOT Keys in request don't hash to the same slot"},
		{"FCALL nosuch 0", "-ERR Function not found"}, // functions are not debugged
		{"MULTI", "+OK"},
		{"SCRIPT DEBUG NO", "+QUEUED"},
		{"EXEC", "[-" + errDebugPipeline.Error() + "]"},
		{"SCRIPT DEBUG NO", "+OK"},
	} {
		args := strings.Fields(c.args)
		for i := range args {
			args[i] = strings.ReplaceAll(args[i], "~", " ")
		}
		if got := do(args...); got != c.want {
			t.Errorf("%s: %s, want %s", c.args, got, c.want)
		}
	}
	help := do("SCRIPT", "HELP")
	if !strings.Contains(help, "+DEBUG (YES|SYNC|NO) +    Set the debug mode for subsequent scripts executed.") {
		t.Errorf("SCRIPT HELP: %s", help)
	}

	b := dialBlk(t, addr)
	b.send("PING")
	b.send("SCRIPT", "DEBUG", "YES") // in one write: PING's reply is pending
	if got := b.read(10 * time.Second); got != "+PONG" {
		t.Fatalf("PING: %s", got)
	}
	if got := b.read(10 * time.Second); got != "-"+errDebugPipeline.Error() {
		t.Fatalf("SCRIPT DEBUG in a pipeline: %s", got)
	}
}

// TestScriptDebugSession: a session steps through a script that writes,
// while other clients write the same key; its writes are thrown away and
// the connection closes after the EVAL's reply.
func TestScriptDebugSession(t *testing.T) {
	srv, addr := serveNode(t, singleNode(t))
	do := connDo(t, addr)
	if got := do("SET", "k", "before"); got != "+OK" {
		t.Fatal(got)
	}
	b := startSession(t, addr, "redis.call('set', KEYS[1], ARGV[1])\nreturn redis.call('get', KEYS[1])", "1", "k", "mine")
	b.send("s")
	want := []string{"<redis> set k mine", `<reply> "+OK"`, "* Stopped at 2, stop reason = step over", "-> 2   return redis.call('get', KEYS[1])"}
	if got := b.readLogs(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("step: %q", got)
	}
	// The group goes on while the session waits; the session does not see it.
	if got := do("SET", "k", "theirs"); got != "+OK" {
		t.Fatalf("SET during the session: %s", got)
	}
	b.send("r", "get", "k")
	if got := b.readLogs(); strings.Join(got, "|") != `<redis> get k|<reply> "mine"` {
		t.Fatalf("r get k: %q", got)
	}
	cluster.PollUntil(t, "the session to be listed", func() bool { return srv.debugs.count() == 1 })
	b.send("c")
	if got := b.readLogs(); strings.Join(got, "|") != "<endsession>" {
		t.Fatalf("end: %q", got)
	}
	if got := b.read(10 * time.Second); got != "mine" {
		t.Fatalf("EVAL's reply: %s", got)
	}
	b.closed()
	if got := do("GET", "k"); got != "theirs" {
		t.Fatalf("GET k after the session: %s, want the other client's value", got)
	}
	cluster.PollUntil(t, "the session to end", func() bool { return srv.debugs.count() == 0 })
}

// TestScriptDebugEnds: a session ends when its client goes (the script
// runs to its end and the connection's goroutine returns), on SCRIPT KILL,
// when the server closes, and when its group's leadership moves.
func TestScriptDebugEnds(t *testing.T) {
	c := cluster.NewTestCluster(t, 3, 3)
	const gid = 1
	c.LeadersSpread()
	li := c.Leader(gid)
	srv, addr := serveNode(t, c.Nodes[li])
	key := cluster.KeyIn(gid, 3, "dbg")
	loop := "local i = 0\nwhile true do\n  i = i + 1\nend"

	t.Run("client goes away", func(t *testing.T) {
		clients := srv.clientCount()
		b := startSession(t, addr, "local a = 1\nreturn a", "1", key)
		b.c.Close()
		cluster.PollUntil(t, "the session and its connection to end", func() bool {
			return srv.debugs.count() == 0 && srv.clientCount() == clients
		})
	})

	t.Run("SCRIPT KILL", func(t *testing.T) {
		do := connDo(t, addr)
		if got := do("SCRIPT", "KILL"); got != notBusyText {
			t.Fatalf("SCRIPT KILL with no session: %s", got)
		}
		b := startSession(t, addr, loop, "1", key)
		b.send("c") // it runs: SCRIPT KILL stops it at its next instruction
		cluster.PollUntil(t, "the session", func() bool { return srv.debugs.count() == 1 })
		if got := do("SCRIPT", "KILL"); got != "+OK" {
			t.Fatalf("SCRIPT KILL: %s", got)
		}
		if got := b.readLogs(); strings.Join(got, "|") != "<endsession>" {
			t.Fatalf("end: %q", got)
		}
		if got := b.read(10 * time.Second); !strings.HasPrefix(got, killedText) {
			t.Fatalf("EVAL's reply: %s", got)
		}
		b.closed()
	})

	t.Run("leadership moves", func(t *testing.T) {
		b := startSession(t, addr, "local a = 1\nreturn a", "1", key)
		if err := c.Nodes[li].Groups()[gid-1].TransferLeadership(); err != nil {
			t.Fatal(err)
		}
		if got := b.readLogs(); strings.Join(got, "|") != "<endsession>" {
			t.Fatalf("end: %q", got)
		}
		if got := b.read(10 * time.Second); !strings.HasPrefix(got, "-"+endNotLeader+" script: ") {
			t.Fatalf("EVAL's reply: %s", got)
		}
		b.closed()
		cluster.PollUntil(t, "the session to end", func() bool { return srv.debugs.count() == 0 })
	})

	t.Run("server closes", func(t *testing.T) {
		li := c.Leader(gid)
		srv2, addr2 := serveNode(t, c.Nodes[li])
		b := startSession(t, addr2, loop, "1", key)
		b.send("c")
		closed := make(chan struct{})
		go func() { srv2.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(20 * time.Second):
			t.Fatal("Server.Close hangs on a debugging session")
		}
		if n := srv2.debugs.count(); n != 0 {
			t.Fatalf("%d sessions after Close", n)
		}
	})
}

// TestScriptDebugRouting: a session runs where the EVAL would run: MOVED
// for keys led elsewhere, any group led here without keys.
func TestScriptDebugRouting(t *testing.T) {
	c := cluster.NewTestCluster(t, 3, 3)
	c.LeadersSpread()
	li := c.Leader(1)
	_, addr := serveNode(t, c.Nodes[li])
	other := uint32(0)
	for gid := uint32(1); gid <= 3; gid++ {
		if c.Leader(gid) != li {
			other = gid
			break
		}
	}
	if other == 0 {
		t.Skip("one node leads every group")
	}
	elsewhere := cluster.KeyIn(other, 3, "dbg")
	b := dialBlk(t, addr)
	if got := b.do("SCRIPT", "DEBUG", "YES"); got != "+OK" {
		t.Fatal(got)
	}
	if got := b.do("EVAL", "return 1", "1", elsewhere); !strings.HasPrefix(got, "-MOVED ") {
		t.Fatalf("EVAL of a key led elsewhere: %s", got)
	}
	b.send("EVAL", "local a = 1\nreturn redis.call('get', 'x')", "0")
	if got := b.readLogs(); len(got) != 2 {
		t.Fatalf("first stop: %q", got)
	}
	b.send("s")
	if got := b.readLogs(); len(got) != 2 || got[0] != "* Stopped at 2, stop reason = step over" {
		t.Fatalf("step: %q", got)
	}
	b.send("s")
	want := fmt.Sprintf("<redis> get x|<error> %s|<endsession>", "Script attempted to access a non local key in a cluster node")
	if got := b.readLogs(); strings.Join(got, "|") != want {
		t.Fatalf("step: %q", got)
	}
	if got := b.read(10 * time.Second); !strings.HasPrefix(got, "-ERR Script attempted to access a non local key in a cluster node script: ") {
		t.Fatalf("EVAL's reply: %s", got)
	}
	b.closed()
}

// clientCount is how many client connections the server has.
func (s *Server) clientCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients)
}

package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/fsm"
)

// blkConn is a raw RESP connection.
type blkConn struct {
	t  *testing.T
	c  net.Conn
	rd *bufio.Reader
}

func dialBlk(t *testing.T, addr string) *blkConn {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &blkConn{t: t, c: c, rd: bufio.NewReader(c)}
}

func (b *blkConn) send(args ...string) {
	s := "*" + strconv.Itoa(len(args)) + "\r\n"
	for _, a := range args {
		s += "$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n"
	}
	if _, err := b.c.Write([]byte(s)); err != nil {
		b.t.Fatal(err)
	}
}

// read returns one reply rendered flat: "+OK", "-ERR …", "[k v]", "nil".
func (b *blkConn) read(timeout time.Duration) string {
	b.t.Helper()
	_ = b.c.SetReadDeadline(time.Now().Add(timeout))
	line, err := b.rd.ReadString('\n')
	if err != nil {
		b.t.Fatalf("read: %v", err)
	}
	line = strings.TrimRight(line, "\r\n")
	switch line[0] {
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return "nil"
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(b.rd, buf); err != nil {
			b.t.Fatal(err)
		}
		return string(buf[:n])
	case '*':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return "nil"
		}
		parts := make([]string, n)
		for i := range parts {
			parts[i] = b.read(timeout)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return line
}

// singleNodeDo serves a one-node cluster whose every group is led (so no
// redirects) and returns a function that sends one command on one
// connection and reads its reply.
func singleNodeDo(t *testing.T) func(args ...string) string {
	return connDo(t, singleNodeAddr(t))
}

// singleNodeAddr serves a one-node cluster whose every group is led and
// returns its address.
func singleNodeAddr(t *testing.T) string {
	_, addr := serveNode(t, singleNode(t))
	return addr
}

// singleNode is a one-node cluster whose every group is led.
func singleNode(t *testing.T) *cluster.Node {
	c := cluster.NewTestCluster(t, 1, 1)
	for gid := uint32(1); gid <= 3; gid++ {
		c.Leader(gid)
	}
	return c.Nodes[0]
}

// connDo opens a connection to addr and returns a function that sends one
// command on it and reads its reply.
func connDo(t *testing.T, addr string) func(args ...string) string {
	cl := dialBlk(t, addr)
	return func(args ...string) string {
		t.Helper()
		cl.send(args...)
		return cl.read(10 * time.Second)
	}
}

// serveNode runs a Server for node i on a fresh port.
func serveNode(t testing.TB, n *cluster.Node) (*Server, string) {
	srv := New(n, cluster.TestLogger())
	return srv, serveServer(t, srv)
}

// serveLeader spreads c's leaders (no transfer moves one under the test)
// and serves the node leading gid; it returns that node's index and the
// server's address.
func serveLeader(t testing.TB, c *cluster.TestCluster, gid uint32) (int, string) {
	c.LeadersSpread()
	li := c.Leader(gid)
	_, addr := serveNode(t, c.Nodes[li])
	return li, addr
}

// serveServer serves srv on a fresh port and returns its address.
func serveServer(t testing.TB, srv *Server) string { return serveOn(t, srv, "127.0.0.1:0") }

// serveOn serves srv on a new listener at addr; its address.
func serveOn(t testing.TB, srv *Server, addr string) string {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = srv.Serve(ln); close(done) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return ln.Addr().String()
}

func waitWaiters(t *testing.T, g *cluster.Group, n int) {
	t.Helper()
	cluster.PollUntil(t, fmt.Sprintf("%d waiters in group %d", n, g.ID()), func() bool { return len(g.State().Waiters()) == n })
}

func TestBlockedClients(t *testing.T) {
	c := cluster.NewTestCluster(t, 3, 3)
	const gid = 1
	c.LeadersSpread() // no transfer moves the leader under the test
	li := c.Leader(gid)
	n := c.Nodes[li]
	g := n.Groups()[gid-1]
	_, addr := serveNode(t, n)
	key := cluster.KeyIn(gid, 3, "blk")

	t.Run("served, with commands sent while blocked run after", func(t *testing.T) {
		bc := dialBlk(t, addr)
		bc.send("BLPOP", key, "0")
		waitWaiters(t, g, 1)
		bc.send("PING")
		time.Sleep(50 * time.Millisecond) // read ahead by the watcher
		if v := c.Write(gid, "RPUSH", key, "a"); v.Int != 1 {
			t.Fatalf("RPUSH = %v", v)
		}
		if got := bc.read(5 * time.Second); got != "["+key+" a]" {
			t.Fatalf("BLPOP = %s", got)
		}
		if got := bc.read(5 * time.Second); got != "+PONG" {
			t.Fatalf("PING after BLPOP = %s", got)
		}
		waitWaiters(t, g, 0)
	})

	t.Run("client goes away", func(t *testing.T) {
		bc := dialBlk(t, addr)
		bc.send("BLPOP", key, "0")
		waitWaiters(t, g, 1)
		bc.c.Close()
		waitWaiters(t, g, 0) // unblocked by the leader: it takes no element
		c.Write(gid, "RPUSH", key, "kept")
		if v := c.Write(gid, "LPOP", key); cluster.ValueText(v) != "kept" {
			t.Fatalf("LPOP = %v", v)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		bc := dialBlk(t, addr)
		start := time.Now()
		bc.send("BLMOVE", key, key, "LEFT", "LEFT", "0.1")
		if got := bc.read(5 * time.Second); got != "nil" || time.Since(start) < 100*time.Millisecond {
			t.Fatalf("BLMOVE timeout = %s after %v", got, time.Since(start))
		}
	})

	t.Run("leadership moves", func(t *testing.T) {
		bc := dialBlk(t, addr)
		bc.send("BZPOPMIN", key, "0")
		waitWaiters(t, g, 1)
		if err := g.TransferLeadership(); err != nil {
			t.Fatal(err)
		}
		// The BLPOP reached the log, so it is never redirected: the new
		// leader drops the old term's waiter, which this node applies as a
		// follower and answers UNBLOCKED (nothing was popped).
		got := bc.read(10 * time.Second)
		if got != "-"+fsm.ErrUnblocked.Error() {
			t.Fatalf("blocked client got %q", got)
		}
		t.Logf("blocked client after the leadership moved: %s", got)
		// The new leader drops the old term's waiter.
		nl := c.Leader(gid)
		waitWaiters(t, c.Nodes[nl].Groups()[gid-1], 0)
	})

	t.Run("server close ends the wait", func(t *testing.T) {
		li := c.Leader(gid)
		srv2, addr2 := serveNode(t, c.Nodes[li])
		bc := dialBlk(t, addr2)
		bc.send("BLPOP", key, "0")
		waitWaiters(t, c.Nodes[li].Groups()[gid-1], 1)
		closed := make(chan struct{})
		go func() { srv2.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Fatal("Server.Close hangs on a blocked client")
		}
	})
}

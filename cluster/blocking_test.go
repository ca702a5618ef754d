package cluster

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
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

// serveNode runs a Server for node i on a fresh port.
func serveNode(t *testing.T, n *Node) (*Server, string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(n, coreTestLogger())
	done := make(chan struct{})
	go func() { _ = srv.Serve(ln); close(done) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return srv, ln.Addr().String()
}

func waitWaiters(t *testing.T, g *Group, n int) {
	t.Helper()
	pollUntil(t, fmt.Sprintf("%d waiters in group %d", n, g.id), func() bool { return len(g.fsm.State().Waiters()) == n })
}

func TestBlockedClients(t *testing.T) {
	c := newTestCluster(t, 3, 3)
	const gid = 1
	c.leadersSpread() // no transfer moves the leader under the test
	li := c.leader(gid)
	n := c.nodes[li]
	g := n.Groups()[gid-1]
	_, addr := serveNode(t, n)
	key := keyIn(gid, 3, "blk")

	t.Run("served, with commands sent while blocked run after", func(t *testing.T) {
		bc := dialBlk(t, addr)
		bc.send("BLPOP", key, "0")
		waitWaiters(t, g, 1)
		bc.send("PING")
		time.Sleep(50 * time.Millisecond) // read ahead by the watcher
		if v := c.write(gid, "RPUSH", key, "a"); v.Int != 1 {
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
		c.write(gid, "RPUSH", key, "kept")
		if v := c.write(gid, "LPOP", key); valueText(v) != "kept" {
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
		if err := g.raft.LeadershipTransfer().Error(); err != nil {
			t.Fatal(err)
		}
		got := bc.read(10 * time.Second)
		if !strings.HasPrefix(got, "-MOVED "+strconv.Itoa(int(keySlot(key)))+" ") && got != "-"+fsm.ErrUnblocked.Error() {
			t.Fatalf("blocked client got %q", got)
		}
		t.Logf("blocked client after the leadership moved: %s", got)
		// The new leader drops the old term's waiter.
		nl := c.leader(gid)
		waitWaiters(t, c.nodes[nl].Groups()[gid-1], 0)
	})

	t.Run("server close ends the wait", func(t *testing.T) {
		li := c.leader(gid)
		srv2, addr2 := serveNode(t, c.nodes[li])
		bc := dialBlk(t, addr2)
		bc.send("BLPOP", key, "0")
		waitWaiters(t, c.nodes[li].Groups()[gid-1], 1)
		closed := make(chan struct{})
		go func() { srv2.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Fatal("Server.Close hangs on a blocked client")
		}
	})
}

func TestBlockRegistry(t *testing.T) {
	b := newBlockRegistry(nil)
	id := fsm.WaiterID{Index: 5}
	b.onEvent(fsm.BlockEvent{Index: 5, Blocked: []fsm.Blocked{{ID: id, Deadline: 1}}})
	// Served before its connection claims it: the claim finds the reply.
	b.onEvent(fsm.BlockEvent{Index: 6, Deferred: []fsm.Deferred{{ID: id, Reply: resp.Int(7)}}})
	s := b.claim(id, 3)
	if s == nil || (<-s.done).Int != 7 || len(b.slots) != 0 || len(b.byDeadline) != 0 {
		t.Fatalf("claim after reply: %v, %d slots", s, len(b.slots))
	}
	if b.claim(fsm.WaiterID{Index: 9}, 0) != nil {
		t.Fatal("claimed an unknown waiter")
	}
	// Abandoned: the leader unblocks it, then forgets it.
	id2 := fsm.WaiterID{Index: 10}
	b.onEvent(fsm.BlockEvent{Blocked: []fsm.Blocked{{ID: id2}}})
	s2 := b.claim(id2, 0)
	b.abandon(s2)
	if ids, _ := b.due(time.Now(), true); len(ids) != 1 || ids[0] != id2 {
		t.Fatalf("due = %v", ids)
	}
	if ids, _ := b.due(time.Now(), true); len(ids) != 0 {
		t.Fatalf("proposed again at once: %v", ids)
	}
	b.onEvent(fsm.BlockEvent{Deferred: []fsm.Deferred{{ID: id2, Reply: resp.NullArray()}}})
	if len(b.slots) != 0 {
		t.Fatal("abandoned slot kept")
	}
	// Reset answers claimed waiters and mirrors the restored ones.
	id3 := fsm.WaiterID{Index: 11}
	b.onEvent(fsm.BlockEvent{Blocked: []fsm.Blocked{{ID: id3}}})
	s3 := b.claim(id3, 0)
	b.onEvent(fsm.BlockEvent{Reset: true, Blocked: []fsm.Blocked{{ID: fsm.WaiterID{Index: 12}, Deadline: 99}}})
	if v := <-s3.done; !v.IsError() || len(b.slots) != 1 || len(b.byDeadline) != 1 {
		t.Fatalf("reset: %v, %d slots", v, len(b.slots))
	}
}

package server

import (
	"bufio"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
)

// TestServeProtocol: what a client sends raw reaches the commands once,
// pipelines are answered in order, and a protocol violation is answered
// with Redis's text after the replies to the commands before it, then the
// connection is closed; the server goes on serving others.
func TestServeProtocol(t *testing.T) {
	c := cluster.NewTestCluster(t, 1, 1)
	c.Leader(1)
	_, addr := serveNode(t, c.Nodes[0])
	tests := []struct {
		name, send string
		want       []string
		closed     bool
	}{
		{"pipeline", "*1\r\n$4\r\nPING\r\nPING\r\nECHO \"a b\"\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n", []string{"+PONG", "+PONG", "$3", "a b", "$2", "hi"}, false},
		{"empty multibulks and lines", "*0\r\n*-1\r\n\r\n\nPING\r\n", []string{"+PONG"}, false},
		{"bulk", "*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$536870913\r\n", []string{"+PONG", "-ERR Protocol error: invalid bulk length"}, true},
		{"multibulk", "*-10\r\nPING\r\n*3000000000\r\n", []string{"+PONG", "-ERR Protocol error: invalid multibulk length"}, true},
		{"inline", strings.Repeat("a", 70000), []string{"-ERR Protocol error: too big inline request"}, true},
		{"dollar", "*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", []string{"-ERR Protocol error: expected '$', got 'f'"}, true},
		{"quotes", "PING\r\nECHO \"a\r\n", []string{"+PONG", "-ERR Protocol error: unbalanced quotes in request"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := conn.Write([]byte(tt.send)); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			for _, w := range tt.want {
				line, err := br.ReadString('\n')
				if err != nil || line != w+"\r\n" {
					t.Fatalf("read %q, %v; want %q", line, err, w)
				}
			}
			if !tt.closed {
				return
			}
			if _, err := br.ReadByte(); err != io.EOF {
				t.Errorf("connection not closed after the error: %v", err)
			}
		})
	}
	b := dialBlk(t, addr)
	b.send("PING")
	if got := b.read(5 * time.Second); got != "+PONG" {
		t.Errorf("a new connection after the violations: %s", got)
	}
}

// TestServeConnectionsEnd: a connection's goroutine ends when its client
// goes, and Close ends the rest.
func TestServeConnectionsEnd(t *testing.T) {
	c := cluster.NewTestCluster(t, 1, 1)
	c.Leader(1)
	srv, addr := serveNode(t, c.Nodes[0])
	for range 20 {
		b := dialBlk(t, addr)
		b.send("PING")
		if got := b.read(5 * time.Second); got != "+PONG" {
			t.Fatalf("PING = %s", got)
		}
		b.c.Close()
	}
	cluster.PollUntil(t, "the clients' goroutines end", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return len(srv.clients) == 0 && connGoroutines() == 0
	})
	open := dialBlk(t, addr)
	open.send("PING")
	_ = open.read(5 * time.Second)
	if n := connGoroutines(); n != 1 {
		t.Errorf("%d connection goroutines for one client", n)
	}
	srv.Close()
	_ = open.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := open.rd.ReadByte(); err == nil {
		t.Error("a connection stayed open after Close")
	}
	// Close returns once every connection goroutine has said it is done;
	// each then still has to return.
	cluster.PollUntil(t, "no connection goroutines after Close", func() bool {
		return connGoroutines() == 0
	})
}

// connGoroutines counts the goroutines serving a client connection.
func connGoroutines() int {
	buf := make([]byte, 1<<22)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "server.(*Server).serveConn(")
}

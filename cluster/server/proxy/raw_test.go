package proxy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster/server/proxy"
	"github.com/slotraft/slotraft/resp"
)

// rawConn is a client that writes bytes and reads replies one frame at a
// time, for exact protocol checks.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	rr *resp.ReplyReader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return &rawConn{t: t, nc: nc, rr: resp.NewReplyReader(nc, 0)}
}

// send writes commands (each a space-separated list of arguments).
func (r *rawConn) send(cmds ...string) {
	r.t.Helper()
	var b []byte
	for _, c := range cmds {
		var args [][]byte
		for _, a := range strings.Fields(c) {
			args = append(args, []byte(a))
		}
		b = resp.AppendRequest(b, args)
	}
	if _, err := r.nc.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

// expect reads the next replies and wants them to be exactly want.
func (r *rawConn) expect(want ...string) {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	for _, w := range want {
		f, err := r.rr.Next()
		if err != nil {
			r.t.Fatalf("reading, want %q: %v", w, err)
		}
		if string(f) != w {
			r.t.Fatalf("got %q, want %q", f, w)
		}
	}
}

// expectClosed wants the proxy to close the connection (after nothing
// more than it got so far).
func (r *rawConn) expectClosed() {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	if f, err := r.rr.Next(); err == nil || !strings.Contains(err.Error(), io.EOF.Error()) {
		r.t.Fatalf("want the connection closed, got %q %v", f, err)
	}
}

// TestProxyProtocol checks the proxy's own replies byte for byte.
func TestProxyProtocol(t *testing.T) {
	c := newCluster(t)
	tp := startProxy(t, c, 1, proxy.Options{})
	eventually(t, "cluster up", func() error {
		return tp.client(t).Set(context.Background(), "up", "1", 0).Err()
	})
	keys := keysInSlots("raw", 3)

	t.Run("client reply", func(t *testing.T) {
		r := dialRaw(t, tp.addr)
		r.send("CLIENT REPLY OFF", "SET "+keys[0]+" 1", "CLIENT REPLY ON", "GET "+keys[0],
			"CLIENT REPLY SKIP", "GET "+keys[0], "ECHO last")
		r.expect("+OK\r\n", "$1\r\n1\r\n", "$4\r\nlast\r\n")
	})
	t.Run("subscribed context", func(t *testing.T) {
		r := dialRaw(t, tp.addr)
		r.send("SUBSCRIBE ch1", "GET "+keys[0], "PING", "PING hi", "UNSUBSCRIBE", "GET nokey")
		r.expect("*3\r\n$9\r\nsubscribe\r\n$3\r\nch1\r\n:1\r\n",
			"-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n",
			"*2\r\n$4\r\npong\r\n$0\r\n\r\n", "*2\r\n$4\r\npong\r\n$2\r\nhi\r\n",
			"*3\r\n$11\r\nunsubscribe\r\n$3\r\nch1\r\n:0\r\n", "$-1\r\n")
	})
	t.Run("shard counts", func(t *testing.T) {
		r := dialRaw(t, tp.addr)
		r.send("SSUBSCRIBE "+keys[0], "SSUBSCRIBE "+keys[1], "SUNSUBSCRIBE", "SUNSUBSCRIBE")
		r.expect(confirm("ssubscribe", keys[0], 1), confirm("ssubscribe", keys[1], 2))
		// Order across nodes is the proxy's; the counts are the client's.
		got := map[string]bool{}
		for range 2 {
			f, err := r.rr.Next()
			if err != nil {
				t.Fatal(err)
			}
			got[string(f)] = true
		}
		if !(got[confirm("sunsubscribe", keys[0], 1)] || got[confirm("sunsubscribe", keys[0], 0)]) || len(got) != 2 {
			t.Fatalf("SUNSUBSCRIBE of both: %v", got)
		}
		r.expect("*3\r\n$12\r\nsunsubscribe\r\n$-1\r\n:0\r\n")
	})
	t.Run("quit", func(t *testing.T) {
		r := dialRaw(t, tp.addr)
		r.send("SET "+keys[1]+" q", "QUIT", "GET "+keys[1])
		r.expect("+OK\r\n", "+OK\r\n")
		r.expectClosed()
	})
	t.Run("protocol error", func(t *testing.T) {
		r := dialRaw(t, tp.addr)
		if _, err := r.nc.Write([]byte("*1\r\n$4\r\nPING\r\n*1\r\n$x\r\n")); err != nil {
			t.Fatal(err)
		}
		r.expect("+PONG\r\n", "-ERR Protocol error: invalid bulk length\r\n")
		r.expectClosed()
	})
	t.Run("inline", func(t *testing.T) {
		r := dialRaw(t, tp.addr)
		if _, err := r.nc.Write([]byte("set " + keys[2] + " \"a b\"\r\nget " + keys[2] + "\r\n")); err != nil {
			t.Fatal(err)
		}
		r.expect("+OK\r\n", "$3\r\na b\r\n")
	})
	t.Run("resp3", func(t *testing.T) {
		r := dialRaw(t, tp.addr)
		r.send("HELLO 3", "MGET "+keys[0]+" "+keys[1]+" nokey", "DEL nokey nokey2 "+keys[2])
		f, err := r.rr.Next()
		if err != nil || f[0] != '%' {
			t.Fatalf("HELLO 3: %q %v", f, err)
		}
		r.expect("*3\r\n$1\r\n1\r\n$1\r\nq\r\n_\r\n", ":1\r\n")
	})
}

func confirm(kind, channel string, n int) string {
	return string(resp.Push(resp.BulkString(kind), resp.BulkString(channel), resp.Int(int64(n))).Append(nil, resp.RESP2))
}

// TestProxyClientGoes: a client that disconnects in the middle of a long
// pipeline, or while blocked, leaves no session, node connection or
// goroutine behind.
func TestProxyClientGoes(t *testing.T) {
	c := newCluster(t)
	tp := startProxy(t, c, 2, proxy.Options{})
	warm := tp.client(t)
	eventually(t, "cluster up", func() error { return warm.Set(context.Background(), "up", "1", 0).Err() })
	_ = warm.Close()
	tp.waitStats(t, "warm-up client gone", func(st proxy.Stats) bool { return st.Clients == 0 && st.Backends == 0 })
	blockedNow := blockedClients(context.Background(), t, c)
	before := proxyGoroutines()
	keys := keysInSlots("gone", 5)
	for round := range 5 {
		nc, err := net.Dial("tcp", tp.addr)
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(nc)
		for i := range 5000 {
			_, _ = w.Write(resp.AppendRequest(nil, [][]byte{[]byte("INCR"), []byte(keys[i%len(keys)])}))
		}
		_ = w.Flush()
		if round%2 == 0 { // read a little first, then go
			buf := make([]byte, 100)
			_, _ = io.ReadAtLeast(nc, buf, 10)
		}
		_ = nc.Close()
	}
	blocked := dialRaw(t, tp.addr)
	blocked.send("BLPOP gone:list 0")
	eventually(t, "BLPOP blocked", func() error {
		if blockedNow() == 0 {
			return io.ErrNoProgress
		}
		return nil
	})
	_ = blocked.nc.Close()
	tp.waitStats(t, "every client and node connection gone", func(st proxy.Stats) bool {
		return st.Clients == 0 && st.Backends == 0
	})
	eventually(t, "the node lets the blocked client go", func() error {
		if blockedNow() != 0 {
			return io.ErrNoProgress
		}
		return nil
	})
	eventually(t, "the proxy's goroutines back", func() error {
		if n := proxyGoroutines(); n != before {
			return fmt.Errorf("%d of the proxy's goroutines, %d before", n, before)
		}
		return nil
	})
}

// proxyGoroutines counts the goroutines running the proxy's code (the
// in-process nodes' own come and go with their connections).
func proxyGoroutines() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "slotraft/cluster/server/proxy.") {
			n++
		}
	}
	return n
}

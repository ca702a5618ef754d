package transport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func newMux(t testing.TB, id string, f *Faults, ctl ControlFunc) *Mux {
	t.Helper()
	m, err := New(Config{Listener: listen(t), LocalID: id, Faults: f, Control: ctl, HeaderTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func stream(t testing.TB, m *Mux, group uint32) *Stream {
	t.Helper()
	s, err := m.Stream(group)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestHeader(t *testing.T) {
	good, _ := header{group: 7, from: "node-a"}.encode()
	tests := []struct {
		name string
		in   []byte
		want header
		ok   bool
	}{
		{"good", good, header{group: 7, from: "node-a"}, true},
		{"empty id", append(append([]byte{}, magic[:]...), 0, 0, 0, 1, 0), header{group: 1}, true},
		{"bad magic", append([]byte("HTTP"), good[4:]...), header{}, false},
		{"short", good[:6], header{}, false},
		{"id cut short", good[:len(good)-2], header{}, false},
		{"empty", nil, header{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readHeader(bytes.NewReader(tc.in))
			if (err == nil) != tc.ok || got != tc.want {
				t.Fatalf("readHeader = %+v, %v; want %+v ok=%v", got, err, tc.want, tc.ok)
			}
		})
	}
	if _, err := (header{from: string(make([]byte, 256))}).encode(); err == nil {
		t.Fatal("encode accepted a 256-byte id")
	}
}

func FuzzReadHeader(f *testing.F) {
	good, _ := header{group: 3, from: "n1"}.encode()
	f.Add(good)
	f.Add([]byte("SRB1\xff\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := readHeader(bytes.NewReader(b))
		if err == nil {
			enc, err := h.encode()
			if err != nil || !bytes.HasPrefix(b, enc) {
				t.Fatalf("round trip: %q -> %+v -> %q, %v", b, h, enc, err)
			}
		}
	})
}

// expectClosed waits for the peer to close c.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("conn not closed: %v", err)
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("conn not closed before the deadline")
	}
}

func TestRouteByGroup(t *testing.T) {
	a, b := newMux(t, "a", nil, nil), newMux(t, "b", nil, nil)
	sa1, sb1, sb2 := stream(t, a, 1), stream(t, b, 1), stream(t, b, 2)
	sa2 := stream(t, a, 2)
	for _, tc := range []struct {
		dial, accept *Stream
		msg          string
	}{{sa1, sb1, "to group 1"}, {sa2, sb2, "to group 2"}} {
		c, err := tc.dial.Dial(raft.ServerAddress(b.Addr().String()), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte(tc.msg)); err != nil {
			t.Fatal(err)
		}
		s, err := tc.accept.Accept()
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len(tc.msg))
		if _, err := io.ReadFull(s, buf); err != nil || string(buf) != tc.msg {
			t.Fatalf("got %q, %v", buf, err)
		}
		if got := s.(*conn).remote; got != "a" {
			t.Fatalf("remote id %q", got)
		}
		_ = c.Close()
		_ = s.Close()
	}
	if _, err := a.Stream(1); err == nil {
		t.Fatal("duplicate group registered")
	}
	if _, err := a.Stream(ControlGroup); err == nil {
		t.Fatal("group 0 registered")
	}
}

func TestBadConnectionsAreClosed(t *testing.T) {
	a, b := newMux(t, "a", nil, nil), newMux(t, "b", nil, nil)
	sa := stream(t, a, 9) // b has no group 9
	c, err := sa.Dial(raft.ServerAddress(b.Addr().String()), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// An unknown group is refused in words, then closed.
	var refused [1]byte
	if _, err := io.ReadFull(c, refused[:]); err != nil || refused[0] != muxRefused {
		t.Fatalf("unknown group: read %#x, %v; want %#x", refused[0], err, muxRefused)
	}
	expectClosed(t, c)

	for _, junk := range [][]byte{[]byte("GET / HTTP/1.1\r\n\r\n"), []byte("SRB"), nil} {
		raw, err := net.Dial("tcp", b.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = raw.Write(junk)
		expectClosed(t, raw) // junk, or silence past the header deadline
		_ = raw.Close()
	}
}

func TestControlQuery(t *testing.T) {
	want := Status{LeaderID: "b", LeaderAddr: "b:17000", Term: 4, LastIndex: 10, AppliedIndex: 9}
	ctl := func(g uint32) (Status, bool) { return want, g == 5 }
	a, b := newMux(t, "a", nil, nil), newMux(t, "b", nil, ctl)
	ctx := context.Background()
	got, err := a.Query(ctx, b.Addr().String(), 5)
	if err != nil || got != want {
		t.Fatalf("Query = %+v, %v", got, err)
	}
	if _, err := a.Query(ctx, b.Addr().String(), 6); !errors.Is(err, ErrUnknownGroup) {
		t.Fatalf("unknown group: %v", err)
	}
	if _, err := b.Query(ctx, a.Addr().String(), 5); !errors.Is(err, ErrUnknownGroup) {
		t.Fatalf("nil control: %v", err)
	}
}

func TestFaults(t *testing.T) {
	f := NewFaults()
	a, b := newMux(t, "a", f, nil), newMux(t, "b", f, nil)
	sa, sb := stream(t, a, 1), stream(t, b, 1)
	addr := raft.ServerAddress(b.Addr().String())
	c, err := sa.Dial(addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sb.Accept()
	if err != nil {
		t.Fatal(err)
	}

	f.Cut("a", "b")
	expectClosed(t, s)
	if _, err := c.Write([]byte("x")); !errors.Is(err, ErrLinkCut) && !errors.Is(err, net.ErrClosed) {
		t.Fatalf("write on a cut link: %v", err)
	}
	if _, err := sa.Dial(addr, time.Second); !errors.Is(err, ErrLinkCut) {
		t.Fatalf("dial on a cut link: %v", err)
	}
	if _, err := a.Query(context.Background(), b.Addr().String(), 1); !errors.Is(err, ErrLinkCut) {
		t.Fatalf("query on a cut link: %v", err)
	}

	f.HealAll()
	f.Delay("a", "b", 50*time.Millisecond)
	c, err = sa.Dial(addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := c.Write([]byte("y")); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("delayed write took %v", d)
	}
	s, err = sb.Accept()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	if _, err := io.ReadFull(s, buf); err != nil || buf[0] != 'y' {
		t.Fatalf("after heal: %q %v", buf, err)
	}
}

// TestRaftTransport runs a raft RPC between two groups' transports.
func TestRaftTransport(t *testing.T) {
	a, b := newMux(t, "a", nil, nil), newMux(t, "b", nil, nil)
	ta, err := a.Transport(3, TransportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := b.Transport(3, TransportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ta.Close()
	defer tb.Close()
	go func() {
		rpc := <-tb.Consumer()
		rpc.Respond(&raft.AppendEntriesResponse{Term: 42, Success: true}, nil)
	}()
	var out raft.AppendEntriesResponse
	err = ta.AppendEntries("b", raft.ServerAddress(b.Addr().String()), &raft.AppendEntriesRequest{Term: 42}, &out)
	if err != nil || out.Term != 42 || !out.Success {
		t.Fatalf("AppendEntries = %+v, %v", out, err)
	}
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	for _, mode := range busModes {
		t.Run(mode.name, func(t *testing.T) { closeLeavesNoGoroutines(t, mode.secret) })
	}
}

func closeLeavesNoGoroutines(t *testing.T, secret Secret) {
	before := runtime.NumGoroutine()
	a, err := New(Config{Listener: listen(t), LocalID: "a", Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{Listener: listen(t), LocalID: "b", Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	sa, _ := a.Stream(1)
	if _, err := b.Stream(1); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Dial(raft.ServerAddress(b.Addr().String()), time.Second); err != nil {
		t.Fatal(err)
	}
	raw, _ := net.Dial("tcp", b.Addr().String()) // stuck in the handshake
	defer raw.Close()
	_ = a.Close()
	_ = b.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("goroutines: %d before, %d after Close", before, runtime.NumGoroutine())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDialFromListenerAddress: a Mux bound to a specific address dials
// from it, so a packet filter between node addresses cuts every bus link;
// a Mux on every interface leaves the choice to the system.
func TestDialFromListenerAddress(t *testing.T) {
	target, err := net.Listen("tcp", "127.0.0.3:0")
	if err != nil {
		t.Skipf("no second loopback address: %v", err)
	}
	defer target.Close()
	remotes := make(chan net.Addr, 4)
	go func() {
		for {
			c, err := target.Accept()
			if err != nil {
				return
			}
			remotes <- c.RemoteAddr()
			c.Close()
		}
	}()
	for _, tc := range []struct{ bind, wantIP string }{
		{"127.0.0.2:0", "127.0.0.2"},
		{"0.0.0.0:0", "127.0.0.1"},
	} {
		ln, err := net.Listen("tcp", tc.bind)
		if err != nil {
			t.Fatal(err)
		}
		m, err := New(Config{Listener: ln, LocalID: "a", Advertise: "127.0.0.2:1"})
		if err != nil {
			t.Fatal(err)
		}
		c, err := m.dial(target.Addr().String(), 7, time.Second)
		if err != nil {
			t.Fatalf("bind %s: dial: %v", tc.bind, err)
		}
		select {
		case a := <-remotes:
			if ip := a.(*net.TCPAddr).IP.String(); ip != tc.wantIP {
				t.Errorf("bind %s: connection came from %s, want %s", tc.bind, ip, tc.wantIP)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("bind %s: no connection accepted", tc.bind)
		}
		_ = c.Close()
		_ = m.Close()
	}
}

func TestLocalDialAddr(t *testing.T) {
	tcp := func(s string) net.Addr { a, _ := net.ResolveTCPAddr("tcp", s); return a }
	for _, tc := range []struct {
		listen net.Addr
		target string
		want   string // "" for nil
	}{
		{tcp("127.0.0.5:9000"), "127.0.0.6:9000", "127.0.0.5:0"},
		{tcp("127.0.0.5:9000"), "node-b:9000", "127.0.0.5:0"},
		{tcp("127.0.0.5:9000"), "10.1.2.3:9000", ""},
		{tcp("10.1.2.3:9000"), "10.1.2.4:9000", "10.1.2.3:0"},
		{tcp("0.0.0.0:9000"), "127.0.0.6:9000", ""},
		{tcp("[::]:9000"), "[::1]:9000", ""},
		{tcp("[::1]:9000"), "[::1]:9001", "[::1]:0"},
		{&net.UnixAddr{Name: "x", Net: "unix"}, "127.0.0.6:9000", ""},
	} {
		got := localDialAddr(tc.listen, tc.target)
		s := ""
		if got != nil {
			s = got.String()
		}
		if s != tc.want {
			t.Errorf("localDialAddr(%v, %q) = %q, want %q", tc.listen, tc.target, s, tc.want)
		}
	}
}

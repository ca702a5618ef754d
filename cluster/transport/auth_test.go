package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

var (
	secretA = Secret(bytes.Repeat([]byte("a"), MinSecretLen))
	secretB = Secret(bytes.Repeat([]byte("b"), MinSecretLen))
)

// logBuffer collects a logger's lines for a test to read.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// lines are the logged lines holding every one of want.
func (l *logBuffer) lines(want ...string) []string {
	var out []string
	for line := range strings.Lines(l.String()) {
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(line, w)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}

// awaitLine polls l until a line holds every one of want.
func (l *logBuffer) awaitLine(t *testing.T, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got := l.lines(want...); len(got) > 0 {
			return got[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %q in:\n%s", want, l.String())
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
}

// secretMux is a Mux with secret (nil: none) answering calls with echoCall,
// logging into the returned buffer.
func secretMux(t testing.TB, id string, secret Secret, timeout time.Duration) (*Mux, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	m, err := New(Config{Listener: listen(t), LocalID: id, Secret: secret, HeaderTimeout: timeout,
		Handler: echoCall, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m, logs
}

func echoCall(_ context.Context, from string, _ Service, p []byte) ([]byte, error) {
	return fmt.Appendf(nil, "%s:%s", from, p), nil
}

func callWithin(m *Mux, addr string, payload []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return m.Call(ctx, addr, 1, payload)
}

func TestSecretNeverPrints(t *testing.T) {
	s := Secret("correct horse battery staple, 32+ bytes long")
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("cfg", "secret", s)
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("cfg", "secret", s)
	cfg := Config{Secret: s}
	out := fmt.Sprintf("%v %s %q %x %#v %+v %v", s, s, s, s, s, cfg, &cfg) + logs.String()
	if strings.Contains(out, "horse") || strings.Contains(out, fmt.Sprintf("%x", []byte(s))) {
		t.Fatalf("the secret printed: %s", out)
	}
}

func TestShortSecretRefused(t *testing.T) {
	ln := listen(t)
	defer ln.Close()
	if _, err := New(Config{Listener: ln, LocalID: "a", Secret: secretA[:MinSecretLen-1]}); !errors.Is(err, ErrShortSecret) {
		t.Fatalf("New with a %d-byte secret: %v, want ErrShortSecret", MinSecretLen-1, err)
	}
}

// TestSecretBus runs every bus service between two nodes sharing a secret.
func TestSecretBus(t *testing.T) {
	a, _ := secretMux(t, "a", secretA, 5*time.Second)
	b, _ := secretMux(t, "b", secretA, 5*time.Second)
	addr := b.Addr().String()
	for i := range 2 { // the second call reuses the pooled connection
		if out, err := callWithin(a, addr, []byte("hi")); err != nil || string(out) != "a:hi" {
			t.Fatalf("call %d = %q, %v; want a:hi", i, out, err)
		}
	}
	if _, err := a.Query(context.Background(), addr, 5); !errors.Is(err, ErrUnknownGroup) {
		t.Fatalf("control query: %v, want ErrUnknownGroup", err)
	}

	// A stream for a group b does not serve is refused in words, through TLS.
	c, err := stream(t, a, 9).Dial(raft.ServerAddress(addr), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var refused [1]byte
	if _, err := io.ReadFull(c, refused[:]); err != nil || refused[0] != muxRefused {
		t.Fatalf("unknown group: read %#x, %v; want %#x", refused[0], err, muxRefused)
	}
	_ = c.Close()

	// Gossip's packets and streams.
	ga, gb := gossipOf(t, a), gossipOf(t, b)
	if _, err := ga.WriteTo([]byte("ping"), addr); err != nil {
		t.Fatal(err)
	}
	if p := recvWithin(t, gb.PacketCh()); string(p.Buf) != "ping" {
		t.Fatalf("gossip packet %q, want ping", p.Buf)
	}
	gc, err := ga.DialTimeout(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	if _, err := gc.Write([]byte("state")); err != nil {
		t.Fatal(err)
	}
	s := recvWithin(t, gb.StreamCh())
	defer s.Close()
	got := make([]byte, 5)
	if _, err := io.ReadFull(s, got); err != nil || string(got) != "state" {
		t.Fatalf("gossip stream read %q, %v", got, err)
	}
	if n := a.AuthFailures() + b.AuthFailures(); n != 0 {
		t.Fatalf("%d handshake failures between nodes sharing the secret", n)
	}
}

func gossipOf(t *testing.T, m *Mux) *GossipTransport {
	t.Helper()
	g, err := m.Gossip()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Shutdown() })
	return g
}

func secretPair(t *testing.T) transportPair {
	a, _ := secretMux(t, "a", secretA, 5*time.Second)
	b, _ := secretMux(t, "b", secretA, 5*time.Second)
	return transportPair{client: raftTransport(t, a), server: raftTransport(t, b),
		addr: raft.ServerAddress(b.Addr().String()), a: a, b: b}
}

// TestSecretBusIsEncrypted records what crosses the wire between two nodes
// through a relay: a call's payload is there in clear without a secret,
// and nowhere with one.
func TestSecretBusIsEncrypted(t *testing.T) {
	marker := []byte("MARKER-visible-on-the-wire")
	for _, tc := range []struct {
		name   string
		secret Secret
		clear  bool
	}{{"no secret", nil, true}, {"secret", secretA, false}} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := secretMux(t, "a", tc.secret, 5*time.Second)
			b, _ := secretMux(t, "b", tc.secret, 5*time.Second)
			relay, wire := startRelay(t, b.Addr().String())
			if out, err := callWithin(a, relay, marker); err != nil || !bytes.HasSuffix(out, marker) {
				t.Fatalf("call through the relay = %q, %v", out, err)
			}
			if got := bytes.Contains(wire.bytes(), marker); got != tc.clear {
				t.Fatalf("payload readable on the wire: %v, want %v", got, tc.clear)
			}
		})
	}
}

// recorder keeps every byte a relay forwarded.
type recorder struct {
	mu sync.Mutex
	b  []byte
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.b = append(r.b, p...)
	return len(p), nil
}

func (r *recorder) bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]byte(nil), r.b...)
}

// startRelay forwards every connection to its address to target, both
// ways, recording what passes.
func startRelay(t *testing.T, target string) (string, *recorder) {
	ln := listen(t)
	t.Cleanup(func() { _ = ln.Close() })
	rec := &recorder{}
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				_ = in.Close()
				continue
			}
			t.Cleanup(func() { _ = in.Close(); _ = out.Close() })
			// Recorded before forwarded, so the record is in causal order.
			go func() { _, _ = io.Copy(io.MultiWriter(rec, out), in) }()
			go func() { _, _ = io.Copy(io.MultiWriter(rec, in), out) }()
		}
	}()
	return ln.Addr().String(), rec
}

// TestWrongSecretRefused: a node with another secret can neither call nor
// be called; both ends say why, count it, and the node keeps serving its
// own cluster.
func TestWrongSecretRefused(t *testing.T) {
	a, alog := secretMux(t, "a", secretA, 5*time.Second)
	b, blog := secretMux(t, "b", secretB, 5*time.Second)
	if _, err := callWithin(b, a.Addr().String(), []byte("x")); !errors.Is(err, ErrBadProof) {
		t.Fatalf("call with the wrong secret: %v, want ErrBadProof", err)
	}
	alog.awaitLine(t, "bus handshake refused", `reason="bad proof"`, "direction=inbound")
	blog.awaitLine(t, "bus handshake refused", `reason="bad proof"`, "direction=outbound")
	if a.AuthFailures() == 0 || b.AuthFailures() == 0 {
		t.Fatalf("failures counted: a %d, b %d; want both", a.AuthFailures(), b.AuthFailures())
	}
	c, _ := secretMux(t, "c", secretA, 5*time.Second)
	if out, err := callWithin(c, a.Addr().String(), []byte("x")); err != nil || string(out) != "c:x" {
		t.Fatalf("a member's call after the refusal = %q, %v", out, err)
	}
}

// TestSecretAgainstNoSecret: a node without a secret and one with one
// refuse each other cleanly, each direction, each saying why.
func TestSecretAgainstNoSecret(t *testing.T) {
	with, withLog := secretMux(t, "with", secretA, 5*time.Second)
	without, withoutLog := secretMux(t, "without", nil, 5*time.Second)

	if _, err := callWithin(without, with.Addr().String(), []byte("x")); err == nil {
		t.Fatal("a node without the secret called one with it")
	}
	withLog.awaitLine(t, "bus handshake refused", `reason="peer has no secret"`)

	_, err := callWithin(with, without.Addr().String(), []byte("x"))
	if !errors.Is(err, ErrHandshakeHangUp) {
		t.Fatalf("call to a node without a secret: %v, want ErrHandshakeHangUp", err)
	}
	withoutLog.awaitLine(t, "bus handshake refused", `reason="this node has no secret"`)
	withLog.awaitLine(t, "bus handshake refused", `reason=hang-up`, "direction=outbound")
}

// TestOutsidersRefused: raw connections to the bus port that send garbage,
// a plain header, nothing, or an honest-looking hello without the secret
// are closed within the handshake deadline, logged with their address and
// reason, and counted; members are still served.
func TestOutsidersRefused(t *testing.T) {
	const deadline = 300 * time.Millisecond
	m, logs := secretMux(t, "m", secretA, deadline)
	plain, _ := header{group: RPCGroup, from: "intruder"}.encode()
	fake := hello{}.encode()
	for i, tc := range []struct {
		name, send, reason string
	}{
		{"garbage", "GET / HTTP/1.1\r\n\r\n", `reason="no handshake"`},
		{"plain header", string(plain), `reason="peer has no secret"`},
		{"silence", "", "reason=timeout"},
		{"hello, no proof", string(fake), "reason=timeout"},
		{"hello, bad proof", string(fake) + strings.Repeat("p", proofLen), `reason="bad proof"`},
		{"bad version", string(append(authMagic[:], 9)) + strings.Repeat("v", helloLen), `reason="no handshake"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := m.AuthFailures()
			// Each from its own loopback address: one host's refusals
			// are logged once per refusalLogEvery.
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(10+i))}}
			raw, err := d.Dial("tcp", m.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if _, err := raw.Write([]byte(tc.send)); err != nil {
				t.Fatal(err)
			}
			drainUntilClosed(t, raw)
			logs.awaitLine(t, "bus handshake refused", tc.reason, "remote="+raw.LocalAddr().String())
			if m.AuthFailures() != before+1 {
				t.Fatalf("failures %d, want %d", m.AuthFailures(), before+1)
			}
		})
	}
	member, _ := secretMux(t, "member", secretA, 5*time.Second)
	if out, err := callWithin(member, m.Addr().String(), []byte("x")); err != nil || string(out) != "member:x" {
		t.Fatalf("a member's call after the outsiders = %q, %v", out, err)
	}
}

// drainUntilClosed reads (the node's hello, if any) until the node closes
// raw; a read deadline far past the handshake's fails the test.
func drainUntilClosed(t *testing.T, raw net.Conn) {
	t.Helper()
	_ = raw.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, raw)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the node did not close the connection")
	}
}

// TestReplayAndReflectionRefused: a recorded member's opening and proof
// replayed on a new connection, and the node's own proof sent back to it,
// are both bad proofs.
func TestReplayAndReflectionRefused(t *testing.T) {
	m, logs := secretMux(t, "m", secretA, 5*time.Second)
	member, _ := secretMux(t, "member", secretA, 5*time.Second)
	relay, wire := startRelay(t, m.Addr().String())
	if _, err := callWithin(member, relay, []byte("x")); err != nil {
		t.Fatal(err)
	}
	recorded := wire.bytes()
	// The relay records both directions interleaved; the dialler's hello
	// comes first, and its proof right after the node's hello and proof.
	memberHello := recorded[:helloLen]
	memberProof := recorded[2*helloLen+proofLen : 2*helloLen+2*proofLen]

	replay := func(send func(nodeHello []byte) []byte) {
		raw, err := net.Dial("tcp", m.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		first := memberHello
		if _, err := raw.Write(first); err != nil {
			t.Fatal(err)
		}
		reply := make([]byte, helloLen+proofLen)
		if _, err := io.ReadFull(raw, reply); err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Write(send(reply)); err != nil {
			t.Fatal(err)
		}
		drainUntilClosed(t, raw)
	}
	before := m.AuthFailures()
	replay(func([]byte) []byte { return memberProof })
	replay(func(reply []byte) []byte { return reply[helloLen:] }) // reflection
	if got := m.AuthFailures() - before; got != 2 {
		t.Fatalf("%d failures, want 2", got)
	}
	logs.awaitLine(t, "bus handshake refused", `reason="bad proof"`)
}

func TestRefusalLogIsRateLimited(t *testing.T) {
	r := newRefusals()
	now := time.Unix(1000, 0)
	r.now = func() time.Time { return now }
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	from := func(addr string) net.Addr { a, _ := net.ResolveTCPAddr("tcp", addr); return a }
	for port := range 5 { // a scan: one host, many source ports
		r.note(log, from(fmt.Sprintf("10.0.0.1:%d", 4000+port)), true, ErrNotHandshake)
	}
	r.note(log, from("10.0.0.2:4000"), true, ErrBadProof)
	r.note(log, from("10.0.0.1:4100"), true, ErrBadProof)  // another reason: not hidden by the scan
	r.note(log, from("10.0.0.1:4101"), false, ErrBadProof) // another direction
	if got := len(logs.lines("bus handshake refused")); got != 4 {
		t.Fatalf("%d lines for 8 refusals from 2 hosts, 2 reasons, 2 directions; want 4:\n%s", got, logs)
	}
	now = now.Add(refusalLogEvery)
	r.note(log, from("10.0.0.1:5000"), true, ErrNotHandshake)
	if got := logs.lines("remote=10.0.0.1:5000", "suppressed_since_last=4"); len(got) != 1 {
		t.Fatalf("after the interval: %q, want one line counting 4 suppressed:\n%s", got, logs)
	}
	if r.count.Load() != 9 {
		t.Fatalf("counted %d, want 9", r.count.Load())
	}
	// A flood of distinct hosts is bounded in memory and in lines.
	for i := range 3 * refusalHostsMax {
		r.note(log, from(fmt.Sprintf("10.1.%d.%d:1", i/256, i%256)), true, ErrNotHandshake)
	}
	if len(r.hosts) > refusalHostsMax {
		t.Fatalf("%d hosts remembered, bound %d", len(r.hosts), refusalHostsMax)
	}
	if got := len(logs.lines("bus handshake refused")); got > 5+refusalHostsMax {
		t.Fatalf("%d lines for a flood of hosts, want at most %d", got, 5+refusalHostsMax)
	}
}

func FuzzReadHello(f *testing.F) {
	valid := hello{nonce: [nonceLen]byte{1, 2}, pin: [pinLen]byte{3}}.encode()
	plain, _ := header{group: 1, from: "n"}.encode()
	for _, seed := range [][]byte{valid, plain, []byte("GET / HTTP/1.1\r\n"), valid[:10], append(authMagic[:], 2), nil} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		h, err := readHello(bytes.NewReader(in))
		if err != nil {
			if len(in) >= 4 && [4]byte(in[:4]) == magic && !errors.Is(err, ErrPeerHasNoSecret) {
				t.Fatalf("plain header: %v, want ErrPeerHasNoSecret", err)
			}
			return
		}
		if !bytes.Equal(h.encode(), in[:helloLen]) {
			t.Fatalf("hello %x re-encodes as %x", in[:helloLen], h.encode())
		}
	})
}

// FuzzAcceptSide: whatever a dialler without the secret sends, the
// acceptor's handshake fails, without panicking or hanging.
func FuzzAcceptSide(f *testing.F) {
	a, err := newAuthenticator(secretA, nil, "a")
	if err != nil {
		f.Fatal(err)
	}
	valid := hello{}.encode()
	for _, seed := range [][]byte{valid, append(valid, bytes.Repeat([]byte{0}, proofLen)...), []byte("SRB1xxxx"), nil} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if c, err := a.acceptSide(scriptConn{fakeConn{r: bytes.NewReader(in)}}); err == nil {
			_ = c.Close()
			t.Fatal("handshake accepted without the secret")
		}
	})
}

// scriptConn is a dialler that sends a script and ignores the replies.
type scriptConn struct{ fakeConn }

func (scriptConn) Write(b []byte) (int, error) { return len(b), nil }

// busModes are the benchmarks' two buses: without and with a secret.
var busModes = []struct {
	name   string
	secret Secret
}{{"plain", nil}, {"secret", secretA}}

// BenchmarkBusConnect: a new bus connection (dial, handshake, header) and
// one call on it; the cost of the secret's handshake and TLS set-up.
func BenchmarkBusConnect(b *testing.B) {
	for _, mode := range busModes {
		b.Run(mode.name, func(b *testing.B) {
			a, _ := secretMux(b, "a", mode.secret, 5*time.Second)
			s, _ := secretMux(b, "b", mode.secret, 5*time.Second)
			addr := s.Addr().String()
			b.ReportAllocs()
			for b.Loop() {
				c, err := a.rpcConn(context.Background(), addr)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := c.roundTrip(1, []byte("x")); err != nil {
					b.Fatal(err)
				}
				_ = c.Close()
			}
		})
	}
}

// BenchmarkBusThroughput: 1 MiB calls echoed back over one pooled
// connection (a snapshot install's or a migration's bulk bytes).
func BenchmarkBusThroughput(b *testing.B) {
	payload := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	for _, mode := range busModes {
		b.Run(mode.name, func(b *testing.B) {
			a, _ := secretMux(b, "a", mode.secret, 5*time.Second)
			s, _ := secretMux(b, "b", mode.secret, 5*time.Second)
			addr := s.Addr().String()
			b.SetBytes(int64(2 * len(payload)))
			for b.Loop() {
				if _, err := callWithin(a, addr, payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHandshake: the secret's handshake and TLS set-up alone, both
// sides, over an in-memory pipe (its CPU cost, without TCP's).
func BenchmarkHandshake(b *testing.B) {
	d, err := newAuthenticator(secretA, nil, "d")
	if err != nil {
		b.Fatal(err)
	}
	acc, err := newAuthenticator(secretA, nil, "acc")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		x, y := net.Pipe()
		done := make(chan error, 1)
		go func() {
			_, err := acc.acceptSide(y)
			done <- err
		}()
		if _, err := d.dialSide(x, ""); err != nil {
			b.Fatal(err)
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		_ = x.Close()
		_ = y.Close()
	}
}

// TestGossipNeedsTheSecret: gossip's packets and streams from a node with
// another secret never reach memberlist; a member's still do.
func TestGossipNeedsTheSecret(t *testing.T) {
	m, _ := secretMux(t, "m", secretA, 5*time.Second)
	member, _ := secretMux(t, "member", secretA, 5*time.Second)
	outsider, _ := secretMux(t, "outsider", secretB, 5*time.Second)
	gm, gmember, gout := gossipOf(t, m), gossipOf(t, member), gossipOf(t, outsider)
	addr := m.Addr().String()

	before := m.AuthFailures()
	if _, err := gout.DialTimeout(addr, 5*time.Second); !errors.Is(err, ErrBadProof) {
		t.Fatalf("outsider's gossip stream: %v, want ErrBadProof", err)
	}
	if _, err := gout.WriteTo([]byte("forged"), addr); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for m.AuthFailures() < before+2 { // the stream's and the packet connection's refusals
		if time.Now().After(deadline) {
			t.Fatal("the outsider's packet connection was not refused")
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
	if _, err := gmember.WriteTo([]byte("real"), addr); err != nil {
		t.Fatal(err)
	}
	if p := recvWithin(t, gm.PacketCh()); string(p.Buf) != "real" || len(gm.PacketCh()) != 0 {
		t.Fatalf("memberlist got %q (and %d more), want only the member's packet", p.Buf, len(gm.PacketCh()))
	}
	select {
	case s := <-gm.StreamCh():
		t.Fatalf("memberlist got a stream from %v", s.RemoteAddr())
	default:
	}
}

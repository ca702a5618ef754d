package transport

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster/transport/pkitest"
)

// pkiMux is a Mux of node id with a certificate from ca naming cn (and a
// secret, if not nil).
func pkiMux(t *testing.T, id string, ca *pkitest.CA, cn string, secret Secret, peerID func(string) string) (*Mux, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	m, err := New(Config{Listener: listen(t), LocalID: id, Secret: secret, HeaderTimeout: 5 * time.Second,
		TLS: &BusTLS{Cert: ca.Issue(t, cn), CA: ca.Pool}, PeerID: peerID,
		Handler: echoCall, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m, logs
}

// TestBusTLS: nodes with certificates of one CA naming their ids talk,
// with or without a secret too; the bytes on the wire are encrypted.
func TestBusTLS(t *testing.T) {
	ca := pkitest.NewCA(t)
	for _, mode := range busModes {
		t.Run(mode.name, func(t *testing.T) {
			a, _ := pkiMux(t, "a", ca, "a", mode.secret, nil)
			b, _ := pkiMux(t, "b", ca, "b", mode.secret, nil)
			relay, wire := startRelay(t, b.Addr().String())
			if out, err := callWithin(a, relay, []byte("MARKER-in-clear")); err != nil || string(out) != "a:MARKER-in-clear" {
				t.Fatalf("call = %q, %v", out, err)
			}
			if n := a.AuthFailures() + b.AuthFailures(); n != 0 {
				t.Fatalf("%d handshake failures", n)
			}
			if bytes.Contains(wire.bytes(), []byte("MARKER")) {
				t.Fatal("the payload crossed the wire in clear")
			}
		})
	}
}

// TestBusTLSRefusals: a certificate of another CA, a certificate that
// does not name the id the header claims, and a dial to a node whose
// certificate is not the one the map expects at that address are refused
// and logged; a node whose own certificate does not name it cannot start.
func TestBusTLSRefusals(t *testing.T) {
	ca, other := pkitest.NewCA(t), pkitest.NewCA(t)
	a, alog := pkiMux(t, "a", ca, "a", nil, nil)

	stranger, strangerLog := pkiMux(t, "s", other, "s", nil, nil)
	if _, err := callWithin(stranger, a.Addr().String(), []byte("x")); !errors.Is(err, ErrCertUntrusted) && !errors.Is(err, ErrHandshakeHangUp) {
		t.Fatalf("call with another CA's certificate: %v", err)
	}
	// TLS 1.3's client checks first: the stranger refuses a's certificate.
	strangerLog.awaitLine(t, "bus handshake refused", `reason="certificate not trusted"`, "direction=outbound")
	alog.awaitLine(t, "bus handshake refused", `reason="peer refused our certificate"`, "direction=inbound")

	// A member's certificate used to claim another id in the header, from
	// another loopback address (one line per host per refusalLogEvery).
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 20)}}
	raw, err := tls.DialWithDialer(d, "tcp", a.Addr().String(), &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13,
		Certificates: []tls.Certificate{ca.Issue(t, "c")}})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	hdr, _ := header{group: RPCGroup, from: "b"}.encode()
	if _, err := raw.Write(hdr); err != nil {
		t.Fatal(err)
	}
	drainUntilClosed(t, raw)
	alog.awaitLine(t, "bus handshake refused", `reason="node id not in certificate"`)

	// The map says node z listens where b does: b's certificate is refused.
	b, _ := pkiMux(t, "b", ca, "b", nil, nil)
	c, clog := pkiMux(t, "c", ca, "c", nil, func(addr string) string {
		if addr == b.Addr().String() {
			return "z"
		}
		return ""
	})
	if _, err := callWithin(c, b.Addr().String(), []byte("x")); !errors.Is(err, ErrCertID) {
		t.Fatalf("call to the wrong node: %v, want ErrCertID", err)
	}
	clog.awaitLine(t, "bus handshake refused", `reason="node id not in certificate"`, "direction=outbound")
	if out, err := callWithin(c, a.Addr().String(), []byte("x")); err != nil || string(out) != "c:x" {
		t.Fatalf("call to a node the map does not place: %q, %v", out, err)
	}

	ln := listen(t)
	defer ln.Close()
	if _, err := New(Config{Listener: ln, LocalID: "a", TLS: &BusTLS{Cert: ca.Issue(t, "x", "y"), CA: ca.Pool}}); !errors.Is(err, ErrCertID) {
		t.Fatalf("New with a certificate naming x and y for node a: %v, want ErrCertID", err)
	}
	if !certNames(mustLeaf(t, ca.Issue(t, "x", "a")), "a") {
		t.Fatal("a DNS name does not name the node")
	}
}

func mustLeaf(t *testing.T, c tls.Certificate) *x509.Certificate {
	t.Helper()
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

// TestBusTLSAgainstNone: a node with bus TLS and one with nothing refuse
// each other, each saying why.
func TestBusTLSAgainstNone(t *testing.T) {
	ca := pkitest.NewCA(t)
	with, withLog := pkiMux(t, "with", ca, "with", nil, nil)
	without, withoutLog := secretMux(t, "without", nil, 5*time.Second)
	if _, err := callWithin(with, without.Addr().String(), []byte("x")); !errors.Is(err, ErrHandshakeHangUp) {
		t.Fatalf("call to a node without TLS: %v, want ErrHandshakeHangUp", err)
	}
	withoutLog.awaitLine(t, "bus handshake refused", `reason="this node has no bus TLS"`)
	if _, err := callWithin(without, with.Addr().String(), []byte("x")); err == nil {
		t.Fatal("a node without TLS called one with it")
	}
	withLog.awaitLine(t, "bus handshake refused", `reason="no handshake"`, "direction=inbound")
}

package server

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/cluster/transport/pkitest"
	"github.com/slotraft/slotraft/internal/testports"
)

// tlsPing dials addr with cfg, sends PING and returns the reply line and
// the server certificate's serial.
func tlsPing(addr string, cfg *tls.Config) (string, string, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return "", "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return "", "", err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line), conn.ConnectionState().PeerCertificates[0].SerialNumber.String(), err
}

// TestTLSPort: tls-port serves TLS beside the plain port with Redis's
// parameters: client certificates required by default (tls-auth-clients),
// optional or not asked for; a certificate replaced on disk is taken by
// CONFIG SET without a restart; a key that does not match, or an unknown
// protocol, is refused with Redis's text and changes nothing; tls-port 0
// closes the listener.
func TestTLSPort(t *testing.T) {
	c := cluster.NewTestCluster(t, 1, 1)
	c.Leader(1)
	_, addr := serveNode(t, c.Nodes[0])
	dir := t.TempDir()
	ca := pkitest.NewCA(t)
	cert, key, caFile := ca.Files(t, dir, "server")
	clientCert := ca.Issue(t, "client")
	port := testports.Free(t, 1)[0]
	tlsAddr := "127.0.0.1:" + strconv.Itoa(port)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	withCert := &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{clientCert}}
	noCert := &tls.Config{RootCAs: roots}

	b := dialBlk(t, addr)
	set := func(args ...string) string {
		t.Helper()
		b.send(append([]string{"CONFIG", "SET"}, args...)...)
		return b.read(10 * time.Second)
	}
	if got := set("tls-port", strconv.Itoa(port), "tls-cert-file", cert, "tls-key-file", key, "tls-ca-cert-file", caFile); got != "+OK" {
		t.Fatalf("CONFIG SET tls-*: %s", got)
	}
	if got, _, err := tlsPing(tlsAddr, withCert); err != nil || got != "+PONG" {
		t.Fatalf("PING over TLS with a client certificate: %q %v", got, err)
	}
	if _, _, err := tlsPing(tlsAddr, noCert); err == nil {
		t.Error("a client without a certificate was served while tls-auth-clients is yes")
	}
	if got := set("tls-auth-clients", "optional"); got != "+OK" {
		t.Fatal(got)
	}
	_, serial1, err := tlsPing(tlsAddr, noCert)
	if err != nil {
		t.Fatalf("tls-auth-clients optional, no certificate: %v", err)
	}

	// A renewed certificate on disk: CONFIG SET re-reads it.
	renewed, renewedKey, _ := ca.Files(t, t.TempDir(), "server")
	for _, cp := range [][2]string{{renewed, cert}, {renewedKey, key}} {
		data, err := os.ReadFile(cp[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cp[1], data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got := set("tls-cert-file", cert, "tls-key-file", key); got != "+OK" {
		t.Fatalf("reload: %s", got)
	}
	_, serial2, err := tlsPing(tlsAddr, noCert)
	if err != nil || serial2 == serial1 {
		t.Fatalf("after the reload the server presents serial %s (before %s): %v", serial2, serial1, err)
	}

	// Bad values change nothing.
	_, otherKey, _ := ca.Files(t, t.TempDir(), "other")
	want := "-ERR CONFIG SET failed (possibly related to argument 'tls-key-file') - Unable to update TLS configuration. Check server logs."
	if got := set("tls-key-file", otherKey); got != want {
		t.Errorf("mismatched key: %s\nwant %s", got, want)
	}
	if got := set("tls-protocols", "TLSv9"); !strings.Contains(got, "(possibly related to argument 'tls-protocols') - Unable to update TLS configuration") {
		t.Errorf("unknown protocol: %s", got)
	}
	if got := b.do("CONFIG", "GET", "tls-key-file"); got != "[tls-key-file "+key+"]" {
		t.Errorf("tls-key-file after a refused change: %s, want the old %s", got, key)
	}
	if _, serial3, err := tlsPing(tlsAddr, noCert); err != nil || serial3 != serial2 {
		t.Errorf("after refused changes: serial %s (want %s), %v", serial3, serial2, err)
	}

	if got := set("tls-protocols", "TLSv1.3"); got != "+OK" {
		t.Fatal(got)
	}
	old := &tls.Config{RootCAs: roots, MaxVersion: tls.VersionTLS12}
	if _, _, err := tlsPing(tlsAddr, old); err == nil {
		t.Error("a TLS 1.2 client was served with tls-protocols TLSv1.3")
	}
	if info := b.do("INFO", "server"); !strings.Contains(info, "listener1:name=tls,bind=127.0.0.1,port="+strconv.Itoa(port)) {
		t.Errorf("INFO server lacks the TLS listener:\n%s", info)
	}
	if got := set("tls-port", "0"); got != "+OK" {
		t.Fatal(got)
	}
	if _, _, err := tlsPing(tlsAddr, noCert); err == nil {
		t.Error("TLS still served after tls-port 0")
	}
}

// TestTLSSettings: the parameters Redis takes as they map to Go's TLS.
func TestTLSSettings(t *testing.T) {
	for in, want := range map[string][2]uint16{
		"": {tls.VersionTLS12, tls.VersionTLS13}, "TLSv1.2": {tls.VersionTLS12, tls.VersionTLS12},
		"tlsv1.3 TLSv1.2": {tls.VersionTLS12, tls.VersionTLS13}, "TLSv1 TLSv1.1": {tls.VersionTLS10, tls.VersionTLS11},
	} {
		lo, hi, err := tlsVersions(in)
		if err != nil || lo != want[0] || hi != want[1] {
			t.Errorf("tls-protocols %q: %x-%x %v", in, lo, hi, err)
		}
	}
	ids, err := tlsCipherSuites("ECDHE-RSA-AES128-GCM-SHA256:TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384:ECDHE-ECDSA-CHACHA20-POLY1305")
	if err != nil || len(ids) != 3 || ids[0] != tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 ||
		ids[2] != tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 {
		t.Errorf("tls-ciphers: %v %v", ids, err)
	}
	if _, err := tlsCipherSuites("RC4-MD5"); err == nil {
		t.Error("tls-ciphers RC4-MD5 accepted")
	}
	if err := checkTLS13Suites("TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"); err != nil {
		t.Error(err)
	}
	if err := checkTLS13Suites("TLS_AES_128_CCM_SHA256"); err == nil {
		t.Error("a TLS 1.3 suite Go does not have was accepted")
	}
	dir := t.TempDir()
	if _, err := (tlsSettings{certFile: filepath.Join(dir, "none"), keyFile: "x"}).build(); err == nil {
		t.Error("a missing certificate file was accepted")
	}
}

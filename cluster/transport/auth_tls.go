package transport

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// After the HMAC handshake (auth.go) a bus connection is TLS 1.3 between
// two throwaway identities: each process makes a self-signed certificate
// at start, and a peer's certificate is accepted only if the SHA-256 of
// its public key is the pin the peer sent in the proven handshake. No CA,
// no names, no expiry to manage: trust comes from the secret alone.

// tlsIdentity is this process's bus certificate and key, and its pin; ca
// is set when the certificate is the operator's (BusTLS), and then every
// peer's must chain to it too.
type tlsIdentity struct {
	cert tls.Certificate
	pin  [pinLen]byte
	ca   *x509.CertPool
}

// peerCheck is what one connection's peer certificate must satisfy: the
// pin proven in the secret's handshake (if any), a chain to the
// operator's CA (if any), naming node id (if known).
type peerCheck struct {
	pin *[pinLen]byte
	ca  *x509.CertPool
	id  string
}

func newTLSIdentity() (tlsIdentity, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tlsIdentity{}, fmt.Errorf("transport: bus key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tlsIdentity{}, fmt.Errorf("transport: bus certificate serial: %w", err)
	}
	// Validity is not checked by anyone (the pin is); it is wide so that
	// no tool reading the certificate calls it expired.
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "slotraft bus (ephemeral)"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(100, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tlsIdentity{}, fmt.Errorf("transport: bus certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tlsIdentity{}, fmt.Errorf("transport: bus certificate: %w", err)
	}
	return tlsIdentity{
		cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		pin:  sha256.Sum256(leaf.RawSubjectPublicKeyInfo),
	}, nil
}

// config is the TLS configuration of one connection whose peer must pass
// chk.
func (id tlsIdentity) config(chk peerCheck) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{id.cert},
		// Go's own checks want a server name and a client CA on every
		// connection; chk.verify does what the bus needs: the pin, which
		// the HMAC handshake bound to the secret, and the operator's CA.
		InsecureSkipVerify:     true,
		ClientAuth:             tls.RequireAnyClientCert,
		SessionTicketsDisabled: true,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			return chk.verify(raw)
		},
	}
}

func (chk peerCheck) verify(raw [][]byte) error {
	if len(raw) == 0 {
		return ErrPinMismatch
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, der := range raw {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrCertUntrusted, err)
		}
		certs[i] = c
	}
	if chk.pin != nil && sha256.Sum256(certs[0].RawSubjectPublicKeyInfo) != *chk.pin {
		return ErrPinMismatch
	}
	if chk.ca == nil {
		return nil
	}
	return verifyChain(certs, chk.ca, chk.id)
}

func (id tlsIdentity) client(raw net.Conn, chk peerCheck) (net.Conn, error) {
	return finishTLS(tls.Client(raw, id.config(chk)), raw)
}

func (id tlsIdentity) server(raw net.Conn, chk peerCheck) (net.Conn, error) {
	return finishTLS(tls.Server(raw, id.config(chk)), raw)
}

func finishTLS(tc *tls.Conn, raw net.Conn) (net.Conn, error) {
	if err := tc.Handshake(); err != nil {
		var notTLS tls.RecordHeaderError
		switch {
		case errors.Is(err, ErrPinMismatch), errors.Is(err, ErrCertUntrusted), errors.Is(err, ErrCertID):
			return nil, err
		case errors.As(err, &notTLS):
			return nil, fmt.Errorf("%w: %w", ErrNotHandshake, err)
		case isRemoteAlert(err):
			return nil, fmt.Errorf("%w: %w", ErrPeerRefusedTLS, err)
		}
		return nil, fmt.Errorf("tls: %w", handshakeErr(err))
	}
	return &tlsConn{Conn: tc, raw: raw}, nil
}

// tlsConn closes the TCP connection without TLS's close_notify: tls.Conn
// sends it under a 5 s write deadline, so closing a connection whose peer
// stopped reading (a cut link, a dead node) would block the closer. Every
// bus protocol frames its own messages, so the alert tells nobody anything.
type tlsConn struct {
	*tls.Conn
	raw net.Conn
}

func (c *tlsConn) Close() error { return c.raw.Close() }

// isRemoteAlert reports whether err is a TLS alert the peer sent (crypto/tls
// returns those as a net.OpError "remote error"): it refused this node's
// certificate or the handshake.
func isRemoteAlert(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "remote error"
}

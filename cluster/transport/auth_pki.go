package transport

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
)

// Bus TLS from the operator's PKI: every node has a certificate signed by
// one CA that names its node id (as its Common Name or one of its DNS
// names). A connection is accepted only from a certificate of that CA
// whose names include the node id its header claims; a dial to an address
// the cluster map knows accepts only the certificate of the node the map
// puts there. With a secret too, the secret's handshake runs first and
// pins these certificates instead of throwaway ones.

// Why a certificate was refused (with BusTLS).
var (
	ErrCertUntrusted = errors.New("bus certificate not signed by the bus CA")
	ErrCertID        = errors.New("bus certificate does not name the node id")
)

// BusTLS is the operator's PKI for the bus.
type BusTLS struct {
	Cert tls.Certificate // this node's, naming its id
	CA   *x509.CertPool  // signs every node's certificate
}

// LoadBusTLS reads PEM files: this node's certificate (chain) and key, and
// the CA certificate(s).
func LoadBusTLS(certFile, keyFile, caFile string) (*BusTLS, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("bus certificate: %w", err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("bus CA: %w", err)
	}
	ca := x509.NewCertPool()
	if !ca.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("bus CA %s: no PEM certificate in it", caFile)
	}
	return &BusTLS{Cert: cert, CA: ca}, nil
}

// identity checks that b's certificate is one its peers will accept from
// node localID, and makes it this process's TLS identity.
func (b *BusTLS) identity(localID string) (tlsIdentity, error) {
	if len(b.Cert.Certificate) == 0 || b.CA == nil {
		return tlsIdentity{}, errors.New("transport: bus TLS needs a certificate and a CA")
	}
	certs := make([]*x509.Certificate, len(b.Cert.Certificate))
	for i, der := range b.Cert.Certificate {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return tlsIdentity{}, fmt.Errorf("transport: bus certificate: %w", err)
		}
		certs[i] = c
	}
	if err := verifyChain(certs, b.CA, localID); err != nil {
		return tlsIdentity{}, fmt.Errorf("transport: this node's bus certificate (node %q): %w", localID, err)
	}
	return tlsIdentity{cert: b.Cert, pin: sha256.Sum256(certs[0].RawSubjectPublicKeyInfo), ca: b.CA}, nil
}

// verifyChain checks that certs[0] chains to ca (through certs[1:]) and,
// if id is not empty, names it.
func verifyChain(certs []*x509.Certificate, ca *x509.CertPool, id string) error {
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	opts := x509.VerifyOptions{Roots: ca, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}
	if _, err := certs[0].Verify(opts); err != nil {
		return fmt.Errorf("%w: %w", ErrCertUntrusted, err)
	}
	if id != "" && !certNames(certs[0], id) {
		return fmt.Errorf("%w %q (it names %q)", ErrCertID, id, append([]string{certs[0].Subject.CommonName}, certs[0].DNSNames...))
	}
	return nil
}

// certNames reports whether c names node id: its Common Name or a DNS name.
func certNames(c *x509.Certificate, id string) bool {
	return c.Subject.CommonName == id || slices.Contains(c.DNSNames, id)
}

// checkPeerID checks, with a PKI, that the certificate on an accepted
// connection names the node id its header claims.
func (a *authenticator) checkPeerID(c interface{ ConnectionState() tls.ConnectionState }, id string) error {
	if a.ident.ca == nil {
		return nil
	}
	peer := c.ConnectionState().PeerCertificates
	if len(peer) == 0 || !certNames(peer[0], id) {
		return fmt.Errorf("%w %q", ErrCertID, id)
	}
	return nil
}

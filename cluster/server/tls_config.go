package server

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/slotraft/slotraft/resp"
)

// TLS on the client port, configured by Redis 7.2's tls-* parameters.
// These build the server's tls.Config; tls_listener.go serves it.

// tlsSettings are the tls-* values one configuration is built from.
type tlsSettings struct {
	certFile, keyFile, keyPass string
	caFile, caDir              string
	authClients                string // yes, no, optional
	protocols                  string // "TLSv1.2 TLSv1.3"; empty: those two
	ciphers, ciphersuites      string
	sessionCaching             bool
}

// errTLSConfig is CONFIG SET's text when a TLS configuration cannot be
// built, as Redis (the reason goes to the log).
var errTLSConfig = resp.NewError("Unable to update TLS configuration. Check server logs.")

// build makes the server configuration: the certificate and key, the CAs
// that client certificates must chain to, whether clients must present
// one, the protocol versions and the TLS 1.2 cipher suites.
func (t tlsSettings) build() (*tls.Config, error) {
	if t.certFile == "" || t.keyFile == "" {
		return nil, errors.New("tls-cert-file and tls-key-file are required")
	}
	cert, err := loadKeyPair(t.certFile, t.keyFile, t.keyPass)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, SessionTicketsDisabled: !t.sessionCaching}
	if cfg.MinVersion, cfg.MaxVersion, err = tlsVersions(t.protocols); err != nil {
		return nil, err
	}
	if cfg.CipherSuites, err = tlsCipherSuites(t.ciphers); err != nil {
		return nil, err
	}
	if err := checkTLS13Suites(t.ciphersuites); err != nil {
		return nil, err
	}
	switch t.authClients {
	case "no":
		cfg.ClientAuth = tls.NoClientCert
	case "optional":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	if cfg.ClientAuth != tls.NoClientCert {
		if cfg.ClientCAs, err = loadCAs(t.caFile, t.caDir); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// loadKeyPair reads a certificate and its key; pass decrypts a key in
// PEM's legacy encryption (Proc-Type: 4,ENCRYPTED), as tls-key-file-pass.
func loadKeyPair(certFile, keyFile, pass string) (tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls-cert-file: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls-key-file: %w", err)
	}
	if pass != "" {
		if keyPEM, err = decryptKey(keyPEM, pass); err != nil {
			return tls.Certificate{}, err
		}
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls-cert-file/tls-key-file: %w", err)
	}
	return cert, nil
}

// decryptKey turns a key in PEM's legacy encryption into a plain PEM key.
// PKCS#8 encrypted keys ("ENCRYPTED PRIVATE KEY") are not supported by Go.
func decryptKey(keyPEM []byte, pass string) ([]byte, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("tls-key-file: no PEM block")
	}
	//lint:ignore SA1019 legacy PEM encryption is what tls-key-file-pass protects in Redis's usual setups; there is no other way to read it
	if !x509.IsEncryptedPEMBlock(block) { //nolint:staticcheck
		return keyPEM, nil
	}
	//lint:ignore SA1019 see above
	der, err := x509.DecryptPEMBlock(block, []byte(pass)) //nolint:staticcheck
	if err != nil {
		return nil, fmt.Errorf("tls-key-file-pass: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: block.Type, Bytes: der}), nil
}

// loadCAs reads tls-ca-cert-file and every certificate file of
// tls-ca-cert-dir; with neither, client certificates cannot be verified.
func loadCAs(file, dir string) (*x509.CertPool, error) {
	if file == "" && dir == "" {
		return nil, errors.New("either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-auth-clients is yes or optional")
	}
	pool := x509.NewCertPool()
	var files []string
	if file != "" {
		files = append(files, file)
	}
	if dir != "" {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("tls-ca-cert-dir: %w", err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				files = append(files, filepath.Join(dir, e.Name()))
			}
		}
	}
	added := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("CA certificates: %w", err)
		}
		if pool.AppendCertsFromPEM(b) {
			added++
		}
	}
	if added == 0 {
		return nil, errors.New("no CA certificate could be read")
	}
	return pool, nil
}

var tlsVersionNames = map[string]uint16{
	"tlsv1": tls.VersionTLS10, "tlsv1.1": tls.VersionTLS11, "tlsv1.2": tls.VersionTLS12, "tlsv1.3": tls.VersionTLS13,
}

// tlsVersions is tls-protocols ("TLSv1.2 TLSv1.3", any case, Redis's
// names) as a range; empty is TLS 1.2 and 1.3, Redis's default.
func tlsVersions(protocols string) (uint16, uint16, error) {
	if strings.TrimSpace(protocols) == "" {
		return tls.VersionTLS12, tls.VersionTLS13, nil
	}
	var lo, hi uint16
	for _, name := range strings.Fields(protocols) {
		v, ok := tlsVersionNames[strings.ToLower(name)]
		if !ok {
			return 0, 0, fmt.Errorf("tls-protocols: unknown protocol %q", name)
		}
		if lo == 0 || v < lo {
			lo = v
		}
		hi = max(hi, v)
	}
	return lo, hi, nil
}

// tlsCipherSuites is tls-ciphers, the TLS 1.2 suites: a colon-separated
// list of OpenSSL's names (ECDHE-RSA-AES128-GCM-SHA256) or IANA's
// (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256), among the suites Go offers.
// Empty is Go's default list.
func tlsCipherSuites(list string) ([]uint16, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	byName := map[string]uint16{}
	for _, cs := range tls.CipherSuites() {
		byName[cs.Name] = cs.ID
		byName[opensslName(cs.Name)] = cs.ID
	}
	var ids []uint16
	for _, name := range strings.FieldsFunc(list, func(r rune) bool { return r == ':' || r == ',' || r == ' ' }) {
		id, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("tls-ciphers: unknown or insecure cipher suite %q", name)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// opensslName is OpenSSL's name of an ECDHE suite Go names the IANA way:
// TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 is ECDHE-RSA-AES128-GCM-SHA256,
// TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 ECDHE-ECDSA-CHACHA20-POLY1305.
func opensslName(iana string) string {
	s := strings.TrimPrefix(iana, "TLS_")
	s = strings.Replace(s, "_WITH_", "_", 1)
	s = strings.NewReplacer("AES_128", "AES128", "AES_256", "AES256", "CHACHA20_POLY1305_SHA256", "CHACHA20_POLY1305").Replace(s)
	return strings.ReplaceAll(s, "_", "-")
}

// tls13Suites are the TLS 1.3 suites Go always enables (it does not let a
// server choose among them): tls-ciphersuites may name only these.
var tls13Suites = map[string]bool{"TLS_AES_128_GCM_SHA256": true, "TLS_AES_256_GCM_SHA384": true, "TLS_CHACHA20_POLY1305_SHA256": true}

func checkTLS13Suites(list string) error {
	for _, name := range strings.FieldsFunc(list, func(r rune) bool { return r == ':' }) {
		if !tls13Suites[strings.TrimSpace(name)] {
			return fmt.Errorf("tls-ciphersuites: unknown TLS 1.3 cipher suite %q", name)
		}
	}
	return nil
}

package main

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/slotraft/slotraft/cluster/transport"
)

// readClusterSecret reads the cluster secret from path: the file's bytes
// with surrounding whitespace trimmed (a trailing newline from `echo` or an
// editor is not part of it), at least transport.MinSecretLen of them. The
// secret itself is never in an error or a log line.
func readClusterSecret(path string) (transport.Secret, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--cluster-secret-file: %w", err)
	}
	secret := bytes.TrimSpace(b)
	if len(secret) < transport.MinSecretLen {
		return nil, fmt.Errorf("--cluster-secret-file %s: the secret is %d bytes after trimming surrounding whitespace, want at least %d (make one with: openssl rand -base64 48 > %s)",
			path, len(secret), transport.MinSecretLen, path)
	}
	return transport.Secret(secret), nil
}

// loadBusTLS reads --bus-tls-cert, --bus-tls-key and --bus-tls-ca: all
// three, or none (nil).
func (f *serverFlags) loadBusTLS() (*transport.BusTLS, error) {
	set := 0
	for _, v := range []string{f.busTLSCert, f.busTLSKey, f.busTLSCA} {
		if v != "" {
			set++
		}
	}
	switch set {
	case 0:
		return nil, nil
	case 3:
	default:
		return nil, errors.New("--bus-tls-cert, --bus-tls-key and --bus-tls-ca go together: give all three or none")
	}
	b, err := transport.LoadBusTLS(f.busTLSCert, f.busTLSKey, f.busTLSCA)
	if err != nil {
		return nil, fmt.Errorf("--bus-tls-*: %w", err)
	}
	return b, nil
}

// warnBusSecurity tells the operator at start what protects the bus:
// neither a secret nor certificates means anyone who reaches the bus port
// joins the cluster; a secret file others may read is a secret shared
// with them.
func warnBusSecurity(log *slog.Logger, f *serverFlags) {
	if f.secretFile == "" && f.busTLSCert == "" {
		log.Warn("cluster bus has no secret: any host that reaches the bus port can join the cluster and copy its data; set --cluster-secret-file (docs/security.md)")
		return
	}
	if f.secretFile == "" {
		return
	}
	if fi, err := os.Stat(f.secretFile); err == nil && fi.Mode().Perm()&0o077 != 0 {
		log.Warn("cluster secret file is readable by other users; chmod 600 it", "file", f.secretFile, "mode", fi.Mode().Perm().String())
	}
}

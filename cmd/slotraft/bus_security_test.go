package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/cluster/transport/pkitest"
)

// TestClusterSecretFile: the flag (and the config file key of the same
// name) reads the secret, trimmed; a short, blank or missing file stops
// the start with an error that names the file and never shows the secret.
func TestClusterSecretFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := strings.Repeat("s3cr3t-", 6) // 42 bytes
	short := "only-31-bytes-long-secret-12345"
	for _, tc := range []struct {
		name, file, wantErr string
		want                string
	}{
		{"trimmed", write("good", "\n  "+good+"\n"), "", good},
		{"short", write("short", short+"\n"), "31 bytes after trimming", ""},
		{"blank", write("blank", " \n\t\n"), "0 bytes after trimming", ""},
		{"missing", filepath.Join(dir, "nope"), "no such file", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, f := newServerFlagSet(&bytes.Buffer{})
			if err := fs.Parse([]string{"--id", "n1", "--cluster-secret-file", tc.file}); err != nil {
				t.Fatal(err)
			}
			cfg, err := f.clusterConfig()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "--cluster-secret-file") {
					t.Fatalf("error %v, want one naming the flag and %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), short) {
					t.Fatalf("the error shows the secret: %v", err)
				}
				return
			}
			if err != nil || string(cfg.ClusterSecret) != tc.want {
				t.Fatalf("secret of %d bytes, %v; want the file's %d bytes, trimmed", len(cfg.ClusterSecret), err, len(tc.want))
			}
		})
	}
	t.Run("config file key", func(t *testing.T) {
		fs, f := newServerFlagSet(&bytes.Buffer{})
		conf := writeConf(t, "id n1\ncluster-secret-file "+write("viaconf", good)+"\n")
		if err := fs.Parse([]string{"--config", conf}); err != nil {
			t.Fatal(err)
		}
		if _, err := readConfigFile(fs, f); err != nil {
			t.Fatal(err)
		}
		if cfg, err := f.clusterConfig(); err != nil || string(cfg.ClusterSecret) != good {
			t.Fatalf("secret from the config file: %d bytes, %v", len(cfg.ClusterSecret), err)
		}
	})
	t.Run("none", func(t *testing.T) {
		fs, f := newServerFlagSet(&bytes.Buffer{})
		if err := fs.Parse([]string{"--id", "n1"}); err != nil {
			t.Fatal(err)
		}
		if cfg, err := f.clusterConfig(); err != nil || cfg.ClusterSecret != nil {
			t.Fatalf("without the flag: secret %v, %v; want none", cfg.ClusterSecret != nil, err)
		}
	})
}

// TestBusTLSFlags: --bus-tls-cert, --bus-tls-key and --bus-tls-ca go
// together and load the PEM files; a bad file stops the start.
func TestBusTLSFlags(t *testing.T) {
	dir := t.TempDir()
	cert, key, ca := pkitest.NewCA(t).Files(t, dir, "n1")
	bad := filepath.Join(dir, "bad.pem")
	if err := os.WriteFile(bad, []byte("not PEM\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"all three", []string{"--bus-tls-cert", cert, "--bus-tls-key", key, "--bus-tls-ca", ca}, ""},
		{"cert only", []string{"--bus-tls-cert", cert}, "give all three or none"},
		{"no ca", []string{"--bus-tls-cert", cert, "--bus-tls-key", key}, "give all three or none"},
		{"bad ca", []string{"--bus-tls-cert", cert, "--bus-tls-key", key, "--bus-tls-ca", bad}, "no PEM certificate"},
		{"key for the ca", []string{"--bus-tls-cert", ca, "--bus-tls-key", key, "--bus-tls-ca", ca}, "bus certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, f := newServerFlagSet(&bytes.Buffer{})
			if err := fs.Parse(append([]string{"--id", "n1"}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			cfg, err := f.clusterConfig()
			if tc.wantErr == "" {
				if err != nil || cfg.BusTLS == nil || len(cfg.BusTLS.Cert.Certificate) != 1 {
					t.Fatalf("bus TLS %+v, %v; want the loaded certificate", cfg.BusTLS != nil, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one with %q", err, tc.wantErr)
			}
		})
	}
}

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster/transport/pkitest"
	"github.com/slotraft/slotraft/internal/testports"
)

// TestTLSClients: three processes serve TLS on their tls-port beside the
// plain port (config file: Redis's tls-* parameters, client certificates
// required). redis-cli --tls -c follows redirects that name the nodes' TLS
// ports, CLUSTER SLOTS over TLS lists TLS ports, go-redis's ClusterClient
// works over TLS alone, and a client without a certificate is refused.
func TestTLSClients(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	cli := lookRedisCLI(t)
	bin := buildSlotraft(t)
	dir := t.TempDir()
	ca := pkitest.NewCA(t)
	cert, key, caFile := ca.Files(t, dir, "server")
	clientCert, clientKey, _ := ca.Files(t, dir, "client")
	ports := testports.Free(t, 9)
	c := &testCluster{bin: bin}
	var peers []string
	tlsAddrs := make([]string, 3)
	for i := range 3 {
		n := processNodeOn(bin, dir, i, ports[3*i], ports[3*i+1])
		tlsAddrs[i] = "127.0.0.1:" + strconv.Itoa(ports[3*i+2])
		conf := filepath.Join(dir, n.id+".conf")
		text := "tls-port " + strconv.Itoa(ports[3*i+2]) + "\ntls-cert-file " + cert + "\ntls-key-file " + key +
			"\ntls-ca-cert-file " + caFile + "\n"
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		n.args = []string{"server", "--id", n.id, "--bind", n.client, "--bus-bind", n.bus, "--config", conf,
			"--data-dir", filepath.Join(dir, n.id)}
		peers = append(peers, n.id+"="+n.client+"@"+n.bus)
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		n.args = append(n.args, "--peers", strings.Join(peers, ","))
	}
	t.Cleanup(func() { c.stop(t) })
	for _, n := range c.nodes {
		n.start(t)
	}
	c.waitOK(t)

	tlsCLI := func(addr string, args ...string) (string, error) {
		host, port, _ := net.SplitHostPort(addr)
		full := append([]string{"--tls", "--cacert", caFile, "--cert", clientCert, "--key", clientKey, "-h", host, "-p", port}, args...)
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		out, err := execOutput(ctx, cli, full...)
		return strings.TrimSpace(out), err
	}
	for i := range 20 {
		key := "tls:" + strconv.Itoa(i)
		c.eventually(t, "SET over TLS with redirects", func() error {
			return expectOutput(tlsCLI(tlsAddrs[0], "-c", "set", key, "v"+strconv.Itoa(i)))("OK")
		})
		// Retried too: a hand-off to a group's preferred leader right
		// after start answers CLUSTERDOWN for a moment.
		c.eventually(t, "GET over TLS from another node", func() error {
			return expectOutput(tlsCLI(tlsAddrs[2], "-c", "get", key))("v" + strconv.Itoa(i))
		})
	}
	slotsOut, err := tlsCLI(tlsAddrs[1], "cluster", "slots")
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range tlsAddrs {
		_, port, _ := net.SplitHostPort(a)
		_, plain, _ := net.SplitHostPort(c.nodes[i].client)
		if !strings.Contains(slotsOut, "\n"+port+"\n") || strings.Contains(slotsOut, "\n"+plain+"\n") {
			t.Errorf("CLUSTER SLOTS over TLS should name node%d's TLS port %s, not its plain port %s:\n%s", i+1, port, plain, slotsOut)
		}
	}
	if out, err := execOutput(context.Background(), cli, "--tls", "--cacert", caFile, "-h", "127.0.0.1",
		"-p", strings.Split(tlsAddrs[0], ":")[1], "ping"); err == nil && strings.Contains(out, "PONG") {
		t.Error("a client without a certificate was served (tls-auth-clients yes)")
	}

	roots := x509.NewCertPool()
	pem, err := os.ReadFile(caFile)
	if err != nil || !roots.AppendCertsFromPEM(pem) {
		t.Fatal("CA file", err)
	}
	pair, err := tls.LoadX509KeyPair(clientCert, clientKey)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: tlsAddrs, DisableIdentity: true,
		TLSConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}}})
	defer rdb.Close()
	ctx := context.Background()
	for i := range 20 {
		key := "tls:" + strconv.Itoa(i)
		if v, err := rdb.Get(ctx, key).Result(); err != nil || v != "v"+strconv.Itoa(i) {
			t.Fatalf("go-redis over TLS: GET %s = %q, %v", key, v, err)
		}
	}
	if err := rdb.Set(ctx, "tls:go", "x", 0).Err(); err != nil {
		t.Fatalf("go-redis over TLS: SET: %v", err)
	}
	redisPyTLS(t, tlsAddrs[1], caFile, clientCert, clientKey)
}

// redisPyScript reads the keys TestTLSClients wrote and writes one, with
// redis-py's RedisCluster over TLS.
const redisPyScript = `
import sys
from redis.cluster import RedisCluster
host, port, ca, cert, key = sys.argv[1:6]
rc = RedisCluster(host=host, port=int(port), ssl=True, ssl_ca_certs=ca, ssl_certfile=cert, ssl_keyfile=key)
for i in range(20):
    v = rc.get("tls:%d" % i)
    assert v == b"v%d" % i, (i, v)
rc.set("tls:py", "p")
print(rc.get("tls:py").decode())
`

// redisPyTLS runs redisPyScript with Debian's python3 and python3-redis
// (make test-deps installs it); skipped without them outside CI.
func redisPyTLS(t *testing.T, addr, ca, cert, key string) {
	py := "/usr/bin/python3" // Debian's, which sees python3-redis (a pyenv python3 on PATH does not)
	if err := exec.Command(py, "-c", "import redis.cluster").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-py not found in CI (make test-deps installs python3-redis): %v", err)
		}
		t.Log("redis-py not installed (Debian's python3-redis): its TLS check is skipped")
		return
	}
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := execOutput(ctx, py, "-c", redisPyScript, host, port, ca, cert, key)
	if err != nil || strings.TrimSpace(out) != "p" {
		t.Fatalf("redis-py RedisCluster over TLS: %v\n%s", err, out)
	}
}

// execOutput runs a command and returns its combined output.
func execOutput(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

// expectOutput checks a command's output (and its error) against want.
func expectOutput(got string, err error) func(want string) error {
	return func(want string) error {
		if err != nil {
			return fmt.Errorf("%w: %s", err, got)
		}
		if got != want {
			return fmt.Errorf("got %q, want %q", got, want)
		}
		return nil
	}
}

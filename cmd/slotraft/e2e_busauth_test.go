package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster/transport/pkitest"
)

// TestBusSecret is issue #18's authenticated bus with real processes: three
// nodes sharing a cluster secret form a cluster and serve; a node with
// another secret and one with none --join it and are refused (the running
// node logs why), and never appear in the map; raw connections to the bus
// port sending garbage or nothing are closed and logged; the cluster keeps
// serving throughout.
func TestBusSecret(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	dir := t.TempDir()
	secret := writeSecret(t, dir, "secret", strings.Repeat("right-secret-", 4))
	other := writeSecret(t, dir, "other", strings.Repeat("wrong-secret-", 4))
	runBusAuth(t, dir, func(*testNode) []string { return []string{"--cluster-secret-file", secret} }, []intruder{
		{args: []string{"--cluster-secret-file", other}, refusal: `reason="bad proof"`,
			ownLog: []string{"bus handshake refused", `reason="bad proof"`, "direction=outbound"}},
		{refusal: `reason="peer has no secret"`, ownLog: []string{"cluster bus has no secret"}},
	})
}

// TestBusTLSFromPKI: the same with bus TLS from an operator's CA
// (--bus-tls-*): a node with a certificate of another CA, and one with no
// TLS at all, are refused.
func TestBusTLSFromPKI(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	dir := t.TempDir()
	ca, other := pkitest.NewCA(t), pkitest.NewCA(t)
	tlsFlags := func(ca *pkitest.CA, n *testNode) []string {
		cert, key, caFile := ca.Files(t, dir, n.id)
		return []string{"--bus-tls-cert", cert, "--bus-tls-key", key, "--bus-tls-ca", caFile}
	}
	runBusAuth(t, dir, func(n *testNode) []string { return tlsFlags(ca, n) }, []intruder{
		// TLS 1.3's client checks the server's certificate first: the
		// intruder refuses the member's, and the member logs that.
		{flags: func(n *testNode) []string { return tlsFlags(other, n) }, refusal: `reason="peer refused our certificate"`,
			ownLog: []string{"bus handshake refused", `reason="certificate not trusted"`, "direction=outbound"}},
		{refusal: `reason="no handshake"`, ownLog: []string{"cluster bus has no secret"}},
	})
}

// intruder is a node that --joins a secured cluster and must be refused:
// its security flags (args, or flags of its node), the reason the first
// member logs, and a line its own log must show.
type intruder struct {
	args    []string
	flags   func(*testNode) []string
	refusal string
	ownLog  []string
}

// runBusAuth starts three members with the security flags of secured,
// checks they form a cluster and serve, starts the intruders and checks
// they are refused, logged and never in the map, sends garbage and
// silence to the bus port, and checks the cluster still serves.
func runBusAuth(t *testing.T, dir string, secured func(*testNode) []string, intruders []intruder) {
	bin := buildSlotraft(t)
	c := &testCluster{bin: bin}
	t.Cleanup(func() { c.stop(t) })
	newNode := func(i int, security func(*testNode) []string, mode ...string) *testNode {
		n := processNode(t, bin, dir, i)
		n.args = append([]string{"server", "--id", n.id, "--bind", n.client,
			"--bus-bind", n.bus, "--bus-advertise", n.bus, "--data-dir", filepath.Join(dir, n.id),
			"--groups", strconv.Itoa(joinGroups), "--replicas", strconv.Itoa(joinReplicas),
			"--groups-per-node", "0", "--log-level", "info"}, mode...)
		n.args = append(n.args, security(n)...)
		c.nodes = append(c.nodes, n)
		n.start(t)
		return n
	}
	first := newNode(0, secured, "--bootstrap")
	for i := 1; i < 3; i++ {
		newNode(i, secured, "--join", first.bus)
	}
	waitHealthy(t, first, 3, "")
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{first.client}, Protocol: 2})
	defer rdb.Close()
	setAndGet(t, c, rdb, "before")

	var refused []*testNode
	for i, in := range intruders {
		flags := in.flags
		if flags == nil {
			flags = func(*testNode) []string { return in.args }
		}
		n := newNode(3+i, flags, "--join", first.bus)
		refused = append(refused, n)
		awaitLog(t, first, "bus handshake refused", in.refusal)
		awaitLog(t, n, in.ownLog...)
		t.Logf("%s (%v) refused: %s", n.id, n.args[len(n.args)-len(flags(n)):], in.refusal)
	}
	knockOnBus(t, first)
	t.Logf("outsiders on %s's bus port refused", first.id)

	// The intruders never made it into the map, and the cluster serves.
	waitHealthy(t, first, 3, "")
	st := c.status(t, first)
	for _, n := range st.Nodes {
		for _, r := range refused {
			if n.ID == r.id {
				t.Fatalf("the cluster map lists %s, which was refused: %+v", n.ID, st.Nodes)
			}
		}
	}
	setAndGet(t, c, rdb, "after")
}

// knockOnBus sends garbage, then nothing, to n's bus port, each from its
// own loopback address (one host's refusals are logged once per 10 s),
// and checks that n closes the connection and logs it.
func knockOnBus(t *testing.T, n *testNode) {
	t.Helper()
	for i, junk := range []string{"GET / HTTP/1.1\r\n\r\n", ""} {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(100+i))}}
		raw, err := d.Dial("tcp", n.bus)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Write([]byte(junk)); err != nil {
			t.Fatal(err)
		}
		_ = raw.SetReadDeadline(time.Now().Add(e2eDeadline))
		_, err = io.Copy(io.Discard, raw) // until the node closes it
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the node kept an outsider's connection (sent %q) open", junk)
		}
		awaitLog(t, n, "bus handshake refused", "remote="+raw.LocalAddr().String())
		_ = raw.Close()
	}
}

// writeSecret writes a secret file readable by its owner only.
func writeSecret(t *testing.T, dir, name, secret string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func setAndGet(t *testing.T, c *testCluster, rdb *redis.ClusterClient, key string) {
	t.Helper()
	ctx := context.Background()
	c.eventually(t, "set "+key, func() error { return rdb.Set(ctx, key, "v:"+key, 0).Err() })
	c.eventually(t, "get "+key, func() error {
		got, err := rdb.Get(ctx, key).Result()
		if err == nil && got != "v:"+key {
			return fmt.Errorf("get %s = %q", key, got)
		}
		return err
	})
}

// awaitLog polls n's log until a line holds every one of want.
func awaitLog(t *testing.T, n *testNode, want ...string) {
	t.Helper()
	deadline := time.Now().Add(e2eDeadline)
	for {
		b, _ := os.ReadFile(n.logPath)
		for line := range strings.Lines(string(b)) {
			found := true
			for _, w := range want {
				found = found && strings.Contains(line, w)
			}
			if found {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's log has no line with %q after %v:\n%s", n.id, want, e2eDeadline, tail(n.logPath, 30))
		}
		time.Sleep(100 * time.Millisecond) // poll interval
	}
}

package server

import (
	"net"
	"testing"

	"github.com/slotraft/slotraft/cluster"
)

// nonLoopbackIP is an IPv4 address of this machine other than loopback.
func nonLoopbackIP(t *testing.T) net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP
		}
	}
	t.Skip("no non-loopback IPv4 address on this machine")
	return nil
}

// TestProtectedMode: a node listening everywhere without a password
// refuses a client from a non-loopback address with Redis's text and
// closes it; loopback clients are served; a password, or protected-mode
// no, lets the remote client in.
func TestProtectedMode(t *testing.T) {
	ip := nonLoopbackIP(t)
	c := cluster.NewTestCluster(t, 1, 1)
	srv := New(c.Nodes[0], cluster.TestLogger())
	_, port, _ := net.SplitHostPort(serveOn(t, srv, "0.0.0.0:0"))
	remote := net.JoinHostPort(ip.String(), port)
	local := net.JoinHostPort("127.0.0.1", port)

	r := dialBlk(t, remote)
	if got := r.do("PING"); got != "-"+protectedModeDenied[1:len(protectedModeDenied)-2] {
		t.Fatalf("remote PING with protected mode = %q", got)
	}
	r.closed()
	admin := dialBlk(t, local)
	expect(t, admin, "+PONG", "PING")
	expect(t, admin, "+OK", "CONFIG", "SET", "protected-mode", "no")
	expect(t, dialBlk(t, remote), "+PONG", "PING")
	expect(t, admin, "+OK", "CONFIG", "SET", "protected-mode", "yes")
	expect(t, admin, "+OK", "CONFIG", "SET", "requirepass", "pw")
	expect(t, dialBlk(t, remote), "-NOAUTH Authentication required.", "PING")
	expect(t, admin, "+OK", "CONFIG", "SET", "requirepass", "")
}

package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/cluster"
)

// serveDebugNode serves n with enable-debug-command set to mode (through
// a config file, as the parameter is immutable) and returns a do function.
func serveDebugNode(t *testing.T, n *cluster.Node, mode string) func(args ...string) string {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "debug.conf")
	if err := os.WriteFile(conf, []byte("enable-debug-command "+mode+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := ReadConfigFile(conf, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := New(n, cluster.TestLogger())
	if err := srv.UseConfigFile(f); err != nil {
		t.Fatal(err)
	}
	return connDo(t, serveServer(t, srv))
}

// TestDebugReplicas: with enable-debug-command local a loopback client
// may run DEBUG; DIGEST-VALUE reads each node's own replica, so the
// replicas of a group agree once they applied a write; the crashing
// subcommands are refused and the node goes on serving; CONFIG SET
// cannot change the immutable parameter.
func TestDebugReplicas(t *testing.T) {
	c := cluster.NewTestCluster(t, 3, 3)
	c.LeadersSpread()
	var dos []func(args ...string) string
	for _, n := range c.Nodes {
		dos = append(dos, serveDebugNode(t, n, "local"))
	}
	written := false
	for _, do := range dos {
		if got := do("RPUSH", "dk", "a", "b"); got == ":2" {
			written = true
			break
		}
	}
	if !written {
		t.Fatal("RPUSH dk was served by no node")
	}
	var digests []string
	cluster.PollUntil(t, "every replica has dk with the same digest", func() bool {
		digests = digests[:0]
		for _, do := range dos {
			digests = append(digests, do("DEBUG", "DIGEST-VALUE", "dk"))
		}
		zero := "[" + strings.Repeat("0", 40) + "]"
		return digests[0] != zero && digests[0] == digests[1] && digests[1] == digests[2]
	})
	for _, sub := range []string{"SEGFAULT", "PANIC", "RELOAD", "RESTART"} {
		if got := dos[0]("DEBUG", sub); !strings.HasPrefix(got, "-ERR DEBUG "+sub+" ") {
			t.Errorf("DEBUG %s: %s", sub, got)
		}
	}
	if got := dos[0]("PING"); got != "+PONG" {
		t.Errorf("PING after the refusals: %s", got)
	}
	if got := dos[0]("DEBUG", "JMAP"); got != "-ERR unknown subcommand or wrong number of arguments for 'JMAP'. Try DEBUG HELP." {
		t.Errorf("DEBUG JMAP: %s", got)
	}
	if got := dos[0]("CONFIG", "SET", "enable-debug-command", "yes"); !strings.Contains(got, "can't set immutable config") {
		t.Errorf("CONFIG SET enable-debug-command: %s", got)
	}
}

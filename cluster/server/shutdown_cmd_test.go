package server

import (
	"io"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
)

func TestParseShutdown(t *testing.T) {
	tests := []struct {
		args []string
		want shutdownFlags
		err  bool
	}{
		{[]string{"SHUTDOWN"}, shutdownFlags{}, false},
		{[]string{"shutdown", "nosave", "now", "force"}, shutdownFlags{nosave: true, now: true, force: true}, false},
		{[]string{"SHUTDOWN", "SAVE"}, shutdownFlags{save: true}, false},
		{[]string{"SHUTDOWN", "ABORT"}, shutdownFlags{abort: true}, false},
		{[]string{"SHUTDOWN", "SAVE", "NOSAVE"}, shutdownFlags{}, true},
		{[]string{"SHUTDOWN", "ABORT", "NOW"}, shutdownFlags{}, true},
		{[]string{"SHUTDOWN", "later"}, shutdownFlags{}, true},
	}
	for _, tc := range tests {
		got, err := parseShutdown(cluster.Argv(tc.args...))
		if (err != nil) != tc.err || (err == nil && got != tc.want) {
			t.Errorf("%q = %+v, %v; want %+v, error %v", tc.args, got, err, tc.want, tc.err)
		}
	}
}

// TestShutdownHook: SHUTDOWN calls the process's hook (hand-off unless
// NOW) and its connection closes without a reply once the server closes;
// without a hook, and for ABORT or inside MULTI, Redis's errors.
func TestShutdownHook(t *testing.T) {
	c := cluster.NewTestCluster(t, 1, 1)
	c.Leader(1)
	srv, addr := serveNode(t, c.Nodes[0])
	b := dialBlk(t, addr)
	do := func(args ...string) string {
		t.Helper()
		b.send(args...)
		return b.read(10 * time.Second)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"SHUTDOWN"}, "-ERR Errors trying to SHUTDOWN. Check logs."}, // no hook yet
		{[]string{"SHUTDOWN", "ABORT"}, "-ERR No shutdown in progress."},
		{[]string{"SHUTDOWN", "NOW", "ABORT"}, "-ERR syntax error"},
		{[]string{"MULTI"}, "+OK"},
		{[]string{"SHUTDOWN"}, "-ERR Command not allowed inside a transaction"},
		{[]string{"DISCARD"}, "+OK"},
	} {
		if got := do(tc.args...); got != tc.want {
			t.Errorf("%q = %q, want %q", tc.args, got, tc.want)
		}
	}
	calls := make(chan bool, 1)
	srv.SetShutdown(func(handOff bool) {
		calls <- handOff
		go srv.Close() // what the process does once it stopped the node
	})
	b.send("SHUTDOWN", "NOW")
	select {
	case handOff := <-calls:
		if handOff {
			t.Error("SHUTDOWN NOW asked for a hand-off")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SHUTDOWN did not call the hook")
	}
	_ = b.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if rest, err := io.ReadAll(b.rd); err != nil || len(rest) != 0 {
		t.Errorf("after SHUTDOWN the connection read %q, %v; want no reply and EOF", rest, err)
	}
}

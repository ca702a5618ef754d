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
	calls := make(chan ShutdownPlan, 1)
	srv.SetShutdown(func(plan ShutdownPlan) {
		calls <- plan
		go srv.Close() // what the process does once it stopped the node
	})
	if got := do("CONFIG", "SET", "shutdown-timeout", "3"); got != "+OK" {
		t.Fatalf("CONFIG SET shutdown-timeout: %s", got)
	}
	b.send("SHUTDOWN", "NOW")
	select {
	case plan := <-calls:
		if want := (ShutdownPlan{Wait: 3 * time.Second}); plan != want {
			t.Errorf("SHUTDOWN NOW asked for %+v, want %+v", plan, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SHUTDOWN did not call the hook")
	}
	_ = b.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if rest, err := io.ReadAll(b.rd); err != nil || len(rest) != 0 {
		t.Errorf("after SHUTDOWN the connection read %q, %v; want no reply and EOF", rest, err)
	}
}

// TestSignalShutdownPlan: shutdown-on-sigterm / -sigint and
// shutdown-timeout decide how a signal stops the process: SIGTERM hands
// off unless now, SIGINT never does; save, nosave and save points decide
// the snapshot, force lets a failed one go.
func TestSignalShutdownPlan(t *testing.T) {
	c := cluster.NewTestCluster(t, 1, 1)
	srv, _ := serveNode(t, c.Nodes[0])
	for _, tc := range []struct {
		config []string
		term   bool
		want   ShutdownPlan
	}{
		{nil, true, ShutdownPlan{HandOff: true, Wait: 10 * time.Second}},
		{nil, false, ShutdownPlan{Wait: 10 * time.Second}},
		{[]string{"shutdown-on-sigterm", "now"}, true, ShutdownPlan{Wait: 10 * time.Second}},
		{[]string{"shutdown-on-sigterm", "save force", "shutdown-timeout", "0"}, true, ShutdownPlan{HandOff: true, Save: true, Force: true}},
		{[]string{"shutdown-on-sigint", "save"}, false, ShutdownPlan{Save: true}},
		{[]string{"shutdown-on-sigint", "default", "save", "3600 1"}, false, ShutdownPlan{Save: true}}, // save points save
		{[]string{"shutdown-on-sigint", "nosave"}, false, ShutdownPlan{}},
		{[]string{"shutdown-on-sigterm", "default", "shutdown-timeout", "30"}, true, ShutdownPlan{HandOff: true, Save: true, Wait: 30 * time.Second}},
	} {
		for i := 0; i < len(tc.config); i += 2 {
			if err := srv.SetConfig(tc.config[i], tc.config[i+1]); err != nil {
				t.Fatal(err)
			}
		}
		if got := srv.SignalShutdownPlan(tc.term); got != tc.want {
			t.Errorf("after %q, term %v: %+v, want %+v", tc.config, tc.term, got, tc.want)
		}
	}
}

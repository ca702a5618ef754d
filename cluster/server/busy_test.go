package server

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/slots"
)

const (
	busyThreshold = 50 * time.Millisecond
	busyLoop      = "local i=0 while true do i=i+1 end"
	busyEvalText  = "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	busyFuncText  = "-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
	notBusyText   = "-NOTBUSY No scripts in execution right now."
	killedText    = "-ERR Script killed by user with SCRIPT KILL... script: "
)

// busyNode serves a one-node cluster whose groups are all led here, with
// busy-reply-threshold set to 50 ms; it returns the node, the address, a
// connection and a key of another group than "k".
func busyNode(t *testing.T) (*cluster.Node, string, func(args ...string) string, string) {
	n := singleNode(t)
	_, addr := serveNode(t, n)
	do := connDo(t, addr)
	if got := do("CONFIG", "SET", "busy-reply-threshold", strconv.Itoa(int(busyThreshold/time.Millisecond))); got != "+OK" {
		t.Fatalf("CONFIG SET: %s", got)
	}
	other := ""
	for i := 0; other == ""; i++ {
		if k := "o" + string(rune('a'+i)); groupOfKey(n, k) != groupOfKey(n, "k") {
			other = k
		}
	}
	return n, addr, do, other
}

func groupOfKey(n *cluster.Node, key string) uint32 { return n.GroupOf(slots.Of([]byte(key))).ID() }

// awaitBusy waits until the node records a script in k's group past the
// threshold, then checks that GET k is refused with want. (A command
// routed before the threshold is not refused: it waits for the group.)
func awaitBusy(t *testing.T, n *cluster.Node, do func(args ...string) string, want string) {
	t.Helper()
	cluster.PollUntil(t, "a busy script", func() bool {
		_, busy := n.BusyScript(groupOfKey(n, "k"), busyThreshold)
		return busy
	})
	if got := do("GET", "k"); got != want {
		t.Fatalf("GET k during the script: %s, want %s", got, want)
	}
}

func TestBusyScriptKilled(t *testing.T) {
	n, addr, do, other := busyNode(t)
	for _, kill := range []string{"SCRIPT", "FUNCTION"} {
		if got := do(kill, "KILL"); got != notBusyText {
			t.Fatalf("%s KILL with nothing running: %s", kill, got)
		}
	}
	script := dialBlk(t, addr)
	script.send("EVAL_RO", busyLoop, "1", "k")
	awaitBusy(t, n, do, busyEvalText)
	for _, c := range []struct{ args, want string }{
		{"PING", "+PONG"},       // waits for no group
		{"GET " + other, "nil"}, // another group
		{"SET k 1", busyEvalText},
		{"FUNCTION KILL", busyEvalText}, // a script is no function
		{"FUNCTION STATS", busyEvalText},
		{"SCRIPT KILL", "+OK"},
	} {
		if got := do(strings.Fields(c.args)...); got != c.want {
			t.Errorf("%s: got %s, want %s", c.args, got, c.want)
		}
	}
	if got, want := script.read(10*time.Second), killedText+fsm.SHA1Hex([]byte(busyLoop))+", on @user_script:1."; got != want {
		t.Fatalf("killed script's reply %s, want %s", got, want)
	}
	if got := do("GET", "k"); got != "nil" {
		t.Fatalf("GET k after the kill: %s", got)
	}
	script.send("PING") // the script's connection is still usable
	if got := script.read(10 * time.Second); got != "+PONG" {
		t.Fatalf("PING on the killed script's connection: %s", got)
	}
	if got := do("SCRIPT", "KILL"); got != notBusyText {
		t.Fatalf("SCRIPT KILL after the kill: %s", got)
	}
}

func TestBusyFunctionKilled(t *testing.T) {
	n, addr, do, _ := busyNode(t)
	code := "#!lua name=busy\nredis.register_function{function_name='spin', callback=function() " + busyLoop +
		" end, flags={'no-writes'}}"
	if got := do("FUNCTION", "LOAD", code); got != "busy" {
		t.Fatalf("FUNCTION LOAD: %s", got)
	}
	fn := dialBlk(t, addr)
	fn.send("FCALL_RO", "spin", "1", "k")
	awaitBusy(t, n, do, busyFuncText)
	for _, c := range []struct{ args, want string }{
		{"SCRIPT KILL", busyFuncText}, // a function is no script
		{"FUNCTION STATS", "[running_script [name spin command [FCALL_RO spin 1 k] duration_ms :* " +
			"engines [LUA [libraries_count :1 functions_count :1]]]"},
		{"FUNCTION KILL", "+OK"},
	} {
		got := do(strings.Fields(c.args)...)
		if head, tail, ok := strings.Cut(c.want, "*"); ok && strings.HasPrefix(got, head) && strings.HasSuffix(got, tail) {
			continue // * stands for a duration
		}
		if got != c.want {
			t.Errorf("%s: got %s, want %s", c.args, got, c.want)
		}
	}
	if got, want := fn.read(10*time.Second), killedText+"spin, on @user_function:2."; got != want {
		t.Fatalf("killed function's reply %s, want %s", got, want)
	}
}

// A script that writes runs inside Apply: it cannot be killed, and its
// group's instruction budget ends it.
func TestBusyScriptUnkillable(t *testing.T) {
	n, addr, do, _ := busyNode(t)
	// A fifth of a second, and seconds under -race: well past the 50 ms
	// threshold, yet well within the 10 s a proposal waits for its commit.
	const budget = 10_000_000
	if err := n.SetScriptBudget(context.Background(), groupOfKey(n, "k"), budget); err != nil {
		t.Fatal(err)
	}
	body := "redis.call('set', KEYS[1], '1') " + busyLoop
	script := dialBlk(t, addr)
	script.send("EVAL", body, "1", "k")
	awaitBusy(t, n, do, busyEvalText)
	for _, kill := range []string{"SCRIPT", "FUNCTION"} {
		if got := do(kill, "KILL"); got != unkillableText {
			t.Errorf("%s KILL: got %s, want %s", kill, got, unkillableText)
		}
	}
	want := "-ERR Script exceeded the execution budget of 10000000 Lua instructions script: " + fsm.SHA1Hex([]byte(body))
	if got := script.read(30 * time.Second); got != want {
		t.Fatalf("script's reply %s, want %s", got, want)
	}
	if got := do("GET", "k"); got != "1" { // its write stays, as after any script error
		t.Fatalf("GET k after the script: %s", got)
	}
}

const unkillableText = "-UNKILLABLE Sorry the script already executed write commands against the dataset. " +
	"You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."

// SHUTDOWN is refused while a script is busy, as in Redis; SHUTDOWN NOSAVE
// stops the node's read-only scripts and the node.
func TestBusyShutdownNosave(t *testing.T) {
	n := singleNode(t)
	srv, addr := serveNode(t, n)
	do := connDo(t, addr)
	do("CONFIG", "SET", "busy-reply-threshold", strconv.Itoa(int(busyThreshold/time.Millisecond)))
	script := dialBlk(t, addr)
	script.send("EVAL_RO", busyLoop, "1", "k")
	awaitBusy(t, n, do, busyEvalText)
	calls := make(chan ShutdownPlan, 1)
	srv.SetShutdown(func(plan ShutdownPlan) { calls <- plan })
	if got := do("SHUTDOWN"); got != busyEvalText {
		t.Fatalf("SHUTDOWN while busy: %s, want %s", got, busyEvalText)
	}
	shut := dialBlk(t, addr)
	shut.send("SHUTDOWN", "NOSAVE")
	select {
	case <-calls:
	case <-time.After(10 * time.Second):
		t.Fatal("SHUTDOWN NOSAVE did not call the hook")
	}
	if got, want := script.read(10*time.Second), killedText+fsm.SHA1Hex([]byte(busyLoop))+", on @user_script:1."; got != want {
		t.Fatalf("the script's reply %s, want %s", got, want)
	}
}

// busy-reply-threshold 0: a script is never busy, so nothing is refused
// and nothing can be killed; its budget ends it.
func TestBusyThresholdZero(t *testing.T) {
	n, addr, do, _ := busyNode(t)
	if got := do("CONFIG", "SET", "busy-reply-threshold", "0"); got != "+OK" {
		t.Fatalf("CONFIG SET: %s", got)
	}
	if err := n.SetScriptBudget(context.Background(), groupOfKey(n, "k"), 30_000_000); err != nil {
		t.Fatal(err)
	}
	script := dialBlk(t, addr)
	script.send("EVAL_RO", busyLoop, "1", "k")
	cluster.PollUntil(t, "the script running", func() bool {
		_, running := n.BusyScript(groupOfKey(n, "k"), time.Nanosecond)
		return running
	})
	time.Sleep(2 * busyThreshold) // past what would be the threshold: not a condition to wait for
	for _, c := range []struct{ args, want string }{
		{"SCRIPT KILL", notBusyText},
		{"GET k", "nil"},
	} {
		if got := do(strings.Fields(c.args)...); got != c.want {
			t.Errorf("%s: got %s, want %s", c.args, got, c.want)
		}
	}
	want := "-ERR Script exceeded the execution budget of 30000000 Lua instructions script: " + fsm.SHA1Hex([]byte(busyLoop))
	if got := script.read(30 * time.Second); got != want {
		t.Fatalf("script's reply %s, want %s", got, want)
	}
}

// What any group can answer (a script without keys, FUNCTION LIST) goes
// to a group that is not busy.
func TestBusyKeylessElsewhere(t *testing.T) {
	n, addr, do, _ := busyNode(t)
	first := n.GroupOf(0).ID() // where scripts without keys go first
	if err := n.SetScriptBudget(context.Background(), first, 10_000_000); err != nil {
		t.Fatal(err)
	}
	script := dialBlk(t, addr)
	script.send("EVAL", busyLoop, "0")
	cluster.PollUntil(t, "a busy script", func() bool {
		_, busy := n.BusyScript(first, busyThreshold)
		return busy
	})
	for _, c := range []struct{ args, want string }{
		{"EVAL return~1 0", ":1"},
		{"FUNCTION LIST", "[]"},
		{"FUNCTION STATS", busyEvalText}, // as Redis, while a script (no function) is busy
		{"SCRIPT KILL", unkillableText},
	} {
		args := strings.Fields(c.args)
		for i := range args {
			args[i] = strings.ReplaceAll(args[i], "~", " ")
		}
		if got := do(args...); got != c.want {
			t.Errorf("%s: got %s, want %s", c.args, got, c.want)
		}
	}
	want := "-ERR Script exceeded the execution budget of 10000000 Lua instructions script: " + fsm.SHA1Hex([]byte(busyLoop))
	if got := script.read(30 * time.Second); got != want {
		t.Fatalf("script's reply %s, want %s", got, want)
	}
}

// A transaction meets a busy group as in Redis: a command queued then is
// refused, and EXEC aborts the transaction with the -BUSY text.
func TestBusyTransaction(t *testing.T) {
	n, addr, do, _ := busyNode(t)
	tx := connDo(t, addr)
	for _, c := range [][2]string{{"MULTI", "+OK"}, {"SET k 1", "+QUEUED"}} {
		if got := tx(strings.Fields(c[0])...); got != c[1] {
			t.Fatalf("%s: %s, want %s", c[0], got, c[1])
		}
	}
	script := dialBlk(t, addr)
	script.send("EVAL_RO", busyLoop, "1", "k")
	awaitBusy(t, n, do, busyEvalText)
	for _, c := range [][2]string{
		{"GET k", busyEvalText},
		{"EXEC", "-EXECABORT Transaction discarded because of: " + busyEvalText[1:]},
		{"EXEC", "-ERR EXEC without MULTI"},
	} {
		if got := tx(strings.Fields(c[0])...); got != c[1] {
			t.Errorf("%s: %s, want %s", c[0], got, c[1])
		}
	}
	if got := do("SCRIPT", "KILL"); got != "+OK" {
		t.Fatalf("SCRIPT KILL: %s", got)
	}
	script.read(10 * time.Second)
	if got := do("GET", "k"); got != "nil" {
		t.Fatalf("GET k: %s; the aborted transaction's SET ran", got)
	}
}

// A writing script runs inside Apply on every replica: on the leader it
// is UNKILLABLE as a script that wrote, on a follower as Redis's replica
// running its master's script; the follower's READONLY reads of the
// group are BUSY too.
func TestBusyScriptOnFollower(t *testing.T) {
	c := cluster.NewTestCluster(t, 3, 3)
	c.LeadersSpread()
	gid := c.Nodes[0].GroupOf(slots.Of([]byte("k"))).ID()
	li := c.Leader(gid)
	fi := (li + 1) % 3
	if err := c.Nodes[li].SetScriptBudget(context.Background(), gid, 10_000_000); err != nil {
		t.Fatal(err)
	}
	_, leaderAddr := serveNode(t, c.Nodes[li])
	_, followerAddr := serveNode(t, c.Nodes[fi])
	lead, follow := connDo(t, leaderAddr), connDo(t, followerAddr)
	for _, do := range []func(...string) string{lead, follow} {
		if got := do("CONFIG", "SET", "busy-reply-threshold", strconv.Itoa(int(busyThreshold/time.Millisecond))); got != "+OK" {
			t.Fatalf("CONFIG SET: %s", got)
		}
	}
	follow("READONLY")
	body := "redis.call('set', KEYS[1], '1') " + busyLoop
	script := dialBlk(t, leaderAddr)
	script.send("EVAL", body, "1", "k")
	for _, i := range []int{li, fi} {
		cluster.PollUntil(t, "a busy script", func() bool {
			_, busy := c.Nodes[i].BusyScript(gid, busyThreshold)
			return busy
		})
	}
	for _, tc := range []struct {
		do   func(...string) string
		args string
		want string
	}{
		{lead, "SCRIPT KILL", unkillableText},
		{follow, "GET k", busyEvalText},
		{follow, "SCRIPT KILL", "-UNKILLABLE The busy script was sent by a master instance in the context of replication and cannot be killed."},
	} {
		got := tc.do(strings.Fields(tc.args)...)
		if got != tc.want && !c.Nodes[li].GroupOf(slots.Of([]byte("k"))).IsLeader() {
			// On a starved machine an election may move the leadership
			// while the script runs: the nodes' roles swapped, and so
			// did their answers.
			t.Logf("%s: got %s (node %d no longer leads the group)", tc.args, got, li)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.args, got, tc.want)
		}
	}
	script.read(30 * time.Second)
}

package server

import (
	"strings"
	"testing"

	"github.com/slotraft/slotraft/fsm"

	"github.com/slotraft/slotraft/cluster"
)

// aclCluster serves every node of a 3-node cluster: their addresses.
func aclCluster(t *testing.T) (*cluster.TestCluster, []string) {
	c := cluster.NewTestCluster(t, 3, 3)
	addrs := make([]string, 3)
	for i, n := range c.Nodes {
		_, addrs[i] = serveNode(t, n)
	}
	return c, addrs
}

func expect(t *testing.T, b *blkConn, want string, args ...string) {
	t.Helper()
	if got := b.do(args...); got != want {
		t.Fatalf("%q = %s, want %s", args, got, want)
	}
}

func expectPrefix(t *testing.T, b *blkConn, want string, args ...string) {
	t.Helper()
	if got := b.do(args...); !strings.HasPrefix(got, want) {
		t.Fatalf("%q = %s, want %s…", args, got, want)
	}
}

// TestACLReplicated: users made on one node hold on the others; denials
// as Redis, logged and counted on the node that refused; a bad rule
// changes nothing anywhere; DELUSER closes the user's connections
// everywhere.
func TestACLReplicated(t *testing.T) {
	_, addrs := aclCluster(t)
	admin := dialBlk(t, addrs[0])
	expect(t, admin, "+OK", "ACL", "SETUSER", "alice", "on", ">pw", "+get", "+ping", "+subscribe", "+acl|whoami", "~k*", "&news")

	a3 := dialBlk(t, addrs[2])
	expect(t, a3, "-WRONGPASS invalid username-password pair or user is disabled.", "AUTH", "alice", "nope")
	cluster.PollUntil(t, "node 3 to know alice", func() bool { return a3.do("AUTH", "alice", "pw") == "+OK" })
	expect(t, a3, "alice", "ACL", "WHOAMI")
	expect(t, a3, "-NOPERM User alice has no permissions to run the 'set' command", "SET", "k1", "v")
	expect(t, a3, "-NOPERM No permissions to access a key", "GET", "other")
	expect(t, a3, "-NOPERM No permissions to access a channel", "SUBSCRIBE", "sport")
	expectPrefix(t, a3, "", "GET", "k1") // allowed: a value or a redirect, no NOPERM

	log := dialBlk(t, addrs[2]).do("ACL", "LOG")
	for _, want := range []string{"reason channel context toplevel object sport username alice",
		"reason key context toplevel object other username alice",
		"reason command context toplevel object set username alice",
		"reason auth context toplevel object AUTH username alice"} {
		if !strings.Contains(log, want) {
			t.Fatalf("ACL LOG on node 3 lacks %q:\n%s", want, log)
		}
	}
	if other := dialBlk(t, addrs[1]).do("ACL", "LOG"); other != "[]" {
		t.Fatalf("ACL LOG on node 2 = %s, want none (per node)", other)
	}
	info := dialBlk(t, addrs[2]).do("INFO", "stats")
	if strings.Contains(info, "acl_access_denied_auth:0") { // more than one while node 3 learnt alice
		t.Fatal("INFO stats counts no refused AUTH")
	}
	for _, f := range []string{"acl_access_denied_cmd:1", "acl_access_denied_key:1", "acl_access_denied_channel:1"} {
		if !strings.Contains(info, f) {
			t.Fatalf("INFO stats lacks %s", f)
		}
	}

	list := admin.do("ACL", "LIST")
	expect(t, admin, "-ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL",
		"ACL", "SETUSER", "alice", "+set", "+nosuch")
	expect(t, admin, "-ERR The 'default' user cannot be removed", "ACL", "DELUSER", "alice", "default")
	for _, addr := range addrs {
		b := dialBlk(t, addr)
		cluster.PollUntil(t, "the same users everywhere", func() bool { return b.do("ACL", "LIST") == list })
	}

	expect(t, dialBlk(t, addrs[1]), ":1", "ACL", "DELUSER", "alice", "bob")
	a3.closed()

	// A connection that deletes its own user gets the reply, then is closed.
	expect(t, admin, "+OK", "ACL", "SETUSER", "tmp", "on", "nopass", "+@all", "~*")
	self := dialBlk(t, addrs[0])
	expect(t, self, "+OK", "AUTH", "tmp", "x")
	expect(t, self, ":1", "ACL", "DELUSER", "tmp")
	self.closed()
	expect(t, dialBlk(t, addrs[2]), "-WRONGPASS invalid username-password pair or user is disabled.", "AUTH", "alice", "pw")
}

// TestACLMulti: a denied command queued flags the transaction
// (EXECABORT); one whose permission went between queuing and EXEC gets
// multi.c's error in the EXEC array, the others run.
func TestACLMulti(t *testing.T) {
	_, addrs := aclCluster(t)
	admin := dialBlk(t, addrs[0])
	expect(t, admin, "+OK", "ACL", "SETUSER", "bob", "on", "nopass", "+ping", "+echo", "+multi", "+exec", "~*")
	b := dialBlk(t, addrs[0])
	expect(t, b, "+OK", "AUTH", "bob", "x")
	expect(t, b, "+OK", "MULTI")
	expect(t, b, "-NOPERM User bob has no permissions to run the 'set' command", "SET", "a", "b")
	expect(t, b, "-EXECABORT Transaction discarded because of previous errors.", "EXEC")

	expect(t, b, "+OK", "MULTI")
	expect(t, b, "+QUEUED", "PING")
	expect(t, b, "+QUEUED", "ECHO", "x")
	expect(t, admin, "+OK", "ACL", "SETUSER", "bob", "-echo")
	expect(t, b, "[+PONG -NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to execute the command or subcommand]", "EXEC")
	if log := admin.do("ACL", "LOG", "1"); !strings.Contains(log, "reason command context multi object echo username bob") {
		t.Fatalf("ACL LOG = %s", log)
	}
}

// TestRequirePass: CONFIG SET requirepass on one node is the cluster's:
// new connections everywhere must AUTH; open ones stay authenticated, as
// in Redis; RESET asks again; CONFIG GET answers it on every node.
func TestRequirePass(t *testing.T) {
	_, addrs := aclCluster(t)
	open := dialBlk(t, addrs[2])
	expect(t, open, "+PONG", "PING")
	admin := dialBlk(t, addrs[0])
	expect(t, admin, "+OK", "CONFIG", "SET", "requirepass", "s3cret")
	expect(t, open, "+PONG", "PING")

	var n3 *blkConn
	cluster.PollUntil(t, "node 3 to apply requirepass", func() bool { // node 1 answered once it applied it
		n3 = dialBlk(t, addrs[2])
		return n3.do("PING") == "-NOAUTH Authentication required."
	})
	expect(t, n3, "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time", "HELLO", "3")
	expect(t, n3, "-WRONGPASS invalid username-password pair or user is disabled.", "AUTH", "bad")
	expect(t, n3, "+OK", "AUTH", "s3cret")
	expect(t, n3, "[requirepass s3cret]", "CONFIG", "GET", "requirepass")
	expect(t, n3, "+RESET", "RESET")
	expect(t, n3, "-NOAUTH Authentication required.", "PING")
	expectPrefix(t, n3, "[server redis", "HELLO", "2", "AUTH", "default", "s3cret")
	expect(t, n3, "+PONG", "PING")

	expect(t, n3, "+OK", "CONFIG", "SET", "requirepass", "")
	cluster.PollUntil(t, "node 2 to apply requirepass ''", func() bool { return dialBlk(t, addrs[1]).do("PING") == "+PONG" })
	expect(t, dialBlk(t, addrs[1]), "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?", "AUTH", "x")
}

// TestACLNoFile: ACL LOAD and SAVE without an aclfile.
func TestACLNoFile(t *testing.T) {
	_, addrs := aclCluster(t)
	admin := dialBlk(t, addrs[0])
	expect(t, admin, "-ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.", "ACL", "LOAD")
}

// TestACLScriptCalls: the commands a script calls are checked against the
// caller's user, in writes (through the log), reads and transactions, as
// Redis's "ACL failure in script", logged in ACL LOG with context lua;
// redis.acl_check_cmd answers for the caller.
func TestACLScriptCalls(t *testing.T) {
	// One node, which leads every group: no election on a loaded machine
	// moves a key away mid-test (it answered MOVED, then, in CI).
	c := cluster.NewTestCluster(t, 1, 1)
	for gid := uint32(1); gid <= 3; gid++ {
		c.Leader(gid)
	}
	_, addr := serveNode(t, c.Nodes[0])
	addrs := []string{addr}
	admin := dialBlk(t, addrs[0])
	k, ro := "k0", "ro0" // a write, a read
	expect(t, admin, "+OK", "SET", k, "0")
	expect(t, admin, "+OK", "SET", ro, "0")
	expect(t, admin, "+OK", "ACL", "SETUSER", "alice", "on", "nopass", "~k*", "%R~ro*", "+@all", "-set")
	a := dialBlk(t, addrs[0])
	cluster.PollUntil(t, "node 1 to know alice", func() bool { return a.do("AUTH", "alice", "x") == "+OK" })

	setK := "return redis.call('set', KEYS[1], 'x')"
	expect(t, a, "-ERR ACL failure in script: User alice has no permissions to run the 'set' command script: "+fsm.SHA1Hex([]byte(setK))+", on @user_script:1.",
		"EVAL", setK, "1", k)
	expect(t, a, ":1", "EVAL", "return redis.call('incr', KEYS[1])", "1", k)
	expect(t, a, "-ERR ACL failure in script: No permissions to access a key script: "+fsm.SHA1Hex([]byte("return redis.call('incr', KEYS[1])"))+", on @user_script:1.",
		"EVAL_RO", "return redis.call('incr', KEYS[1])", "1", ro)
	expect(t, a, "0", "EVAL_RO", "return redis.call('get', KEYS[1])", "1", ro)
	expect(t, a, "[nil :1]", "EVAL", "return {redis.acl_check_cmd('set', 'k'), redis.acl_check_cmd('get', 'k')}", "0")
	expect(t, a, "+OK", "MULTI")
	expect(t, a, "+QUEUED", "EVAL", "return redis.pcall('set', KEYS[1], 'y')", "1", k)
	expect(t, a, "+QUEUED", "INCR", k)
	expect(t, a, "[-ERR ACL failure in script: User alice has no permissions to run the 'set' command :2]", "EXEC")
	expect(t, admin, "2", "GET", k) // the SETs never ran
	// The default user's scripts are not checked.
	expect(t, admin, "+OK", "EVAL", setK, "1", k)

	log := admin.do("ACL", "LOG")
	for _, want := range []string{"reason command context lua object set username alice",
		"reason key context lua object " + ro + " username alice"} {
		if !strings.Contains(log, want) {
			t.Fatalf("ACL LOG lacks %q:\n%s", want, log)
		}
	}
	if !strings.Contains(log, "count :2 reason command context lua object set") {
		t.Fatalf("ACL LOG does not group the two denied SETs:\n%s", log)
	}
}

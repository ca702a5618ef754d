package testcluster_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster/server"
	"github.com/slotraft/slotraft/cluster/testcluster"
	"github.com/slotraft/slotraft/slots"
)

// keyInGroup returns a key whose slot belongs to group index gi of c.
func keyInGroup(t *testing.T, c *testcluster.Cluster, gi int, prefix string) (string, uint16) {
	t.Helper()
	g := c.Node(firstRunning(c)).Groups()[gi]
	for i := 0; ; i++ {
		k := prefix + strconv.Itoa(i)
		slot := slots.Of([]byte(k))
		for _, r := range g.Ranges() {
			if r.Contains(slot) {
				return k, slot
			}
		}
	}
}

func firstRunning(c *testcluster.Cluster) int {
	for i := range c.Len() {
		if c.Running(i) {
			return i
		}
	}
	return -1
}

func TestRouting(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitReady(20 * time.Second)

	key, slot := keyInGroup(t, c, 0, "key")
	leader := c.LeaderIndex(0)
	other := (leader + 1) % c.Len()
	lconn := dialRaw(t, c.Addrs()[leader])
	oconn := dialRaw(t, c.Addrs()[other])

	tests := []struct {
		name string
		conn *rawConn
		args []string
		want string
	}{
		{"unknown command", lconn, []string{"FOO", "a", "b"}, "-ERR unknown command 'FOO', with args beginning with: 'a' 'b' \r\n"},
		{"arity", lconn, []string{"GET"}, "-ERR wrong number of arguments for 'get' command\r\n"},
		{"arity of a subcommand", lconn, []string{"CLUSTER", "KEYSLOT"}, "-ERR wrong number of arguments for 'cluster|keyslot' command\r\n"},
		{"unknown subcommand", lconn, []string{"CLUSTER", "FOO"}, "-ERR unknown subcommand 'FOO'. Try CLUSTER HELP.\r\n"},
		{"crossslot", lconn, []string{"MSET", "a", "1", "b", "2"}, "-CROSSSLOT Keys in request don't hash to the same slot\r\n"},
		{"moved", oconn, []string{"SET", key, "v"}, fmt.Sprintf("-MOVED %d %s\r\n", slot, c.Addrs()[leader])},
		{"moved read", oconn, []string{"GET", key}, fmt.Sprintf("-MOVED %d %s\r\n", slot, c.Addrs()[leader])},
		{"write on leader", lconn, []string{"SET", key, "v"}, "+OK\r\n"},
		{"read on leader", lconn, []string{"GET", key}, "$1\r\nv\r\n"},
		{"select 0", lconn, []string{"SELECT", "0"}, "+OK\r\n"},
		{"select 1", lconn, []string{"SELECT", "1"}, "-ERR SELECT is not allowed in cluster mode\r\n"},
		{"ping", lconn, []string{"PING"}, "+PONG\r\n"},
		{"ping msg", lconn, []string{"PING", "hi"}, "$2\r\nhi\r\n"},
		{"ping arity", lconn, []string{"PING", "a", "b"}, "-ERR wrong number of arguments for 'ping' command\r\n"},
		{"echo", lconn, []string{"ECHO", "x"}, "$1\r\nx\r\n"},
		{"keyslot", lconn, []string{"CLUSTER", "KEYSLOT", "foo"}, ":12182\r\n"},
		{"myid", lconn, []string{"CLUSTER", "MYID"}, "$40\r\n" + nodeID(c, leader) + "\r\n"},
		{"hello 4", lconn, []string{"HELLO", "4"}, "-NOPROTO unsupported protocol version\r\n"},
		{"hello bad", lconn, []string{"HELLO", "x"}, "-ERR Protocol version is not an integer or out of range\r\n"},
		{"auth", lconn, []string{"AUTH", "pw"}, "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n"},
		{"auth other user", lconn, []string{"AUTH", "bob", "pw"}, "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"countkeysinslot", lconn, []string{"CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(int(slot))}, ":1\r\n"},
		{"getkeysinslot", lconn, []string{"CLUSTER", "GETKEYSINSLOT", strconv.Itoa(int(slot)), "10"}, "*1\r\n$" + strconv.Itoa(len(key)) + "\r\n" + key + "\r\n"},
		{"countkeysinslot elsewhere", oconn, []string{"CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(int(slot))}, fmt.Sprintf("-MOVED %d %s\r\n", slot, c.Addrs()[leader])},
		{"countkeysinslot bad", lconn, []string{"CLUSTER", "COUNTKEYSINSLOT", "16384"}, "-ERR Invalid slot\r\n"},
		{"client setname", lconn, []string{"CLIENT", "SETNAME", "a b"}, "-ERR Client names cannot contain spaces, newlines or special characters.\r\n"},
		{"client setinfo", lconn, []string{"CLIENT", "SETINFO", "lib-name", "go-redis"}, "+OK\r\n"},
		{"command getkeys", lconn, []string{"COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{"command getkeys none", lconn, []string{"COMMAND", "GETKEYS", "PING"}, "-ERR The command has no key arguments\r\n"},
		{"command info unknown", lconn, []string{"COMMAND", "INFO", "nosuch"}, "*1\r\n*-1\r\n"},
		{"readonly", oconn, []string{"READONLY"}, "+OK\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.conn.do(tt.args...); got != tt.want {
				t.Errorf("%q:\n got %q\nwant %q", tt.args, got, tt.want)
			}
		})
	}

	t.Run("readonly reads a replica", func(t *testing.T) {
		// oconn is READONLY now: the read is served by its local replica
		// (stale by design), so poll until the write has been applied there.
		deadline := time.Now().Add(10 * time.Second)
		for {
			got := oconn.do("GET", key)
			if got == "$1\r\nv\r\n" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("READONLY GET on a replica: %q", got)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if got, want := oconn.do("SET", key, "w"), fmt.Sprintf("-MOVED %d %s\r\n", slot, c.Addrs()[leader]); got != want {
			t.Errorf("READONLY write: got %q want %q", got, want)
		}
	})

	t.Run("introspection", func(t *testing.T) {
		checks := []struct {
			args     []string
			contains []string
		}{
			{[]string{"INFO"}, []string{"# Server\r\nredis_version:7.2.0\r\n", "redis_mode:cluster", "# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n", "cluster_enabled:1"}},
			{[]string{"INFO", "memory"}, []string{"# Memory\r\nused_memory:", "\r\nslotraft_keys_held:"}},
			{[]string{"MEMORY", "PURGE"}, []string{"+OK\r\n"}},
			{[]string{"MEMORY", "HELP"}, []string{"PURGE"}},
			{[]string{"CLUSTER", "INFO"}, []string{"cluster_state:ok\r\n", "cluster_slots_assigned:16384\r\n", "cluster_known_nodes:3\r\n"}},
			{[]string{"CLUSTER", "NODES"}, []string{"myself,master", " connected "}},
			{[]string{"CLIENT", "LIST"}, []string{"id=", " cmd=client|list ", " lib-name=go-redis "}},
			{[]string{"COMMAND", "COUNT"}, []string{":"}},
			{[]string{"COMMAND", "DOCS", "cluster"}, []string{"$7\r\ncluster\r\n", "subcommands"}},
			{[]string{"COMMAND", "LIST", "FILTERBY", "PATTERN", "cluster*"}, []string{"cluster|slots"}},
			{[]string{"COMMAND"}, []string{"$8\r\nreadonly\r\n", "$3\r\nset\r\n"}},
			{[]string{"DBSIZE"}, []string{":1\r\n"}},
			{[]string{"KEYS", "*"}, []string{"*1\r\n$" + strconv.Itoa(len(key)) + "\r\n" + key + "\r\n"}},
			{[]string{"SCAN", "0", "COUNT", "1000"}, []string{"$1\r\n0\r\n*1\r\n"}},
			{[]string{"RANDOMKEY"}, []string{key}},
		}
		for _, ch := range checks {
			got := lconn.do(ch.args...)
			for _, want := range ch.contains {
				if !strings.Contains(got, want) {
					t.Errorf("%q: %q does not contain %q", ch.args, got, want)
				}
			}
		}
	})

	t.Run("command info get", func(t *testing.T) {
		got := lconn.do("COMMAND", "INFO", "get")
		want := "*1\r\n*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n"
		if !strings.HasPrefix(got, want) {
			t.Errorf("COMMAND INFO get:\n got %q\nwant prefix %q", got, want)
		}
	})

	t.Run("hello 3", func(t *testing.T) {
		conn := dialRaw(t, c.Addrs()[leader])
		id := strings.TrimSuffix(strings.TrimPrefix(conn.do("CLIENT", "ID"), ":"), "\r\n")
		got := conn.do("HELLO", "3", "SETNAME", "me")
		want := "%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.2.0\r\n$5\r\nproto\r\n:3\r\n" +
			"$2\r\nid\r\n:" + id + "\r\n$4\r\nmode\r\n$7\r\ncluster\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"
		if got != want {
			t.Errorf("HELLO 3:\n got %q\nwant %q", got, want)
		}
		if got := conn.do("CLIENT", "GETNAME"); got != "$2\r\nme\r\n" {
			t.Errorf("CLIENT GETNAME after HELLO SETNAME: %q", got)
		}
		if got := conn.do("GET", "{"+key+"}nosuch"); got != "_\r\n" {
			t.Errorf("RESP3 null: %q", got)
		}
		info := conn.do("CLIENT", "INFO")
		if !strings.HasPrefix(info, "=") || !strings.Contains(info, "name=me ") || !strings.Contains(info, " resp=3 ") {
			t.Errorf("CLIENT INFO in RESP3: %q", info)
		}
	})

	t.Run("pipeline", func(t *testing.T) {
		conn := dialRaw(t, c.Addrs()[leader])
		const n = 50
		k2, _ := keyInGroup(t, c, 0, "pipe")
		for range n {
			conn.send("INCR", "{"+k2+"}")
		}
		conn.send("GET", "{"+k2+"}")
		for i := range n {
			if got, want := conn.read(), ":"+strconv.Itoa(i+1)+"\r\n"; got != want {
				t.Fatalf("reply %d: got %q want %q", i, got, want)
			}
		}
		if got, want := conn.read(), "$2\r\n50\r\n"; got != want {
			t.Fatalf("GET after the writes: got %q want %q", got, want)
		}
	})

	t.Run("quit", func(t *testing.T) {
		conn := dialRaw(t, c.Addrs()[leader])
		if got := conn.do("QUIT"); got != "+OK\r\n" {
			t.Fatalf("QUIT: %q", got)
		}
		_ = conn.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.rd.ReadByte(); err == nil {
			t.Fatal("connection still open after QUIT")
		}
	})
}

func nodeID(c *testcluster.Cluster, i int) string {
	return server.NodeID(c.Peers()[i].ID)
}

func TestServerCloseEndsConnections(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{Groups: 1})
	c.WaitLeaders(20 * time.Second)
	conns := []*rawConn{dialRaw(t, c.Addrs()[0]), dialRaw(t, c.Addrs()[0])}
	if got := conns[0].do("SET", "k", "v"); got != "+OK\r\n" {
		t.Fatalf("SET: %q", got)
	}
	conns[1].send("PING") // a command in flight while the server closes
	c.StopNode(0)         // returns only once every connection goroutine has ended
	for i, conn := range conns {
		_ = conn.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		for {
			if _, err := conn.rd.ReadByte(); err != nil {
				if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
					t.Fatalf("conn %d still open after Close", i)
				}
				break
			}
		}
	}
	c.RestartNode(0)
	c.WaitLeaders(20 * time.Second)
	if got := dialRaw(t, c.Addrs()[0]).do("GET", "k"); got != "$1\r\nv\r\n" {
		t.Fatalf("GET after restart: %q", got)
	}
}

package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
)

// rv is one RESP reply as a tree, for tests that look at shapes: its
// type byte, its text (simple, error, bulk, number), its elements.
type rv struct {
	kind  byte // '+', '-', ':', '$', '*', '%', '_' …
	str   string
	elems []rv
	null  bool
}

// readRV reads one reply (RESP2 or RESP3).
func readRV(rd *bufio.Reader) (rv, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return rv{}, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return rv{}, fmt.Errorf("empty line")
	}
	v := rv{kind: line[0], str: line[1:]}
	switch v.kind {
	case '$', '=', '!':
		n, err := strconv.Atoi(v.str)
		if err != nil {
			return v, err
		}
		if n < 0 {
			v.null, v.str = true, ""
			return v, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return v, err
		}
		v.str = string(buf[:n])
	case '*', '%', '~', '>':
		n, err := strconv.Atoi(v.str)
		if err != nil {
			return v, err
		}
		if n < 0 {
			v.null = true
			return v, nil
		}
		if v.kind == '%' {
			n *= 2
		}
		for range n {
			e, err := readRV(rd)
			if err != nil {
				return v, err
			}
			v.elems = append(v.elems, e)
		}
	case '_':
		v.null = true
	}
	return v, nil
}

// flat renders v as blkConn.read does ("[a b]", "nil", "+OK", "-ERR …").
func (v rv) flat() string {
	switch {
	case v.null:
		return "nil"
	case v.kind == '*' || v.kind == '%' || v.kind == '~' || v.kind == '>':
		parts := make([]string, len(v.elems))
		for i, e := range v.elems {
			parts[i] = e.flat()
		}
		return "[" + strings.Join(parts, " ") + "]"
	case v.kind == '$' || v.kind == '=':
		return v.str
	}
	return string(v.kind) + v.str
}

// fields are the keys and values of a map reply given flat (RESP2).
func (v rv) fields() (keys []string, vals map[string]string) {
	vals = map[string]string{}
	for i := 0; i+1 < len(v.elems); i += 2 {
		keys = append(keys, v.elems[i].str)
		vals[v.elems[i].str] = v.elems[i+1].str
	}
	return keys, vals
}

// rvConn is a connection that reads replies as trees.
type rvConn struct {
	t  testing.TB
	c  net.Conn
	rd *bufio.Reader
}

func dialRV(t testing.TB, addr string) *rvConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rvConn{t: t, c: c, rd: bufio.NewReader(c)}
}

func (r *rvConn) do(args ...string) rv {
	r.t.Helper()
	if _, err := r.c.Write(encodeCommand(args...)); err != nil {
		r.t.Fatal(err)
	}
	return r.next(10 * time.Second)
}

func (r *rvConn) next(timeout time.Duration) rv {
	r.t.Helper()
	_ = r.c.SetReadDeadline(time.Now().Add(timeout))
	v, err := readRV(r.rd)
	if err != nil {
		r.t.Fatalf("read: %v", err)
	}
	return v
}

// facadeNode is one node of a test cluster serving clients and a
// Sentinel facade.
type facadeNode struct {
	n      *cluster.Node
	srv    *Server
	f      *Sentinel
	data   string
	facade string
}

// serveFacade serves node n's data port and facade (master names names)
// on fresh ports and announces the facade.
func serveFacade(t testing.TB, n *cluster.Node, names ...string) facadeNode {
	t.Helper()
	srv, data := serveNode(t, n)
	f, err := srv.NewSentinel(SentinelConfig{Masters: names})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = f.Serve(ln); close(done) }()
	t.Cleanup(func() { f.Close(); <-done })
	n.SetSentinelAddr(ln.Addr().String())
	return facadeNode{n: n, srv: srv, f: f, data: data, facade: ln.Addr().String()}
}

// sentinelCluster is a 3-node cluster of one group of 3 replicas (the
// Sentinel shape), every node with a facade, once a leader is elected and
// every facade lists the two others.
func sentinelCluster(t *testing.T) (*cluster.TestCluster, []facadeNode) {
	t.Helper()
	c := cluster.NewTestClusterGroups(t, 3, 3, 1)
	c.LeadersSpread() // the preferred replica leads: no transfer under the tests
	var fns []facadeNode
	for _, n := range c.Nodes {
		fns = append(fns, serveFacade(t, n))
	}
	for _, fn := range fns {
		r := dialRV(t, fn.facade)
		cluster.PollUntil(t, "every facade lists the two others", func() bool {
			return len(r.do("SENTINEL", "SENTINELS", "mymaster").elems) == 2
		})
	}
	return c, fns
}

// masterAddr is the client address of group 1's leader.
func masterAddr(c *cluster.TestCluster) string { return c.Peers[c.Leader(1)].ClientAddr }

// TestSentinelCommands: every SENTINEL subcommand and the other commands
// of the facade answer as Redis 7.2's Sentinel does (its reply shapes and
// error texts), or refuse with an error that says why.
func TestSentinelCommands(t *testing.T) {
	c, fns := sentinelCluster(t)
	fn := fns[0]
	mhost, mport, _ := net.SplitHostPort(masterAddr(c))
	_, fport, _ := net.SplitHostPort(fn.facade)
	noMaster := "-ERR No such master with that name"
	refused := "-ERR slotraft's Sentinel facade: "
	tests := []struct {
		args   []string
		want   string
		prefix bool // want is a prefix of the reply
	}{
		{[]string{"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"}, "[" + mhost + " " + mport + "]", false},
		{[]string{"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "nope"}, "nil", false},
		{[]string{"SENTINEL", "MASTER", "nope"}, noMaster, false},
		{[]string{"SENTINEL", "REPLICAS", "nope"}, noMaster, false},
		{[]string{"SENTINEL", "SLAVES", "nope"}, noMaster, false},
		{[]string{"SENTINEL", "SENTINELS", "nope"}, noMaster, false},
		{[]string{"SENTINEL", "CKQUORUM", "nope"}, noMaster, false},
		{[]string{"SENTINEL", "FAILOVER", "nope"}, noMaster, false},
		{[]string{"SENTINEL", "REMOVE", "nope"}, noMaster, false},
		{[]string{"SENTINEL", "SET", "nope", "quorum", "2"}, noMaster, false},
		{[]string{"SENTINEL"}, "-ERR wrong number of arguments for 'sentinel' command", false},
		{[]string{"SENTINEL", "foo"}, "-ERR unknown subcommand 'foo'. Try SENTINEL HELP.", false},
		{[]string{"SENTINEL", "MASTERS", "x"}, "-ERR wrong number of arguments for 'sentinel|masters' command", false},
		{[]string{"SENTINEL", "MYID", "x"}, "-ERR wrong number of arguments for 'sentinel|myid' command", false},
		{[]string{"SENTINEL", "MYID"}, NodeID(fn.n.Self().ID), false},
		{[]string{"SENTINEL", "CKQUORUM", "mymaster"}, "+OK 3 usable Sentinels. Quorum and failover authorization can be reached", false},
		{[]string{"SENTINEL", "IS-MASTER-DOWN-BY-ADDR", mhost, mport, "0", "*"}, "[:0 * :0]", false},
		{[]string{"SENTINEL", "IS-MASTER-DOWN-BY-ADDR", mhost, "x", "0", "*"}, "-ERR value is not an integer or out of range", false},
		{[]string{"SENTINEL", "IS-MASTER-DOWN-BY-ADDR", mhost, mport, "x", "*"}, "-ERR value is not an integer or out of range", false},
		{[]string{"SENTINEL", "CONFIG", "GET", "*"}, "[resolve-hostnames yes announce-hostnames yes announce-ip 127.0.0.1 announce-port " + fport +
			" sentinel-user  sentinel-pass  loglevel notice]", false},
		{[]string{"SENTINEL", "CONFIG", "GET", "ANNOUNCE-*", "announce-ip"}, "[announce-hostnames yes announce-ip 127.0.0.1 announce-port " + fport + "]", false},
		{[]string{"SENTINEL", "CONFIG", "SET", "loglevel", "debug"}, refused + "SENTINEL CONFIG SET", true},
		{[]string{"SENTINEL", "CONFIG", "set", "x"}, "-ERR Only SENTINEL CONFIG GET <param> [<param> <param> ...]/ SET <param> <value> [<param> <value> ...] are supported.", false},
		{[]string{"SENTINEL", "CONFIG", "foo", "bar"}, "-ERR Only SENTINEL CONFIG GET", true},
		{[]string{"SENTINEL", "CONFIG", "get"}, "-ERR wrong number of arguments for 'sentinel|config' command", false},
		{[]string{"SENTINEL", "PENDING-SCRIPTS"}, "[]", false},
		{[]string{"SENTINEL", "FLUSHCONFIG"}, "+OK", false},
		{[]string{"SENTINEL", "RESET", "my*"}, ":1", false},
		{[]string{"SENTINEL", "RESET", "nomatch"}, ":0", false},
		{[]string{"SENTINEL", "SIMULATE-FAILURE", "help"}, "[crash-after-election crash-after-promotion]", false},
		{[]string{"SENTINEL", "SIMULATE-FAILURE", "foo"}, "-ERR Unknown failure simulation specified", false},
		{[]string{"SENTINEL", "SIMULATE-FAILURE", "crash-after-election"}, refused + "SENTINEL SIMULATE-FAILURE", true},
		{[]string{"SENTINEL", "MONITOR", "x", "127.0.0.1", "6379", "2"}, refused + "SENTINEL MONITOR", true},
		{[]string{"SENTINEL", "REMOVE", "mymaster"}, refused + "SENTINEL REMOVE", true},
		{[]string{"SENTINEL", "SET", "mymaster", "quorum", "2"}, refused + "SENTINEL SET", true},
		{[]string{"SENTINEL", "DEBUG"}, refused + "SENTINEL DEBUG", true},
		{[]string{"SENTINEL", "INFO-CACHE", "nope"}, "[]", false},
		{[]string{"SENTINEL", "HELP"}, "[+SENTINEL <subcommand> [<arg> [value] [opt] ...]. Subcommands are: +CKQUORUM <master-name>", true},
		{[]string{"PING"}, "+PONG", false},
		{[]string{"PING", "hi"}, "hi", false},
		{[]string{"ROLE"}, "[sentinel [mymaster]]", false},
		{[]string{"GET", "foo"}, "-ERR unknown command 'GET', with args beginning with: 'foo' ", false},
		{[]string{"QUIT"}, "-ERR unknown command 'QUIT', with args beginning with: ", false},
		{[]string{"PUBLISH", "x", "y"}, "-ERR Only HELLO messages are accepted by Sentinel instances.", false},
		{[]string{"PUBLISH", "__sentinel__:hello", "y"}, "-ERR slotraft's Sentinel facade does not take part", true},
		{[]string{"AUTH", "x"}, "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?", false},
		{[]string{"CLIENT", "SETNAME", "app"}, "+OK", false},
		{[]string{"CLIENT", "GETNAME"}, "app", false},
		{[]string{"CLIENT", "PAUSE", "10"}, refused + "CLIENT PAUSE is served on the data port only", true},
		{[]string{"CLIENT", "LIST", "TYPE", "pubsub"}, "", false},
		{[]string{"ACL", "WHOAMI"}, "default", false},
		{[]string{"ACL", "LIST"}, refused + "ACL LIST is served on the data port only", true},
		{[]string{"COMMAND", "COUNT"}, ":15", false},
		{[]string{"COMMAND", "INFO", "get"}, "[nil]", false},
		{[]string{"SHUTDOWN"}, refused + "SHUTDOWN would stop the whole node", true},
		{[]string{"SUBSCRIBE"}, "-ERR wrong number of arguments for 'subscribe' command", false},
	}
	r := dialRV(t, fn.facade)
	for _, tt := range tests {
		got := r.do(tt.args...).flat()
		if got != tt.want && !(tt.prefix && strings.HasPrefix(got, tt.want)) {
			t.Errorf("%q = %q, want %q", tt.args, got, tt.want)
		}
	}
	// CLIENT LIST lists the facade's own connections (this one, named,
	// and the one sentinelCluster polled with), not the data port's.
	if got := r.do("CLIENT", "LIST").flat(); !strings.Contains(got, " name=app ") || strings.Count(got, "\n") != 2 ||
		strings.Count(got, " laddr="+fn.facade+" ") != 2 {
		t.Errorf("CLIENT LIST on the facade = %q, want its two connections, one named app", got)
	}
	// HELLO 3: Sentinel's map has no role.
	hello := r.do("HELLO", "3")
	keys := []string{}
	for i := 0; i < len(hello.elems); i += 2 {
		keys = append(keys, hello.elems[i].str)
	}
	if hello.kind != '%' || strings.Join(keys, ",") != "server,version,proto,id,mode,modules" || hello.elems[9].str != "sentinel" {
		t.Errorf("HELLO 3 = %c %q", hello.kind, hello.flat())
	}
}

// sentinelMasterFields, sentinelReplicaFields, sentinelSentinelFields are
// Redis 7.2's field names, in order, of an instance that is up and not
// failing over.
var (
	sentinelMasterFields = []string{"name", "ip", "port", "runid", "flags", "link-pending-commands", "link-refcount",
		"last-ping-sent", "last-ok-ping-reply", "last-ping-reply", "down-after-milliseconds", "info-refresh",
		"role-reported", "role-reported-time", "config-epoch", "num-slaves", "num-other-sentinels", "quorum",
		"failover-timeout", "parallel-syncs"}
	sentinelReplicaFields = []string{"name", "ip", "port", "runid", "flags", "link-pending-commands", "link-refcount",
		"last-ping-sent", "last-ok-ping-reply", "last-ping-reply", "down-after-milliseconds", "info-refresh",
		"role-reported", "role-reported-time", "master-link-down-time", "master-link-status", "master-host",
		"master-port", "slave-priority", "slave-repl-offset", "replica-announced"}
	sentinelSentinelFields = []string{"name", "ip", "port", "runid", "flags", "link-pending-commands", "link-refcount",
		"last-ping-sent", "last-ok-ping-reply", "last-ping-reply", "down-after-milliseconds", "last-hello-message",
		"voted-leader", "voted-leader-epoch"}
)

// TestSentinelInstances: MASTER(S), REPLICAS and SENTINELS render the
// deployment — the group's leader, its two followers, the two other
// facades — with Sentinel's fields in Sentinel's order.
func TestSentinelInstances(t *testing.T) {
	c, fns := sentinelCluster(t)
	r := dialRV(t, fns[1].facade)
	leader := c.Leader(1)
	m := r.do("SENTINEL", "MASTER", "mymaster")
	keys, vals := m.fields()
	if strings.Join(keys, ",") != strings.Join(sentinelMasterFields, ",") {
		t.Errorf("MASTER fields = %q\nwant %q", keys, sentinelMasterFields)
	}
	if vals["name"] != "mymaster" || vals["ip"]+":"+vals["port"] != c.Peers[leader].ClientAddr || vals["flags"] != "master" ||
		vals["num-slaves"] != "2" || vals["num-other-sentinels"] != "2" || vals["quorum"] != "2" || vals["role-reported"] != "master" {
		t.Errorf("MASTER = %v", vals)
	}
	if term := fns[leader].n.Groups()[0].Term(); vals["config-epoch"] != strconv.FormatUint(term, 10) {
		t.Errorf("config-epoch %s, want the group's term %d", vals["config-epoch"], term)
	}
	if ms := r.do("SENTINEL", "MASTERS"); len(ms.elems) != 1 || ms.elems[0].flat() != m.flat() && len(ms.elems[0].elems) != len(m.elems) {
		t.Errorf("MASTERS = %s", ms.flat())
	}
	reps := r.do("SENTINEL", "REPLICAS", "mymaster")
	if len(reps.elems) != 2 {
		t.Fatalf("REPLICAS = %s", reps.flat())
	}
	seen := map[string]bool{c.Peers[leader].ClientAddr: true}
	for _, rep := range reps.elems {
		keys, vals := rep.fields()
		if strings.Join(keys, ",") != strings.Join(sentinelReplicaFields, ",") {
			t.Errorf("REPLICAS fields = %q\nwant %q", keys, sentinelReplicaFields)
		}
		addr := vals["ip"] + ":" + vals["port"]
		if vals["name"] != addr || vals["flags"] != "slave" || vals["master-host"]+":"+vals["master-port"] != c.Peers[leader].ClientAddr ||
			vals["master-link-status"] != "ok" || seen[addr] {
			t.Errorf("replica = %v", vals)
		}
		seen[addr] = true
	}
	// The data ports say the same: the leader's node is the master, a
	// follower's a slave of the leader's address, as clients that check
	// the role (ROLE, INFO replication) expect of a Sentinel's instances.
	lh, lp, _ := net.SplitHostPort(c.Peers[leader].ClientAddr)
	for i, fn := range fns {
		role := dialRV(t, fn.data).do("ROLE").flat()
		info := dialRV(t, fn.data).do("INFO", "replication").str
		if i == leader {
			if !strings.HasPrefix(role, "[master :") || !strings.Contains(info, "role:master\r\n") {
				t.Errorf("leader's data port: ROLE %q, INFO %q", role, info)
			}
			continue
		}
		if !strings.HasPrefix(role, "[slave "+lh+" :"+lp+" connected :") ||
			!strings.Contains(info, "role:slave\r\nmaster_host:"+lh+"\r\nmaster_port:"+lp+"\r\nmaster_link_status:up\r\n") {
			t.Errorf("follower %d's data port: ROLE %q, INFO %q", i, role, info)
		}
	}
	if got := r.do("SENTINEL", "SLAVES", "mymaster"); len(got.elems) != 2 {
		t.Errorf("SLAVES = %s", got.flat())
	}
	sents := r.do("SENTINEL", "SENTINELS", "mymaster")
	want := map[string]bool{fns[0].facade: true, fns[2].facade: true}
	for _, s := range sents.elems {
		keys, vals := s.fields()
		if strings.Join(keys, ",") != strings.Join(sentinelSentinelFields, ",") {
			t.Errorf("SENTINELS fields = %q\nwant %q", keys, sentinelSentinelFields)
		}
		if !want[vals["ip"]+":"+vals["port"]] || vals["flags"] != "sentinel" || vals["name"] != vals["runid"] {
			t.Errorf("sentinel = %v", vals)
		}
		delete(want, vals["ip"]+":"+vals["port"])
	}
	if len(want) > 0 {
		t.Errorf("SENTINELS misses %v: %s", want, sents.flat())
	}
	info := r.do("INFO", "sentinel").str
	wantLine := "master0:name=mymaster,status=ok,address=" + c.Peers[leader].ClientAddr + ",slaves=2,sentinels=3\r\n"
	if !strings.HasPrefix(info, "# Sentinel\r\nsentinel_masters:1\r\n") || !strings.Contains(info, wantLine) {
		t.Errorf("INFO sentinel = %q", info)
	}
	all := r.do("INFO").str
	for _, sec := range []string{"# Server\r\n", "# Clients\r\n", "# CPU\r\n", "# Stats\r\n", "# Sentinel\r\n", "redis_mode:sentinel\r\n"} {
		if !strings.Contains(all, sec) {
			t.Errorf("INFO lacks %q", sec)
		}
	}
	if strings.Contains(all, "# Keyspace") || strings.Contains(all, "# Replication") {
		t.Errorf("INFO has a data section: %q", all)
	}
	// INFO-CACHE: the master's and each replica's INFO, once fetched.
	cluster.PollUntil(t, "INFO-CACHE has every instance's INFO", func() bool {
		ic := r.do("SENTINEL", "INFO-CACHE", "mymaster")
		if len(ic.elems) != 2 || ic.elems[0].str != "mymaster" || len(ic.elems[1].elems) != 3 {
			return false
		}
		for _, e := range ic.elems[1].elems {
			if len(e.elems) != 2 || !strings.Contains(e.elems[1].str, "run_id:") {
				return false
			}
		}
		return true
	})
	if runid := vals["runid"]; len(runid) != 40 {
		t.Logf("runid %q not yet reported", runid)
	}
}

// TestSentinelFailoverEvents: SENTINEL FAILOVER hands the group's
// leadership to a replica; a subscriber of the facade sees
// +switch-master with the old and new addresses, GET-MASTER-ADDR-BY-NAME
// names the new leader.
func TestSentinelFailoverEvents(t *testing.T) {
	c, fns := sentinelCluster(t)
	old := c.Leader(1)
	sub := dialRV(t, fns[(old+1)%3].facade)
	if got := sub.do("SUBSCRIBE", "+switch-master").flat(); got != "[subscribe +switch-master :1]" {
		t.Fatalf("SUBSCRIBE = %q", got)
	}
	if got := sub.do("GET", "x").flat(); !strings.HasPrefix(got, "-ERR Can't execute 'get'") && !strings.HasPrefix(got, "-ERR unknown command") {
		t.Errorf("GET while subscribed = %q", got)
	}
	// Clients of the old master's data port: a plain one is dropped when
	// it is demoted (as Sentinel has a demoted master kill its normal
	// clients), a subscriber stays.
	plain, subscriber := dialRV(t, fns[old].data), dialRV(t, fns[old].data)
	subscriber.do("SUBSCRIBE", "news")
	if got := plain.do("PING").flat(); got != "+PONG" {
		t.Fatalf("PING the master's data port = %q", got)
	}
	r := dialRV(t, fns[old].facade)
	if got := r.do("SENTINEL", "FAILOVER", "mymaster").flat(); got != "+OK" {
		t.Fatalf("FAILOVER = %q", got)
	}
	msg := sub.next(cluster.TestWait)
	if len(msg.elems) != 3 || msg.elems[0].str != "message" || msg.elems[1].str != "+switch-master" {
		t.Fatalf("event = %s", msg.flat())
	}
	oh, op, _ := net.SplitHostPort(c.Peers[old].ClientAddr)
	parts := strings.Fields(msg.elems[2].str)
	if len(parts) != 5 || parts[0] != "mymaster" || parts[1] != oh || parts[2] != op {
		t.Fatalf("+switch-master %q, want mymaster %s %s <new>", msg.elems[2].str, oh, op)
	}
	newAddr := net.JoinHostPort(parts[3], parts[4])
	cluster.PollUntil(t, "the group's leader is the new master", func() bool {
		l := c.Leader(1)
		return l != old && c.Peers[l].ClientAddr == newAddr
	})
	// The old master's facade learns the new leader from its own Raft
	// state, a heartbeat later than the new leader itself.
	oldFacade := dialRV(t, fns[old].facade)
	cluster.PollUntil(t, "GET-MASTER-ADDR-BY-NAME names the new master on the old master's facade", func() bool {
		return oldFacade.do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster").flat() == "["+parts[3]+" "+parts[4]+"]"
	})
	cluster.PollUntil(t, "the demoted master's plain client is disconnected", func() bool {
		_, err := plain.c.Write(encodeCommand("PING"))
		if err == nil {
			_ = plain.c.SetReadDeadline(time.Now().Add(time.Second))
			_, err = readRV(plain.rd)
		}
		return err != nil
	})
	if got := subscriber.do("PING").flat(); got != "[pong ]" {
		t.Errorf("PING of the subscriber after the demotion = %q", got)
	}
}

// TestSentinelACL: the facade authenticates with the cluster's users: a
// password on the default user makes it answer NOAUTH until AUTH; SENTINEL
// FAILOVER needs the data port's permission for CLUSTER FAILOVER.
func TestSentinelACL(t *testing.T) {
	c := cluster.NewTestClusterGroups(t, 1, 1, 1)
	c.Leader(1)
	fn := serveFacade(t, c.Nodes[0])
	admin := dialBlk(t, fn.data)
	expect(t, admin, "+OK", "ACL", "SETUSER", "ops", "on", ">pw", "+@all", "-cluster|failover")
	expect(t, admin, "+OK", "ACL", "SETUSER", "default", "on", "resetpass", ">secret")
	r := dialRV(t, fn.facade)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"PING"}, "-NOAUTH Authentication required."},
		{[]string{"SENTINEL", "MASTERS"}, "-NOAUTH Authentication required."},
		{[]string{"SENTINEL", "foo"}, "-ERR unknown subcommand 'foo'. Try SENTINEL HELP."}, // before authentication, as Redis
		{[]string{"AUTH", "wrong"}, "-WRONGPASS invalid username-password pair or user is disabled."},
		{[]string{"AUTH", "ops", "pw"}, "+OK"},
		{[]string{"ACL", "WHOAMI"}, "ops"},
		{[]string{"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"}, "[127.0.0.1 7000]"},
		{[]string{"SENTINEL", "FAILOVER", "mymaster"}, "-NOPERM User ops has no permissions to run the 'cluster|failover' command"},
		{[]string{"AUTH", "secret"}, "+OK"},
		{[]string{"SENTINEL", "FAILOVER", "mymaster"}, "-NOGOODSLAVE No suitable replica to promote"},
	} {
		if got := r.do(tt.args...).flat(); got != tt.want {
			t.Errorf("%q = %q, want %q", tt.args, got, tt.want)
		}
	}
	if got := dialRV(t, fn.facade).do("HELLO", "3", "AUTH", "default", "secret").kind; got != '%' {
		t.Errorf("HELLO 3 AUTH = %c, want a map", got)
	}
	// A FAILOVER while one runs.
	fn.f.mon.mu.Lock()
	fn.f.mon.masters[0].failover = &sentinelFailoverState{to: "n2"}
	fn.f.mon.mu.Unlock()
	if got := r.do("SENTINEL", "FAILOVER", "mymaster").flat(); got != "-INPROG Failover already in progress" {
		t.Errorf("FAILOVER while one runs = %q", got)
	}
	if _, vals := r.do("SENTINEL", "MASTER", "mymaster").fields(); vals["flags"] != "master,failover_in_progress" || vals["failover-state"] != "wait_promotion" {
		t.Errorf("MASTER while a failover runs: %v", vals)
	}
}

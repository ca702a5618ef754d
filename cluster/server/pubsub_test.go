package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
)

// The expected bytes in these tests were recorded from redis-server 7.0.15
// (Debian's) with the same commands, except where a comment says why
// slotraft differs.

// psConn is a raw RESP connection that reads replies as exact bytes.
type psConn struct {
	t  *testing.T
	c  net.Conn
	rd *bufio.Reader
}

func dialPS(t *testing.T, addr string) *psConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &psConn{t: t, c: c, rd: bufio.NewReader(c)}
}

func encodeCommand(args ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.Bytes()
}

// send writes one command: words split on spaces, "double quotes" group.
func (p *psConn) send(cmd string) {
	p.t.Helper()
	if _, err := p.c.Write(encodeCommand(splitArgs(cmd)...)); err != nil {
		p.t.Fatal(err)
	}
}

func splitArgs(cmd string) []string {
	var out []string
	for cmd = strings.TrimSpace(cmd); cmd != ""; cmd = strings.TrimSpace(cmd) {
		if cmd[0] == '"' {
			end := strings.IndexByte(cmd[1:], '"') + 1
			out = append(out, cmd[1:end])
			cmd = cmd[end+1:]
			continue
		}
		word, rest, _ := strings.Cut(cmd, " ")
		out = append(out, word)
		cmd = rest
	}
	return out
}

// next returns the raw bytes of the next reply (any RESP2/RESP3 type).
func (p *psConn) next() string {
	p.t.Helper()
	_ = p.c.SetReadDeadline(time.Now().Add(cluster.TestWait))
	var b strings.Builder
	if err := readRawReply(p.rd, &b); err != nil {
		p.t.Fatalf("read reply (got %q so far): %v", b.String(), err)
	}
	return b.String()
}

func readRawReply(rd *bufio.Reader, b *strings.Builder) error {
	line, err := rd.ReadString('\n')
	if err != nil {
		return err
	}
	b.WriteString(line)
	n, _ := strconv.Atoi(strings.TrimRight(line[1:], "\r\n"))
	switch line[0] {
	case '$', '=', '!':
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return err
		}
		b.Write(buf)
	case '*', '~', '>', '%', '|':
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for range max(n, 0) {
			if err := readRawReply(rd, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// expect reads one reply per want and compares bytes.
func (p *psConn) expect(want ...string) {
	p.t.Helper()
	for _, w := range want {
		if got := p.next(); got != w {
			p.t.Fatalf("got  %q\nwant %q", got, w)
		}
	}
}

// do sends cmd and expects the replies.
func (p *psConn) do(cmd string, want ...string) {
	p.t.Helper()
	p.send(cmd)
	p.expect(want...)
}

func (p *psConn) expectEOF() {
	p.t.Helper()
	_ = p.c.SetReadDeadline(time.Now().Add(cluster.TestWait))
	if b, err := p.rd.ReadByte(); err == nil {
		p.t.Fatalf("got %q, want the connection closed", b)
	}
}

// RESP builders for expectations.
func bulk(s string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }

func push(proto int, elems ...string) string {
	h := "*"
	if proto == 3 {
		h = ">"
	}
	return fmt.Sprintf("%s%d\r\n%s", h, len(elems), strings.Join(elems, ""))
}

func intr(n int) string { return fmt.Sprintf(":%d\r\n", n) }

// confirm is a (un)subscribe confirmation; name "" is the null name.
func confirm(proto int, kind, name string, n int) string {
	nm := bulk(name)
	if name == "" {
		nm = "$-1\r\n"
		if proto == 3 {
			nm = "_\r\n"
		}
	}
	return push(proto, bulk(kind), nm, intr(n))
}

func subscribedErr(name string) string {
	return "-ERR Can't execute '" + name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n"
}

// pubsubNode is a one-node cluster leading every group, with a server.
func pubsubNode(t *testing.T) (*Server, string) {
	t.Helper()
	c := cluster.NewTestCluster(t, 1, 1)
	for gid := uint32(1); gid <= 3; gid++ {
		c.Leader(gid)
	}
	return serveNode(t, c.Nodes[0])
}

func TestPubsubFormatsRESP2(t *testing.T) {
	_, addr := pubsubNode(t)
	s, pub := dialPS(t, addr), dialPS(t, addr)
	s.do("SUBSCRIBE a b", confirm(2, "subscribe", "a", 1), confirm(2, "subscribe", "b", 2))
	s.do("PSUBSCRIBE x*", confirm(2, "psubscribe", "x*", 3))
	s.do("SSUBSCRIBE s1", confirm(2, "ssubscribe", "s1", 1)) // shard channels count apart
	s.do("SUBSCRIBE a", confirm(2, "subscribe", "a", 3))     // again: confirmed, not counted twice

	pub.do("PUBLISH a m1", intr(1))
	s.expect(push(2, bulk("message"), bulk("a"), bulk("m1")))
	pub.do("PUBLISH xy m2", intr(1))
	s.expect(push(2, bulk("pmessage"), bulk("x*"), bulk("xy"), bulk("m2")))
	pub.do("SPUBLISH s1 m3", intr(1))
	s.expect(push(2, bulk("smessage"), bulk("s1"), bulk("m3")))
	pub.do("PUBLISH nobody m", intr(0))

	s.do("PING", "*2\r\n$4\r\npong\r\n$0\r\n\r\n")
	s.do("PING hi", "*2\r\n$4\r\npong\r\n$2\r\nhi\r\n")
	s.do("GET k", subscribedErr("get"))
	s.do("HELLO 3", subscribedErr("hello"))
	s.do("UNSUBSCRIBE zz", confirm(2, "unsubscribe", "zz", 3))
	// Redis answers UNSUBSCRIBE-all in its dict's order; slotraft sorts.
	s.do("UNSUBSCRIBE", confirm(2, "unsubscribe", "a", 2), confirm(2, "unsubscribe", "b", 1))
	s.do("PUNSUBSCRIBE", confirm(2, "punsubscribe", "x*", 0))
	s.do("PUNSUBSCRIBE", confirm(2, "punsubscribe", "", 0))
	s.do("SUNSUBSCRIBE", confirm(2, "sunsubscribe", "s1", 0))
	s.do("SUNSUBSCRIBE", confirm(2, "sunsubscribe", "", 0))
	s.do("PING", "+PONG\r\n") // no longer subscribed
	pub.do("PUBLISH a m4", intr(0))
	s.do("QUIT", "+OK\r\n")
	s.expectEOF()
}

func TestPubsubFormatsRESP3(t *testing.T) {
	_, addr := pubsubNode(t)
	s, pub := dialPS(t, addr), dialPS(t, addr)
	s.send("HELLO 3")
	s.next()
	s.do("SUBSCRIBE a", confirm(3, "subscribe", "a", 1))
	s.do("PSUBSCRIBE a*", confirm(3, "psubscribe", "a*", 2))
	s.do("SSUBSCRIBE sa", confirm(3, "ssubscribe", "sa", 1))
	s.do("PING", "+PONG\r\n")
	s.do("GET k", "_\r\n") // RESP3: any command while subscribed
	pub.do("PUBLISH a m1", intr(2))
	s.expect(push(3, bulk("message"), bulk("a"), bulk("m1")), push(3, bulk("pmessage"), bulk("a*"), bulk("a"), bulk("m1")))
	pub.do("SPUBLISH sa m2", intr(1))
	s.expect(push(3, bulk("smessage"), bulk("sa"), bulk("m2")))
	s.do("UNSUBSCRIBE", confirm(3, "unsubscribe", "a", 1))
	s.do("UNSUBSCRIBE", confirm(3, "unsubscribe", "", 1))
	s.do("PUNSUBSCRIBE q", confirm(3, "punsubscribe", "q", 1))
	s.do("SUNSUBSCRIBE", confirm(3, "sunsubscribe", "sa", 0))
	s.do("SUNSUBSCRIBE", confirm(3, "sunsubscribe", "", 0))

	// A RESP2 publisher and a RESP3 subscriber of one pattern each get
	// their protocol's rendering of the same message.
	pub.do("PSUBSCRIBE a*", confirm(2, "psubscribe", "a*", 1))
	third := dialPS(t, addr)
	third.do("PUBLISH ab m3", intr(2))
	s.expect(push(3, bulk("pmessage"), bulk("a*"), bulk("ab"), bulk("m3")))
	pub.expect(push(2, bulk("pmessage"), bulk("a*"), bulk("ab"), bulk("m3")))
}

// TestPubsubUnsubscribeNeverSubscribed: the unsubscribe family on a fresh
// connection confirms with count 0 and does not enter subscribed state.
func TestPubsubUnsubscribeNeverSubscribed(t *testing.T) {
	_, addr := pubsubNode(t)
	c := dialPS(t, addr)
	c.do("UNSUBSCRIBE", confirm(2, "unsubscribe", "", 0))
	c.do("PUNSUBSCRIBE a b", confirm(2, "punsubscribe", "a", 0), confirm(2, "punsubscribe", "b", 0))
	c.do("SUNSUBSCRIBE", confirm(2, "sunsubscribe", "", 0))
	c.do("PING", "+PONG\r\n")
}

func TestPubsubSubscribedStateRESP2(t *testing.T) {
	_, addr := pubsubNode(t)
	c := dialPS(t, addr)
	c.do("SUBSCRIBE ch", confirm(2, "subscribe", "ch", 1))
	for _, tc := range []struct{ cmd, want string }{
		{"GET k", subscribedErr("get")},
		{"SET k v", subscribedErr("set")},
		{"PUBLISH ch x", subscribedErr("publish")},
		{"SPUBLISH ch x", subscribedErr("spublish")},
		{"PUBSUB NUMSUB ch", subscribedErr("pubsub|numsub")},
		{"PUBSUB HELP", subscribedErr("pubsub|help")},
		{"CLIENT ID", subscribedErr("client|id")},
		{"MULTI", subscribedErr("multi")},
		{"HELLO 2", subscribedErr("hello")},
		// Unknown commands and arity errors come first, as in Redis.
		{"PUBSUB foo", "-ERR unknown subcommand 'foo'. Try PUBSUB HELP.\r\n"},
		{"PUBSUB NUMPAT x", "-ERR wrong number of arguments for 'pubsub|numpat' command\r\n"},
		{"PUBLISH ch", "-ERR wrong number of arguments for 'publish' command\r\n"},
		{"SUBSCRIBE", "-ERR wrong number of arguments for 'subscribe' command\r\n"},
		{"PING a b", "-ERR wrong number of arguments for 'ping' command\r\n"},
		{"NOSUCH x", "-ERR unknown command 'NOSUCH', with args beginning with: 'x' \r\n"},
		{"PING", "*2\r\n$4\r\npong\r\n$0\r\n\r\n"},
		{"RESET", "+RESET\r\n"},
		{"PING", "+PONG\r\n"}, // RESET left subscribed state
		{"GET k", "$-1\r\n"},
	} {
		c.do(tc.cmd, tc.want)
	}
}

// TestPubsubOrdering: replies and pushes keep their order, whichever
// goroutine produced them: the replies redcon buffered before the first
// SUBSCRIBE of a pipeline, and a publisher's messages in publish order.
func TestPubsubOrdering(t *testing.T) {
	_, addr := pubsubNode(t)
	s, pub := dialPS(t, addr), dialPS(t, addr)
	var pipe []byte
	for _, cmd := range []string{"PING one", "SET k v", "SUBSCRIBE ord", "PING two"} {
		pipe = append(pipe, encodeCommand(strings.Fields(cmd)...)...)
	}
	if _, err := s.c.Write(pipe); err != nil {
		t.Fatal(err)
	}
	s.expect(bulk("one"), "+OK\r\n", confirm(2, "subscribe", "ord", 1), "*2\r\n$4\r\npong\r\n$3\r\ntwo\r\n")

	const n = 2000
	pipe = pipe[:0]
	for i := range n {
		pipe = append(pipe, encodeCommand("PUBLISH", "ord", strconv.Itoa(i))...)
	}
	if _, err := pub.c.Write(pipe); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		s.expect(push(2, bulk("message"), bulk("ord"), bulk(strconv.Itoa(i))))
		pub.expect(intr(1))
	}
}

func TestPubsubInMulti(t *testing.T) {
	_, addr := pubsubNode(t)
	c := dialPS(t, addr)
	// Redis runs SUBSCRIBE at EXEC; slotraft refuses it while queuing
	// (docs/compatibility.md), which aborts the transaction.
	c.do("MULTI", "+OK\r\n")
	c.do("SUBSCRIBE a", "-ERR Command not allowed inside a transaction\r\n")
	c.do("PUBLISH a x", "+QUEUED\r\n")
	c.do("EXEC", "-EXECABORT Transaction discarded because of previous errors.\r\n")
	c.do("MULTI", "+OK\r\n")
	c.do("PUBLISH a x", "+QUEUED\r\n")
	c.do("PUBSUB NUMPAT", "+QUEUED\r\n")
	c.do("EXEC", "*2\r\n:0\r\n:0\r\n")
}

func TestPubsubIntrospection(t *testing.T) {
	srv, addr := pubsubNode(t)
	a, b, q := dialPS(t, addr), dialPS(t, addr), dialPS(t, addr)
	a.do("SUBSCRIBE ch1 ch2", confirm(2, "subscribe", "ch1", 1), confirm(2, "subscribe", "ch2", 2))
	a.do("PSUBSCRIBE p*", confirm(2, "psubscribe", "p*", 3))
	b.do("SUBSCRIBE ch1", confirm(2, "subscribe", "ch1", 1))
	b.do("PSUBSCRIBE p* q*", confirm(2, "psubscribe", "p*", 2), confirm(2, "psubscribe", "q*", 3))
	b.do("SSUBSCRIBE {t}s1 {t}s2", confirm(2, "ssubscribe", "{t}s1", 1), confirm(2, "ssubscribe", "{t}s2", 2))
	for _, tc := range []struct{ cmd, want string }{
		{"PUBSUB CHANNELS", "*2\r\n" + bulk("ch1") + bulk("ch2")},
		{"PUBSUB CHANNELS *2", "*1\r\n" + bulk("ch2")},
		{"PUBSUB CHANNELS x*", "*0\r\n"},
		{"PUBSUB CHANNELS a b", "-ERR unknown subcommand or wrong number of arguments for 'CHANNELS'. Try PUBSUB HELP.\r\n"},
		{"PUBSUB NUMSUB ch1 ch2 zz", "*6\r\n" + bulk("ch1") + intr(2) + bulk("ch2") + intr(1) + bulk("zz") + intr(0)},
		{"PUBSUB NUMSUB", "*0\r\n"},
		{"PUBSUB NUMPAT", intr(2)},
		{"PUBSUB SHARDCHANNELS", "*2\r\n" + bulk("{t}s1") + bulk("{t}s2")},
		{"PUBSUB SHARDNUMSUB {t}s1 nope", "*4\r\n" + bulk("{t}s1") + intr(1) + bulk("nope") + intr(0)},
		{"PUBLISH pq m", intr(2)},  // a and b through p*
		{"PUBLISH ch1 m", intr(2)}, // a and b by name
		{"SSUBSCRIBE {a}x {b}x", "-CROSSSLOT Keys in request don't hash to the same slot\r\n"},
	} {
		q.do(tc.cmd, tc.want)
	}
	info := q.next2("INFO stats")
	for _, want := range []string{"pubsub_channels:2\r\n", "pubsub_patterns:2\r\n", "pubsubshard_channels:2\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO stats lacks %q:\n%s", want, info)
		}
	}
	if info := q.next2("INFO clients"); !strings.Contains(info, "pubsub_clients:2\r\n") {
		t.Errorf("INFO clients: %s", info)
	}
	list := q.next2("CLIENT LIST")
	if !strings.Contains(list, "flags=P db=0 sub=2 psub=1 ssub=0 ") || !strings.Contains(list, "flags=P db=0 sub=1 psub=2 ssub=2 ") {
		t.Errorf("CLIENT LIST:\n%s", list)
	}
	if typed := q.next2("CLIENT LIST TYPE pubsub"); strings.Count(typed, "\n") != 2 || strings.Contains(typed, "flags=N") {
		t.Errorf("CLIENT LIST TYPE pubsub:\n%s", typed)
	}
	if typed := q.next2("CLIENT LIST TYPE normal"); strings.Count(typed, "\n") != 1 || !strings.Contains(typed, "cmd=client|list") {
		t.Errorf("CLIENT LIST TYPE normal:\n%s", typed)
	}
	// Closing the subscribers forgets their subscriptions and ends their writers.
	a.c.Close()
	b.c.Close()
	cluster.PollUntil(t, "subscriptions forgotten", func() bool {
		ch, pat, sh := srv.ps.reg.counts()
		return ch+pat+sh == 0 && srv.ps.reg.clients.Load() == 0
	})
	q.do("PUBSUB NUMPAT", intr(0))
	q.do("PUBLISH ch1 m", intr(0))
}

// next2 sends cmd and returns its reply's text (a bulk string's payload).
func (p *psConn) next2(cmd string) string {
	p.t.Helper()
	p.send(cmd)
	raw := p.next()
	if !strings.HasPrefix(raw, "$") {
		p.t.Fatalf("%s: %q", cmd, raw)
	}
	_, payload, _ := strings.Cut(raw, "\r\n")
	return strings.TrimSuffix(payload, "\r\n")
}

// TestPubsubNoWriterLeak: every subscribed connection's writer goroutine
// ends when the connection closes, whoever closes it.
func TestPubsubNoWriterLeak(t *testing.T) {
	srv, addr := pubsubNode(t)
	var conns []*psConn
	for i := range 20 {
		c := dialPS(t, addr)
		c.do("SUBSCRIBE w"+strconv.Itoa(i), confirm(2, "subscribe", "w"+strconv.Itoa(i), 1))
		conns = append(conns, c)
	}
	if got := srv.ps.writers.Load(); got != 20 {
		t.Fatalf("%d writers for 20 subscribers", got)
	}
	for i, c := range conns {
		if i%2 == 0 {
			c.c.Close()
		} else {
			c.do("QUIT", "+OK\r\n")
			c.expectEOF()
		}
	}
	cluster.PollUntil(t, "no writer left", func() bool { return srv.ps.writers.Load() == 0 })
}

func TestConfigCommand(t *testing.T) {
	_, addr := pubsubNode(t)
	c := dialPS(t, addr)
	const def = "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
	failed := func(name, why string) string {
		return "-ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + why + "\r\n"
	}
	for _, tc := range []struct{ cmd, want string }{
		{"CONFIG GET client-output-buffer-limit", "*2\r\n" + bulk("client-output-buffer-limit") + bulk(def)},
		{"CONFIG GET CLIENT-OUTPUT-*", "*2\r\n" + bulk("client-output-buffer-limit") + bulk(def)},
		{"CONFIG GET nosuch", "*0\r\n"},
		{"CONFIG SET client-output-buffer-limit pubsub", failed("client-output-buffer-limit", "Wrong number of arguments in buffer limit configuration.")},
		{"CONFIG SET client-output-buffer-limit foo", failed("client-output-buffer-limit", "Wrong number of arguments in buffer limit configuration.")},
		{"CONFIG SET client-output-buffer-limit \"master 1 2 3\"", failed("client-output-buffer-limit", "Invalid client class specified in buffer limit configuration.")},
		{"CONFIG SET client-output-buffer-limit \"pubsub 1mbx 2 3\"", failed("client-output-buffer-limit", "Error in hard, soft or soft_seconds setting in buffer limit configuration.")},
		{"CONFIG SET client-output-buffer-limit \"pubsub -1 2 3\"", failed("client-output-buffer-limit", "Error in hard, soft or soft_seconds setting in buffer limit configuration.")},
		{"CONFIG SET client-output-buffer-limit \"pubsub 1 2 -3\"", failed("client-output-buffer-limit", "Error in hard, soft or soft_seconds setting in buffer limit configuration.")},
		{"CONFIG SET nosuch 1", "-ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'\r\n"},
		{"CONFIG SET save", "-ERR wrong number of arguments for 'config|set' command\r\n"},
		{"CONFIG SET save x appendonly", "-ERR syntax error\r\n"}, // an odd count, as Redis
		{"CONFIG SET client-output-buffer-limit x client-output-buffer-limit y", failed("client-output-buffer-limit", "duplicate parameter")},
		{"CONFIG GET", "-ERR wrong number of arguments for 'config|get' command\r\n"},
		{"CONFIG foo", "-ERR unknown subcommand 'foo'. Try CONFIG HELP.\r\n"},
		{"CONFIG REWRITE", "-ERR The server is running without a config file\r\n"},
		{"CONFIG RESETSTAT", "+OK\r\n"},
		{"CONFIG SET Client-Output-Buffer-Limit \"pubsub 1mb 256kb 10\"", "+OK\r\n"},
		{"CONFIG GET client-output-buffer-limit", "*2\r\n" + bulk("client-output-buffer-limit") + bulk("normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 262144 10")},
		// All or nothing: the valid first change is undone.
		{"CONFIG SET client-output-buffer-limit \"normal 1k 1k 1\" save 900", failed("save", "Invalid save parameters")},
		{"CONFIG GET client-output-buffer-limit", "*2\r\n" + bulk("client-output-buffer-limit") + bulk("normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 262144 10")},
		{"CONFIG SET client-output-buffer-limit \"normal 1k 2kb 3 replica 1m 2mb 3 pubsub 1g 1gb 0\"", "+OK\r\n"},
		{"CONFIG GET client-output-buffer-limit", "*2\r\n" + bulk("client-output-buffer-limit") + bulk("normal 1000 2048 3 slave 1000000 2097152 3 pubsub 1000000000 1073741824 0")},
		{"CONFIG SET save \"\"", "+OK\r\n"}, // stored only: the Raft log is the durability
		{"CONFIG SET appendonly no", "+OK\r\n"},
		{"CONFIG GET save appendonly", "*4\r\n" + bulk("save") + bulk("") + bulk("appendonly") + bulk("no")},
	} {
		c.do(tc.cmd, tc.want)
	}
	c.send("HELLO 3")
	c.next()
	c.do("CONFIG GET appendonly", "%1\r\n"+bulk("appendonly")+bulk("no")) // RESP3: a map
}

func TestParseObufLimits(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want obufClass // pubsub class
		err  error
	}{
		{"pubsub 32mb 8mb 60", obufClass{32 << 20, 8 << 20, 60}, nil},
		{"PUBSUB 1 2 3", obufClass{1, 2, 3}, nil},
		{"pubsub 1K 1KB 0", obufClass{1000, 1024, 0}, nil},
		{"pubsub 0 0 0", obufClass{}, nil},
		{"pubsub 1 2 3x", obufClass{1, 2, 3}, nil}, // strtoll stops at the x
		{"pubsub 1 2 x", obufClass{1, 2, 0}, nil},
		{"", defaultObufLimits.pubsub, nil},
		{"pubsub 1 2", defaultObufLimits.pubsub, errObufArgs},
		{"monitor 1 2 3", defaultObufLimits.pubsub, errObufClass},
		{"pubsub 1tb 2 3", defaultObufLimits.pubsub, errObufValue},
		{"pubsub 99999999999999999999 2 3", obufClass{-1, 2, 3}, nil}, // strtoull saturates at 2^64-1, as in Redis
		{"pubsub 1 +2 3", defaultObufLimits.pubsub, errObufValue},
	} {
		got, err := parseObufLimits(defaultObufLimits, tc.in)
		if err != tc.err || got.pubsub != tc.want {
			t.Errorf("%q: %+v, %v; want %+v, %v", tc.in, got.pubsub, err, tc.want, tc.err)
		}
	}
}

// testSubscriber is a subscriber whose output is only queued (no writer),
// so tests read what was pushed to it.
func testSubscriber(s *Server, proto int) *subscriber {
	sub := &subscriber{c: &client{proto: proto}}
	sub.out = newOutQueue(s, sub, nil)
	return sub
}

func testServer() *Server {
	s := &Server{log: cluster.TestLogger()}
	s.ps = newPubsub(s)
	s.cstats = newCmdStats(commands().meta)
	return s
}

func (sub *subscriber) takeOutput() string {
	sub.out.mu.Lock()
	defer sub.out.mu.Unlock()
	out := string(sub.out.buf)
	sub.out.buf = nil
	return out
}

func TestRegistry(t *testing.T) {
	s := testServer()
	r := s.ps.reg
	a, b := testSubscriber(s, 2), testSubscriber(s, 3)
	r.subscribe(a, kindChannel, cluster.Argv("news", "sport"))
	r.subscribe(a, kindPattern, cluster.Argv("n*"))
	r.subscribe(b, kindPattern, cluster.Argv("n?ws", "[st]*"))
	r.subscribe(b, kindShard, cluster.Argv("{x}1"))
	if got, want := a.takeOutput(), confirm(2, "subscribe", "news", 1)+confirm(2, "subscribe", "sport", 2)+confirm(2, "psubscribe", "n*", 3); got != want {
		t.Errorf("a's confirmations: %q, want %q", got, want)
	}
	b.takeOutput()

	for _, tc := range []struct {
		kind         subKind
		channel      string
		n            int
		wantA, wantB string
	}{
		{kindChannel, "news", 3,
			push(2, bulk("message"), bulk("news"), bulk("m")) + push(2, bulk("pmessage"), bulk("n*"), bulk("news"), bulk("m")),
			push(3, bulk("pmessage"), bulk("n?ws"), bulk("news"), bulk("m"))},
		{kindChannel, "sport", 2, push(2, bulk("message"), bulk("sport"), bulk("m")),
			push(3, bulk("pmessage"), bulk("[st]*"), bulk("sport"), bulk("m"))},
		{kindChannel, "other", 0, "", ""},
		{kindChannel, "{x}1", 0, "", ""}, // shard subscribers get only SPUBLISH
		{kindShard, "{x}1", 1, "", push(3, bulk("smessage"), bulk("{x}1"), bulk("m"))},
		{kindShard, "sport", 0, "", ""}, // and shard publishing ignores patterns
	} {
		n := r.publish(tc.kind, []byte(tc.channel), []byte("m"))
		if n != tc.n {
			t.Errorf("publish %s: %d receivers, want %d", tc.channel, n, tc.n)
		}
		if got := a.takeOutput(); got != tc.wantA {
			t.Errorf("publish %s: a got %q, want %q", tc.channel, got, tc.wantA)
		}
		if got := b.takeOutput(); got != tc.wantB {
			t.Errorf("publish %s: b got %q, want %q", tc.channel, got, tc.wantB)
		}
	}

	if ch, pat, sh := r.counts(); ch != 2 || pat != 3 || sh != 1 || r.clients.Load() != 2 {
		t.Errorf("counts %d %d %d, %d clients", ch, pat, sh, r.clients.Load())
	}
	if got := fmt.Sprintf("%q %q", r.list(kindChannel, []byte("s*")), r.list(kindPattern, nil)); got != `["sport"] ["[st]*" "n*" "n?ws"]` {
		t.Errorf("lists: %s", got)
	}
	if r.numSubs(kindChannel, []byte("news")) != 1 || r.numSubs(kindPattern, []byte("news")) != 0 {
		t.Error("numSubs")
	}
	// Losing a shard slot unsubscribes its subscribers and tells them.
	if n := r.dropShardSlots(r.shardSlots()); n != 1 {
		t.Errorf("dropShardSlots: %d", n)
	}
	if got := b.takeOutput(); got != confirm(3, "sunsubscribe", "{x}1", 0) {
		t.Errorf("sunsubscribe push: %q", got)
	}
	r.removeAll(a)
	if got := a.takeOutput(); got != "" {
		t.Errorf("removeAll pushed %q", got)
	}
	r.unsubscribe(b, kindPattern, nil)
	if got, want := b.takeOutput(), confirm(3, "punsubscribe", "[st]*", 1)+confirm(3, "punsubscribe", "n?ws", 0); got != want {
		t.Errorf("punsubscribe all: %q, want %q", got, want)
	}
	if ch, pat, sh := r.counts(); ch+pat+sh != 0 || r.clients.Load() != 0 || len(r.slots) != 0 {
		t.Errorf("after unsubscribing all: %d %d %d, %d clients, %d slots", ch, pat, sh, r.clients.Load(), len(r.slots))
	}
}

func TestOutputLimits(t *testing.T) {
	s := testServer()
	sub := testSubscriber(s, 2)
	s.ps.reg.subscribe(sub, kindChannel, cluster.Argv("c"))
	o := sub.out
	lim := obufClass{hard: 100, soft: 50, softSeconds: 1}
	for _, tc := range []struct {
		used   int64
		softAt time.Duration // ago; 0 = not over the soft limit before
		want   bool
	}{
		{used: 10, want: false},
		{used: 100, want: true}, // hard
		{used: 60, want: false}, // soft, first seen
		{used: 60, softAt: 500 * time.Millisecond, want: false},
		{used: 60, softAt: 1500 * time.Millisecond, want: true},  // soft for longer than 1 s
		{used: 40, softAt: 1500 * time.Millisecond, want: false}, // back under: reset
	} {
		o.softAt = time.Time{}
		if tc.softAt > 0 {
			o.softAt = time.Now().Add(-tc.softAt)
		}
		if got := o.overLimit(lim, tc.used); got != tc.want {
			t.Errorf("used %d, soft since %v: %v, want %v", tc.used, tc.softAt, got, tc.want)
		}
	}
	if o.overLimit(obufClass{}, 1<<40) {
		t.Error("zero limits must never close")
	}
}

// TestShardLeadershipLoss: a node that stops leading a slot's group tells
// its shard subscribers with sunsubscribe, and SSUBSCRIBE there redirects.
func TestShardLeadershipLoss(t *testing.T) {
	c := cluster.NewTestCluster(t, 3, 3)
	c.LeadersSpread()
	const gid = 1
	li := c.Leader(gid)
	_, addr := serveNode(t, c.Nodes[li])
	ch := cluster.KeyIn(gid, 3, "shard")
	s := dialPS(t, addr)
	s.do("SSUBSCRIBE "+ch, confirm(2, "ssubscribe", ch, 1))
	s.do("SUBSCRIBE plain", confirm(2, "subscribe", "plain", 1))
	// HandOff moves the leadership away for good (the node stops offering
	// itself as leader), so it cannot come back under the test.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Nodes[li].HandOff(ctx); err != nil {
		t.Fatalf("hand off: %v", err)
	}
	s.expect(confirm(2, "sunsubscribe", ch, 0))
	// Still subscribed to the plain channel: RESP2 rules hold, and the
	// shard channel now redirects (or is CLUSTERDOWN for a moment).
	s.send("SSUBSCRIBE " + ch)
	if got := s.next(); !strings.HasPrefix(got, "-MOVED ") && !strings.HasPrefix(got, "-CLUSTERDOWN") {
		t.Fatalf("SSUBSCRIBE on the old leader: %q", got)
	}
	s.do("PING", "*2\r\n$4\r\npong\r\n$0\r\n\r\n")
}

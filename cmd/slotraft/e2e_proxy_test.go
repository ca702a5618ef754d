package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/resp"
)

// TestProxyProcesses runs clients that do not speak Redis Cluster against
// the proxy of one node of a 3-node, 3-group cluster of real processes:
// redis-cli without -c (every data type, a transaction, --pipe, keys of
// several slots in one command, pub/sub, a BLPOP woken by another client),
// redis-py's Redis, redis-benchmark without --cluster; a client that
// disconnects mid-pipeline leaves no connection on the nodes; and last, a
// kill -9 of another node, which leads a group, under writers. Node1's
// Sentinel facade names its proxy as the master.
func TestProxyProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	cli := lookRedisCLI(t)
	c := startTestClusterListening(t, buildSlotraft(t), 3, "--proxy-bind", "--sentinel-bind")
	c.waitOK(t)
	proxy := c.nodes[0].listen["--proxy-bind"]
	c.eventually(t, "the proxy serves", func() error { return cliExpect(cli, proxy, "", "OK", "SET", "up", "1") })
	// A cluster of several groups has no single master: the Sentinel
	// facade names the proxy of its own node (docs/sentinel.md).
	host, port, _ := net.SplitHostPort(proxy)
	c.eventually(t, "the facade names node1's proxy", func() error {
		return cliExpect(cli, c.nodes[0].listen["--sentinel-bind"], "", host+"\n"+port, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")
	})

	t.Run("redis-cli", func(t *testing.T) { proxyRedisCLI(t, cli, proxy) })
	t.Run("pipe", func(t *testing.T) { proxyPipe(t, cli, proxy) })
	t.Run("pubsub", func(t *testing.T) { proxyPubSub(t, cli, proxy) })
	t.Run("blpop", func(t *testing.T) { proxyBLPOP(t, c, cli, proxy) })
	t.Run("redis-py", func(t *testing.T) { proxyRedisPy(t, proxy) })
	t.Run("redis-benchmark", func(t *testing.T) { proxyBenchmark(t, proxy) })
	t.Run("client goes", func(t *testing.T) { proxyClientGoes(t, c, cli, proxy) })
	t.Run("failover", func(t *testing.T) { proxyFailover(t, c, cli, proxy) })
}

// cliAt runs redis-cli against addr (no -c) with stdin and returns its
// output.
func cliAt(cli, addr, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.CommandContext(ctx, cli, append([]string{"-h", host, "-p", port}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("redis-cli %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimRight(string(out), "\n"), nil
}

// cliExpect wants redis-cli's output to be want.
func cliExpect(cli, addr, stdin, want string, args ...string) error {
	got, err := cliAt(cli, addr, stdin, args...)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("redis-cli %s: %q, want %q", strings.Join(args, " "), got, want)
	}
	return nil
}

func proxyRedisCLI(t *testing.T, cli, proxy string) {
	for _, tc := range []struct{ cmd, want string }{
		{"SET str v", "OK"}, {"GET str", "v"}, {"INCRBY num 5", "5"},
		{"RPUSH list a b c", "3"}, {"LRANGE list 0 -1", "a\nb\nc"},
		{"HSET hash f v", "1"}, {"HGET hash f", "v"},
		{"SADD set m", "1"}, {"SISMEMBER set m", "1"},
		{"ZADD zset 1.5 one", "1"}, {"ZSCORE zset one", "1.5"},
		{"XADD stream 1-1 f v", "1-1"}, {"XLEN stream", "1"},
		{"PFADD hll a b", "1"}, {"PFCOUNT hll", "2"},
		{"SETBIT bits 7 1", "0"}, {"BITCOUNT bits", "1"},
		{"GEOADD geo 13.361389 38.115556 p", "1"}, {"GEOHASH geo p", "sqc8b49rny0"},
		{"MSET k1 1 k2 2 k3 3 k4 4", "OK"}, {"MGET k1 k2 nokey k3 k4", "1\n2\n\n3\n4"},
		{"EXISTS k1 k2 k3 k4 nokey", "4"}, {"DEL k1 k2 k3 k4", "4"},
		{"SELECT 0", "OK"}, {"SELECT 1", "ERR SELECT is not allowed in cluster mode"},
		{"MSETNX k1 1 k2 2", "CROSSSLOT Keys in request don't hash to the same slot"},
		{"GET", "ERR wrong number of arguments for 'get' command"},
		{"EVAL", "ERR wrong number of arguments for 'eval' command"},
		{"EVAL return_redis.call('get',KEYS[1]) 1 str", "v"},
	} {
		args := strings.Fields(strings.ReplaceAll(tc.cmd, "_", " "))
		if strings.HasPrefix(tc.cmd, "EVAL return") {
			args = []string{"EVAL", "return redis.call('get',KEYS[1])", "1", "str"}
		}
		if err := cliExpect(cli, proxy, "", tc.want, args...); err != nil {
			t.Error(err)
		}
	}
	// A transaction on one connection: redis-cli reads the commands from stdin.
	if err := cliExpect(cli, proxy, "MULTI\nSET {t}a 1\nINCR {t}a\nGET {t}a\nEXEC\n", "OK\nQUEUED\nQUEUED\nQUEUED\nOK\n2\n2"); err != nil {
		t.Error(err)
	}
}

// proxyPipe: redis-cli --pipe sends 10000 commands in one stream.
func proxyPipe(t *testing.T, cli, proxy string) {
	var b []byte
	const n = 10000
	for i := range n {
		b = resp.AppendRequest(b, [][]byte{[]byte("SET"), []byte("pipe:" + strconv.Itoa(i)), []byte(strconv.Itoa(i))})
	}
	out, err := cliAt(cli, proxy, string(b), "--pipe")
	if err != nil || !strings.Contains(out, "errors: 0, replies: "+strconv.Itoa(n)) {
		t.Fatalf("--pipe: %v\n%s", err, out)
	}
	if err := cliExpect(cli, proxy, "", "0\n9999\n5000", "MGET", "pipe:0", "pipe:9999", "pipe:5000"); err != nil {
		t.Fatal(err)
	}
}

// lineReader runs redis-cli in the background and reads its output lines.
type lineReader struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr *lockedBuffer // what redis-cli said when it ends with no reply
}

func startCLI(t *testing.T, cli, addr string, args ...string) *lineReader {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(cli, append([]string{"-h", host, "-p", port}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	lr := &lineReader{cmd: cmd, lines: make(chan string, 100), stderr: &lockedBuffer{}}
	cmd.Stderr = lr.stderr
	startUntilCleanup(t, cmd, "redis-cli "+strings.Join(args, " "))
	go func() {
		defer close(lr.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lr.lines <- sc.Text()
		}
	}()
	return lr
}

// expect reads the next lines and wants them to be want.
func (lr *lineReader) expect(t *testing.T, want ...string) {
	t.Helper()
	for _, w := range want {
		select {
		case got, ok := <-lr.lines:
			if !ok || got != w {
				t.Fatalf("redis-cli printed %q (open %v), want %q", got, ok, w)
			}
		case <-time.After(e2eDeadline):
			t.Fatalf("redis-cli printed nothing within %v, want %q", e2eDeadline, w)
		}
	}
}

func proxyPubSub(t *testing.T, cli, proxy string) {
	sub := startCLI(t, cli, proxy, "SUBSCRIBE", "news")
	sub.expect(t, "subscribe", "news", "1")
	psub := startCLI(t, cli, proxy, "PSUBSCRIBE", "n*")
	psub.expect(t, "psubscribe", "n*", "1")
	if err := cliExpect(cli, proxy, "", "2", "PUBLISH", "news", "hello"); err != nil {
		t.Fatal(err)
	}
	sub.expect(t, "message", "news", "hello")
	psub.expect(t, "pmessage", "n*", "news", "hello")
}

// proxyBLPOP: a BLPOP through the proxy blocks on its node until an
// LPUSH of another client wakes it. A leader change while it waits (a
// loaded machine, or the preferred leaders taking their groups just after
// start) ends it with the node's UNBLOCKED, as on the client port: it
// blocks again, as a client would.
func proxyBLPOP(t *testing.T, c *testCluster, cli, proxy string) {
	pushed := false
	for attempt := 1; ; attempt++ {
		waiter := startCLI(t, cli, proxy, "BLPOP", "queue", "0")
		var line string
		var ended, open bool
		if !pushed {
			line, ended, open = blockedOrEnded(t, c, cli, waiter)
			if !ended {
				if err := cliExpect(cli, proxy, "", "1", "LPUSH", "queue", "job"); err != nil {
					t.Fatal(err)
				}
				pushed = true
			}
		}
		if !ended {
			select {
			case line, open = <-waiter.lines:
			case <-time.After(e2eDeadline):
				t.Fatalf("BLPOP not woken within %v", e2eDeadline)
			}
		}
		if !open {
			t.Fatalf("redis-cli BLPOP ended with no reply (attempt %d, pushed %v); its stderr: %q", attempt, pushed, waiter.stderr.String())
		}
		if attempt < 3 && (strings.HasPrefix(line, "UNBLOCKED") || strings.Contains(line, "outcome unknown")) {
			t.Logf("BLPOP: %s (a leader change; pushed %v): again", line, pushed)
			continue
		}
		if line != "queue" || !pushed {
			t.Fatalf("BLPOP printed %q (attempt %d, pushed %v), want queue after the push; redis-cli's stderr: %q",
				line, attempt, pushed, waiter.stderr.String())
		}
		waiter.expect(t, "job")
		return
	}
}

// blockedOrEnded waits until a node reports a blocked client, or until
// waiter's BLPOP ends first (ended, with its first line and whether it
// printed one).
func blockedOrEnded(t *testing.T, c *testCluster, cli string, waiter *lineReader) (line string, ended, open bool) {
	t.Helper()
	c.eventually(t, "BLPOP blocked on its node, or ended", func() error {
		select {
		case line, open = <-waiter.lines:
			ended = true
			return nil
		default:
		}
		for _, n := range c.nodes {
			if info, err := redisCLI(cli, n, "INFO", "clients"); err == nil && !strings.Contains(info, "blocked_clients:0") {
				return nil
			}
		}
		return fmt.Errorf("no blocked client")
	})
	return line, ended, open
}

// redisPyProxyScript drives a proxy with redis-py's plain Redis client.
const redisPyProxyScript = `
import sys, redis
r = redis.Redis(host=sys.argv[1], port=int(sys.argv[2]), socket_timeout=30)
keys = ["py:%d" % i for i in range(20)]
r.mset({k: str(i) for i, k in enumerate(keys)})
assert r.mget(keys + ["py:none"]) == [str(i).encode() for i in range(20)] + [None]
p = r.pipeline(transaction=False)
for i in range(100):
    p.incr("py:ctr:%d" % (i % 7))
res = p.execute()
assert res[-1] == 15 and res[0] == 1, res
p = r.pipeline(transaction=True)
p.set("{py}a", "x").incr("{py}b").get("{py}a")
assert p.execute() == [True, 1, b"x"]
with r.pipeline() as p:
    p.watch("{py}a")
    v = p.get("{py}a")
    p.multi()
    p.set("{py}a", v + b"y")
    p.execute()
assert r.get("{py}a") == b"xy"
ps = r.pubsub()
ps.subscribe("py:ch")
assert ps.get_message(timeout=10)["type"] == "subscribe"
assert r.publish("py:ch", "m") == 1
m = ps.get_message(timeout=10)
assert m["type"] == "message" and m["data"] == b"m", m
r.rpush("py:q", "v")
assert r.blpop("py:q", 5) == (b"py:q", b"v")
assert r.delete(*keys) == 20
print("ok")
`

func proxyRedisPy(t *testing.T, proxy string) {
	py := "/usr/bin/python3" // Debian's, which sees python3-redis
	if err := exec.Command(py, "-c", "import redis").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-py not found in CI (make test-deps installs python3-redis): %v", err)
		}
		t.Skip("redis-py not installed (Debian's python3-redis)")
	}
	host, port, _ := net.SplitHostPort(proxy)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := execOutput(ctx, py, "-c", redisPyProxyScript, host, port)
	if err != nil || strings.TrimSpace(out) != "ok" {
		t.Fatalf("redis-py through the proxy: %v\n%s", err, out)
	}
}

// proxyBenchmark: redis-benchmark without --cluster runs its SET and GET
// through the proxy with no error.
func proxyBenchmark(t *testing.T, proxy string) {
	bench, err := exec.LookPath("redis-benchmark")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-benchmark not found in CI: %v", err)
		}
		t.Skip("redis-benchmark not found (redis-tools)")
	}
	host, port, _ := net.SplitHostPort(proxy)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := execOutput(ctx, bench, "-h", host, "-p", port, "-t", "set,get", "-n", "5000", "-c", "8", "-P", "4", "-r", "1000", "--csv")
	if err != nil || !strings.Contains(out, `"SET"`) || !strings.Contains(out, `"GET"`) {
		t.Fatalf("redis-benchmark through the proxy: %v\n%s", err, out)
	}
	t.Logf("redis-benchmark through the proxy:\n%s", out)
}

// proxyClientGoes: a client that sends a long pipeline and disconnects
// leaves no connection open on the nodes.
func proxyClientGoes(t *testing.T, c *testCluster, cli, proxy string) {
	connected := func() (int, error) {
		total := 0
		for _, n := range c.nodes {
			info, err := redisCLI(cli, n, "INFO", "clients")
			if err != nil {
				return 0, err
			}
			for _, line := range strings.Split(info, "\n") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_clients:"); ok {
					k, _ := strconv.Atoi(v)
					total += k
				}
			}
		}
		return total, nil
	}
	before, err := connected()
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		nc, err := net.Dial("tcp", proxy)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		for i := range 20000 {
			b.Write(resp.AppendRequest(nil, [][]byte{[]byte("INCR"), []byte("goes:" + strconv.Itoa(i%50))}))
		}
		go func() { _, _ = nc.Write(b.Bytes()) }()
		if round > 0 {
			_, _ = io.ReadAtLeast(nc, make([]byte, 64), 16)
		}
		_ = nc.Close()
	}
	c.eventually(t, "the nodes' client connections back to "+strconv.Itoa(before), func() error {
		n, err := connected()
		if err == nil && n > before {
			err = fmt.Errorf("%d connected clients", n)
		}
		return err
	})
}

// TestProxyBindRefused: a --proxy-bind that is not host:port stops the
// start before anything listens.
func TestProxyBindRefused(t *testing.T) {
	for _, bad := range []string{"nope", "127.0.0.1:99999"} {
		err := runServer([]string{"--id", "n1", "--proxy-bind", bad}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--proxy-bind") {
			t.Errorf("--proxy-bind %s: %v, want an error naming the flag", bad, err)
		}
	}
}

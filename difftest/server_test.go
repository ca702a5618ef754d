package difftest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster/testcluster"
	"github.com/slotraft/slotraft/internal/testports"
)

// startRedis starts redis-server on a free loopback port without
// persistence and returns its address; t.Cleanup stops it. Without
// redis-server the test is skipped, or fails when CI=true.
func startRedis(t *testing.T) string {
	t.Helper()
	return startRedisWith(t)
}

// startRedisCluster starts redis-server as a one-node Redis Cluster that
// serves every slot, and returns its address once the cluster is ok.
func startRedisCluster(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	addr := startRedisWith(t, "--cluster-enabled", "yes", "--cluster-config-file", dir+"/nodes.conf")
	c, err := dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if r, err := c.do("CLUSTER", "ADDSLOTSRANGE", "0", "16383"); err != nil || r.str != "OK" {
		t.Fatalf("CLUSTER ADDSLOTSRANGE: %v %v", r, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := c.do("CLUSTER", "INFO")
		if err == nil && strings.Contains(r.str, "cluster_state:ok") {
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server cluster on %s not ok: %v %v", addr, r, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startRedisWith starts redis-server with extra arguments and returns its
// address once it answers PING.
func startRedisWith(t *testing.T, extra ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server not found (CI=true): install redis-server")
		}
		t.Skip("redis-server not found")
	}
	port := testports.Free(t, 1)[0]
	dir := t.TempDir()
	args := append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "",
		"--appendonly", "no", "--dir", dir, "--daemonize", "no", "--logfile", dir + "/redis.log"}, extra...)
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := dial(addr)
		if err == nil {
			r, err := c.do("PING")
			c.close()
			if err == nil && r.str == "PONG" {
				return addr
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(dir + "/redis.log")
			t.Fatalf("redis-server on %s not ready: %v\n%s", addr, err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startSlotraft starts a one-node, one-group slotraft cluster (every slot
// local, so no redirects) and returns its client address.
func startSlotraft(t *testing.T) string {
	t.Helper()
	c := testcluster.New(t, 1, testcluster.Options{Groups: 1, Replicas: 1})
	c.WaitLeaders(20 * time.Second)
	return c.Addrs()[0]
}

// reply is a parsed RESP2/RESP3 reply: typ is the RESP type byte ('+', '-',
// ':', '$', '*', '%', '~', ',', '_', '#', '(', '=', '>', and '|' for an
// attribute, whose elems are its map's keys and values then the reply it
// precedes); nil bulk strings and arrays are '_'.
type reply struct {
	typ   byte
	str   string
	elems []reply
}

func (r reply) String() string {
	switch r.typ {
	case '*', '%', '~', '>', '|':
		parts := make([]string, len(r.elems))
		for i, e := range r.elems {
			parts[i] = e.String()
		}
		return string(r.typ) + "[" + strings.Join(parts, " ") + "]"
	case '_':
		return "nil"
	case '$':
		return strconv.Quote(r.str)
	}
	return string(r.typ) + r.str
}

// client is a minimal RESP client that keeps replies exactly as sent.
type client struct {
	conn net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
}

func dial(addr string) (*client, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &client{conn: conn, r: bufio.NewReader(conn), w: bufio.NewWriter(conn)}, nil
}

func (c *client) close() { c.conn.Close() }

func (c *client) send(args ...string) {
	fmt.Fprintf(c.w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(c.w, "$%d\r\n%s\r\n", len(a), a)
	}
}

// pipeline sends every command, then reads one reply per command.
func (c *client) pipeline(cmds [][]string) ([]reply, error) {
	_ = c.conn.SetDeadline(time.Now().Add(30 * time.Second))
	for _, cmd := range cmds {
		c.send(cmd...)
	}
	if err := c.w.Flush(); err != nil {
		return nil, err
	}
	out := make([]reply, len(cmds))
	for i := range cmds {
		r, err := c.read()
		if err != nil {
			return nil, fmt.Errorf("reply to %q: %w", cmds[i], err)
		}
		out[i] = r
	}
	return out, nil
}

func (c *client) do(args ...string) (reply, error) {
	rs, err := c.pipeline([][]string{args})
	if err != nil {
		return reply{}, err
	}
	return rs[0], nil
}

func (c *client) line() (string, error) {
	l, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(l) < 3 || l[len(l)-2] != '\r' {
		return "", fmt.Errorf("bad line %q", l)
	}
	return l[:len(l)-2], nil
}

func (c *client) read() (reply, error) {
	l, err := c.line()
	if err != nil {
		return reply{}, err
	}
	t, rest := l[0], l[1:]
	switch t {
	case '+', '-', ':', ',', '#', '(':
		return reply{typ: t, str: rest}, nil
	case '_':
		return reply{typ: '_'}, nil
	case '$', '=':
		n, err := strconv.Atoi(rest)
		if err != nil {
			return reply{}, err
		}
		if n < 0 {
			return reply{typ: '_'}, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return reply{}, err
		}
		return reply{typ: '$', str: string(buf[:n])}, nil
	case '*', '%', '~', '>', '|':
		n, err := strconv.Atoi(rest)
		if err != nil {
			return reply{}, err
		}
		if n < 0 {
			return reply{typ: '_'}, nil
		}
		if t == '%' || t == '|' {
			n *= 2
		}
		if t == '|' {
			n++ // an attribute's map, then the reply it goes with
		}
		r := reply{typ: t, elems: make([]reply, 0, n)}
		for range n {
			e, err := c.read()
			if err != nil {
				return reply{}, err
			}
			r.elems = append(r.elems, e)
		}
		return r, nil
	}
	return reply{}, errors.New("unknown reply type " + strconv.Quote(l))
}

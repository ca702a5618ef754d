package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/slotraft/slotraft/internal/testports"
)

// startSentinelCluster starts n `slotraft server` processes in the
// Sentinel shape (--groups 1 --groups-per-node 0: every slot in one
// group), each serving the Sentinel protocol (--sentinel-bind); it
// returns the cluster and the facades' addresses, once every facade
// names node1, the group's preferred leader (so leader spreading moves
// the leadership no more).
func startSentinelCluster(t *testing.T, bin string, n int) (*testCluster, []string) {
	t.Helper()
	ports := testports.Free(t, 3*n)
	dir := t.TempDir()
	c := &testCluster{bin: bin}
	var peers, facades []string
	for i := range n {
		node := processNodeOn(bin, dir, i, ports[3*i], ports[3*i+1])
		peers = append(peers, node.id+"="+node.client+"@"+node.bus)
		facades = append(facades, net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[3*i+2])))
		c.nodes = append(c.nodes, node)
	}
	for i, node := range c.nodes {
		node.args = []string{"server", "--id", node.id, "--bind", node.client, "--bus-bind", node.bus,
			"--peers", strings.Join(peers, ","), "--data-dir", filepath.Join(dir, node.id), "--log-level", "debug",
			"--groups", "1", "--groups-per-node", "0", "--sentinel-bind", facades[i]}
	}
	t.Cleanup(func() { c.stop(t) })
	for _, node := range c.nodes {
		node.start(t)
	}
	c.waitOK(t)
	c.eventually(t, "every facade names node1, the group's preferred leader", func() error {
		m, err := agreedMaster(facades)
		if err == nil && m != c.nodes[0].client {
			err = fmt.Errorf("they name %s", m)
		}
		return err
	})
	return c, facades
}

// agreedMaster is the master every facade of addrs names, or an error.
func agreedMaster(addrs []string) (string, error) {
	seen := ""
	for _, a := range addrs {
		m, err := facadeMaster(a)
		if err != nil {
			return "", err
		}
		if seen != "" && m != seen {
			return "", fmt.Errorf("%s names %s, another %s", a, m, seen)
		}
		seen = m
	}
	return seen, nil
}

// facadeMaster asks one facade for mymaster's address.
func facadeMaster(addr string) (string, error) {
	sc := redis.NewSentinelClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
	defer sc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	hp, err := sc.GetMasterAddrByName(ctx, "mymaster").Result()
	if err != nil {
		return "", fmt.Errorf("%s: %w", addr, err)
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}

// ackedWriter writes prefix:i = v-i for i = 0, 1, … through a client,
// retrying each key until it is acknowledged (SET is idempotent, so a
// write whose outcome was unknown is safe to send again), as an
// application would; acked counts the acknowledged keys.
type ackedWriter struct {
	acked atomic.Int64
	errs  atomic.Int64 // failed tries (the client saw the failover)
	done  chan struct{}
}

func writeAcked(ctx context.Context, rdb redis.Cmdable, prefix string) *ackedWriter {
	w := &ackedWriter{done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i := 0; ctx.Err() == nil; {
			wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err := rdb.Set(wctx, prefix+strconv.Itoa(i), "v-"+strconv.Itoa(i), 0).Err()
			cancel()
			if err != nil {
				w.errs.Add(1)
				select {
				case <-ctx.Done():
				case <-time.After(20 * time.Millisecond): // the application's retry pause
				}
				continue
			}
			i++
			w.acked.Store(int64(i))
		}
	}()
	return w
}

// waitAcked waits until w has acknowledged at least n keys.
func (w *ackedWriter) waitAcked(t *testing.T, what string, n int64) {
	t.Helper()
	deadline := time.Now().Add(e2eDeadline)
	for w.acked.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d keys acknowledged after %v, want %d (%d failed tries)", what, w.acked.Load(), e2eDeadline, n, w.errs.Load())
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
}

// verifyAcked checks that every key the writer acknowledged (0..n-1)
// holds its value.
func verifyAcked(ctx context.Context, t *testing.T, rdb redis.Cmdable, prefix string, n int64) {
	t.Helper()
	for i := range n {
		k := prefix + strconv.FormatInt(i, 10)
		var got string
		var err error
		for try := 0; try < 50; try++ { // a read may meet an election too
			if got, err = rdb.Get(ctx, k).Result(); err == nil || errors.Is(err, redis.Nil) {
				break
			}
			time.Sleep(50 * time.Millisecond) // retry pause
		}
		if err != nil || got != "v-"+strconv.FormatInt(i, 10) {
			t.Fatalf("acknowledged %s = %q, %v: lost", k, got, err)
		}
	}
}

// TestSentinelClientsFollowFailover: applications written for Redis +
// Sentinel — go-redis's FailoverClient and redis-py's Sentinel, each
// given the three facades and the name mymaster — write to a one-group
// cluster; the leader's node is killed with SIGKILL; both go on writing
// to the new leader with no change of code, and every write they had
// acknowledged is there. Then SENTINEL FAILOVER moves the master back to
// a live node: go-redis follows +switch-master.
func TestSentinelClientsFollowFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	py := lookRedisPy(t)
	c, facades := startSentinelCluster(t, buildSlotraft(t), 3)
	master, err := agreedMaster(facades)
	if err != nil {
		t.Fatal(err)
	}
	var dialed sync.Map // addresses the FailoverClient connected to
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: "mymaster", SentinelAddrs: facades, MaxRetries: 3,
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dialed.Store(addr, true)
			return (&net.Dialer{Timeout: time.Second}).DialContext(ctx, network, addr)
		},
	})
	defer rdb.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gw := writeAcked(ctx, rdb, "go:")
	pyw := startRedisPyWriter(t, py, facades, "py:")
	gw.waitAcked(t, "go-redis before the kill", 50)
	pyw.waitAcked(t, "redis-py before the kill", 50)

	// A replica reader, as go-redis's ReplicaOnly with READONLY on
	// connect (docs/sentinel.md): it reads a key from a follower. go-redis
	// runs OnConnect on its Sentinel connections too, where READONLY is
	// an unknown command (as on Redis's Sentinel): its error is ignored.
	ro := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: "mymaster", SentinelAddrs: facades, ReplicaOnly: true, MaxRetries: 3,
		OnConnect: func(ctx context.Context, cn *redis.Conn) error { _ = cn.ReadOnly(ctx).Err(); return nil },
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr == master {
				return nil, errors.New("the replica reader dialed the master")
			}
			return (&net.Dialer{Timeout: time.Second}).DialContext(ctx, network, addr)
		},
	})
	defer ro.Close()
	c.eventually(t, "a replica serves go:0 to a READONLY connection", func() error {
		v, err := ro.Get(ctx, "go:0").Result()
		if err == nil && v != "v-0" {
			err = fmt.Errorf("go:0 = %q", v)
		}
		return err
	})

	victim := c.nodeByAddr(t, master)
	goBefore, pyBefore := gw.acked.Load(), pyw.acked.Load()
	victim.kill(t)
	t.Logf("killed %s (the master, %s) after %d go-redis and %d redis-py writes", victim.id, master, goBefore, pyBefore)
	gw.waitAcked(t, "go-redis after the kill", goBefore+100)
	pyw.waitAcked(t, "redis-py after the kill", pyBefore+100)
	var live []string
	for i, n := range c.nodes {
		if n != victim {
			live = append(live, facades[i])
		}
	}
	newMaster, err := agreedMaster(live)
	if err != nil || newMaster == master {
		t.Fatalf("after the kill the facades name %q (%v), want a new master", newMaster, err)
	}
	if _, ok := dialed.Load(newMaster); !ok {
		t.Errorf("go-redis never connected to the new master %s", newMaster)
	}

	// A failover asked of Sentinel: the master moves to the other live
	// node; go-redis hears +switch-master and moves its connections.
	sc := redis.NewSentinelClient(&redis.Options{Addr: live[0]})
	defer sc.Close()
	// go-redis's own subscription, as its FailoverClient makes one.
	esc := redis.NewSentinelClient(&redis.Options{Addr: live[1]})
	defer esc.Close()
	events := esc.Subscribe(ctx, "+switch-master")
	defer events.Close()
	if _, err := events.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	if err := sc.Failover(ctx, "mymaster").Err(); err != nil {
		t.Fatalf("SENTINEL FAILOVER: %v", err)
	}
	var third string
	c.eventually(t, "the facades name the failover's new master", func() error {
		m, err := agreedMaster(live)
		if err == nil && m == newMaster {
			err = errors.New("still " + m)
		}
		third = m
		return err
	})
	select {
	case msg := <-events.Channel():
		// Parsed as go-redis's FailoverClient parses it.
		parts := strings.Split(msg.Payload, " ")
		if len(parts) != 5 || parts[0] != "mymaster" || net.JoinHostPort(parts[1], parts[2]) != newMaster ||
			net.JoinHostPort(parts[3], parts[4]) != third {
			t.Errorf("+switch-master %q, want mymaster %s → %s", msg.Payload, newMaster, third)
		}
	case <-time.After(e2eDeadline):
		t.Fatal("no +switch-master after SENTINEL FAILOVER")
	}
	// Writes acknowledged right after FAILOVER may still be the old
	// master's, served until the leadership transfer ends: wait for
	// go-redis to follow +switch-master to the new master, then for 100
	// writes acknowledged after that.
	c.eventually(t, "go-redis connects to the failover's master "+third, func() error {
		if _, ok := dialed.Load(third); !ok {
			return errors.New("not dialed yet")
		}
		return nil
	})
	goBefore = gw.acked.Load()
	gw.waitAcked(t, "go-redis after SENTINEL FAILOVER", goBefore+100)
	if role, err := rdb.Do(ctx, "ROLE").Slice(); err != nil || len(role) == 0 || role[0] != "master" {
		t.Errorf("ROLE through the FailoverClient = %v, %v: want master", role, err)
	}

	cancel()
	<-gw.done
	pyAcked := pyw.stop(t)
	vctx, vcancel := context.WithTimeout(context.Background(), e2eDeadline)
	defer vcancel()
	verifyAcked(vctx, t, rdb, "go:", gw.acked.Load())
	verifyAcked(vctx, t, rdb, "py:", pyAcked)
	t.Logf("verified %d go-redis and %d redis-py acknowledged writes (%d and %d failed tries during the failovers)",
		gw.acked.Load(), pyAcked, gw.errs.Load(), pyw.errs.Load())
}

// lookRedisPy is Debian's python3 with python3-redis (make test-deps),
// which redis-py's tests need; skipped without it outside CI.
func lookRedisPy(t *testing.T) string {
	t.Helper()
	py := "/usr/bin/python3" // Debian's, which sees python3-redis (a pyenv python3 on PATH does not)
	if err := exec.Command(py, "-c", "import redis.sentinel").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-py not found in CI (make test-deps installs python3-redis): %v", err)
		}
		t.Skip("redis-py not installed (Debian's python3-redis)")
	}
	return py
}

// redisPySentinelWriter is an application using redis-py's Sentinel: it
// writes prefix:i = v-i through master_for('mymaster'), retrying a key
// until acknowledged, prints "ack <n>" after each, and stops at EOF on
// stdin, printing "done <n>".
const redisPySentinelWriter = `
import sys, threading, time
from redis.sentinel import Sentinel
from redis.exceptions import RedisError
addrs, prefix = sys.argv[1].split(","), sys.argv[2]
sentinels = [(a.rsplit(":", 1)[0], int(a.rsplit(":", 1)[1])) for a in addrs]
s = Sentinel(sentinels, socket_timeout=1, socket_connect_timeout=1)
m = s.master_for("mymaster", socket_timeout=2, socket_connect_timeout=1)
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
i, errs = 0, 0
while not stop.is_set():
    try:
        m.set("%s%d" % (prefix, i), "v-%d" % i)
    except RedisError as e:
        errs += 1
        print("err %s" % type(e).__name__, flush=True)
        time.sleep(0.02)
        continue
    i += 1
    print("ack %d" % i, flush=True)
print("done %d %d" % (i, errs), flush=True)
`

// pyWriter follows the redis-py writer's output.
type pyWriter struct {
	ackedWriter
	cmd   *exec.Cmd
	stdin io.WriteCloser
	final chan int64
}

func startRedisPyWriter(t *testing.T, py string, facades []string, prefix string) *pyWriter {
	t.Helper()
	cmd := exec.Command(py, "-c", redisPySentinelWriter, strings.Join(facades, ","), prefix)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &prefixedLog{t: t}
	w := &pyWriter{cmd: cmd, stdin: stdin, final: make(chan int64, 1)}
	w.done = make(chan struct{})
	startUntilCleanup(t, cmd, "redis-py writer")
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 2 && f[0] == "ack":
				n, _ := strconv.ParseInt(f[1], 10, 64)
				w.acked.Store(n)
			case len(f) == 2 && f[0] == "err":
				w.errs.Add(1)
			case len(f) == 3 && f[0] == "done":
				n, _ := strconv.ParseInt(f[1], 10, 64)
				w.final <- n
			}
		}
	}()
	return w
}

// stop ends the writer (EOF on its stdin) and returns how many keys it
// acknowledged.
func (w *pyWriter) stop(t *testing.T) int64 {
	t.Helper()
	_ = w.stdin.Close()
	select {
	case n := <-w.final:
		<-w.done
		return n
	case <-time.After(e2eDeadline):
		t.Fatal("the redis-py writer did not stop")
		return 0
	}
}

// prefixedLog sends a helper process's stderr to the test log.
type prefixedLog struct {
	t  *testing.T
	mu sync.Mutex
}

func (p *prefixedLog) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.t.Logf("redis-py: %s", strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

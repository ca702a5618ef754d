package main

import (
	"bufio"
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// devStopBound bounds the wait for `slotraft dev` to stop its nodes after
// Ctrl-C in this test; the goal is 5 s (measured: about 2 s), a
// test allows for a loaded CI machine and reports the time it took.
const devStopBound = 20 * time.Second

// TestDevCtrlC: `make run`'s `slotraft dev` starts three processes that
// form a cluster; SIGINT (Ctrl-C) stops all of them, exit status 0, and
// none logs an error while it stops.
func TestDevCtrlC(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	bin := buildSlotraft(t)
	dir := t.TempDir()
	cmd, out := startDev(t, bin, dir)
	banner := readUntil(t, out, "cluster_state:ok")
	if !strings.Contains(banner, "3 nodes up") {
		t.Fatalf("banner: %q", banner)
	}
	banner = readUntil(t, out, "proxy:")
	m := regexp.MustCompile(`proxy: +redis-cli -p (\d+)`).FindStringSubmatch(banner)
	if m == nil {
		t.Fatalf("banner does not print node1's proxy: %q", banner)
	}
	proxy, _ := strconv.Atoi(m[1])
	checkDevProxy(t, proxy)
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("slotraft dev after SIGINT: %v", err)
		}
		t.Logf("slotraft dev stopped its nodes %v after SIGINT", time.Since(start).Round(time.Millisecond))
	case <-time.After(devStopBound):
		_ = cmd.Process.Kill()
		t.Fatalf("slotraft dev did not stop within %v of SIGINT", devStopBound)
	}
	for i := 1; i <= 3; i++ {
		log := filepath.Join(dir, "node"+strconv.Itoa(i)+".log")
		if line := errorWhileStopping(log); line != "" {
			t.Errorf("node%d logged an error while it stopped: %s", i, line)
		}
		if !strings.Contains(tail(log, 3), "slotraft node stopped") {
			t.Errorf("node%d's log does not end with its stop:\n%s", i, tail(log, 5))
		}
	}
}

// startDev runs `slotraft dev` on base ports whose fifteen ports (three
// client, three bus, three HTTP, three Sentinel, three proxy) are free,
// trying a few, and returns its stdout.
func startDev(t *testing.T, bin, dir string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	return startDevArgs(t, bin, dir)
}

// checkDevProxy: a plain (not cluster-aware) client of node1's proxy
// reads its writes of keys of every group.
func checkDevProxy(t *testing.T, port int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), MaxRetries: -1})
	defer rdb.Close()
	for i := range 20 {
		k := "dev:" + strconv.Itoa(i)
		if err := rdb.Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatalf("SET %s through the proxy: %v", k, err)
		}
		if v, err := rdb.Get(ctx, k).Int(); err != nil || v != i {
			t.Fatalf("GET %s through the proxy = %d, %v", k, v, err)
		}
	}
}

func portsFree(ports ...int) bool {
	for _, p := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			return false
		}
		ln.Close()
	}
	return true
}

// readUntil reads r until a line holds want (within e2eDeadline) and
// returns what it read.
func readUntil(t *testing.T, r *bufio.Reader, want string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
	defer cancel()
	got := make(chan string, 1)
	var b strings.Builder
	go func() {
		for {
			line, err := r.ReadString('\n')
			b.WriteString(line)
			if strings.Contains(line, want) || err != nil {
				got <- b.String() // the rest (dev's stop messages) fits the pipe
				return
			}
		}
	}()
	select {
	case s := <-got:
		if !strings.Contains(s, want) {
			t.Fatalf("slotraft dev ended before %q:\n%s", want, s)
		}
		return s
	case <-ctx.Done():
		t.Fatalf("no %q from slotraft dev within %v", want, e2eDeadline)
		return ""
	}
}

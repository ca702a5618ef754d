package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cmd/slotraft/internal/probe"
	"github.com/slotraft/slotraft/internal/testports"
)

// e2eDeadline bounds every wait of the end-to-end test (startup, failover).
const e2eDeadline = 90 * time.Second

// TestRedisCLIAgainstProcesses runs three `slotraft server` processes and
// talks to them with redis-cli, as a user following the README would. It
// kills one node with SIGKILL and restarts it on its data dir.
func TestRedisCLIAgainstProcesses(t *testing.T) {
	cli := lookRedisCLI(t)
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	bin := buildSlotraft(t)
	c := startTestCluster(t, bin, 3)
	c.waitOK(t)

	c.eventually(t, "set foo through node1", func() error {
		return c.expect(cli, c.nodes[0], "OK", "-c", "set", "foo", "bar")
	})
	if err := c.expect(cli, c.nodes[2], "bar", "-c", "get", "foo"); err != nil {
		t.Fatalf("get foo through node3: %v", err)
	}
	entries := c.clusterSlots(t, cli, c.nodes[1])
	checkSlotsCoverage(t, entries, c)
	// Leaders are spread one per node once the preferred replicas took over.
	c.eventually(t, "one master per node", func() error {
		entries = c.clusterSlots(t, cli, c.nodes[1])
		masters := map[int]bool{}
		for _, e := range entries {
			masters[e.ports[0]] = true
		}
		if len(masters) != len(c.nodes) {
			return fmt.Errorf("%d distinct masters in %+v, want %d", len(masters), entries, len(c.nodes))
		}
		return nil
	})
	checkSlotsCoverage(t, entries, c)

	// Kill the master of foo's slot (12182), read through the survivors,
	// then restart it on the same data dir and read through every node.
	victim := c.nodeByPort(t, masterOf(t, entries, 12182))
	t.Logf("kill -9 %s (pid %d), the master of foo's slot", victim.id, victim.cmd.Process.Pid)
	victim.kill(t)
	for _, n := range c.nodes {
		if n == victim {
			continue
		}
		c.eventually(t, "get foo through "+n.id+" while "+victim.id+" is down", func() error {
			return c.expect(cli, n, "bar", "-c", "get", "foo")
		})
	}
	survivor := c.nodes[0]
	if survivor == victim {
		survivor = c.nodes[1]
	}
	c.eventually(t, "set foo2 through "+survivor.id+" while "+victim.id+" is down", func() error {
		return c.expect(cli, survivor, "OK", "-c", "set", "foo2", "baz")
	})
	victim.start(t)
	c.waitOK(t)
	for _, n := range c.nodes {
		c.eventually(t, "get foo through "+n.id+" after restart", func() error {
			if err := c.expect(cli, n, "bar", "-c", "get", "foo"); err != nil {
				return err
			}
			return c.expect(cli, n, "baz", "-c", "get", "foo2")
		})
	}
	checkSlotsCoverage(t, c.clusterSlots(t, cli, victim), c)
}

// lookRedisCLI finds redis-cli; without it the test is skipped, except in CI
// (CI=true) where a missing tool is a failure.
func lookRedisCLI(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("redis-cli")
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("redis-cli not found in CI (install redis-tools; `make test` does): %v", err)
	}
	t.Skip("redis-cli not found: install redis-tools (or run `make test`) to run the end-to-end test")
	return ""
}

// buildSlotraft compiles this command into the test's temp dir.
func buildSlotraft(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "slotraft")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// -buildvcs=auto: record the commit (slotraft version) even where
	// GOFLAGS turns it off, as on the machines here.
	cmd := exec.CommandContext(ctx, "go", "build", "-buildvcs=auto", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// testNode is one `slotraft server` process of the test cluster.
type testNode struct {
	id, client, bus, logPath string
	http                     string            // --http, "" if none
	listen                   map[string]string // extra listeners' addresses by flag (startTestClusterListening)
	bin                      string
	args                     []string
	env                      []string // added to the test's environment
	cmd                      *exec.Cmd
	done                     chan struct{}
}

type testCluster struct {
	bin   string
	nodes []*testNode
}

// startTestCluster starts n server processes on free loopback ports.
func startTestCluster(t *testing.T, bin string, n int) *testCluster {
	return startTestClusterWith(t, bin, n, false)
}

// startTestClusterWith is startTestCluster; with withHTTP each node also
// serves operators' HTTP (--http) on a free port of its own.
func startTestClusterWith(t *testing.T, bin string, n int, withHTTP bool) *testCluster {
	t.Helper()
	if withHTTP {
		return startTestClusterListening(t, bin, n, "--http")
	}
	return startTestClusterListening(t, bin, n)
}

// startTestClusterListening is startTestCluster where each node also
// listens on a free port of its own for each of flags (--http,
// --proxy-bind…), found in its listen map by flag.
func startTestClusterListening(t *testing.T, bin string, n int, flags ...string) *testCluster {
	t.Helper()
	per := 2 + len(flags)
	ports := testports.Free(t, per*n)
	dir := t.TempDir()
	c := &testCluster{bin: bin}
	var peers []string
	for i := range n {
		node := &testNode{
			id:     "node" + strconv.Itoa(i+1),
			client: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[per*i])),
			bus:    net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[per*i+1])),
			listen: map[string]string{},
		}
		for j, flag := range flags {
			node.listen[flag] = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[per*i+2+j]))
		}
		node.http = node.listen["--http"]
		node.logPath = filepath.Join(dir, node.id+".log")
		peers = append(peers, node.id+"="+node.client+"@"+node.bus)
		c.nodes = append(c.nodes, node)
	}
	for _, node := range c.nodes {
		node.args = []string{"server", "--id", node.id, "--bind", node.client, "--bus-bind", node.bus,
			"--peers", strings.Join(peers, ","), "--data-dir", filepath.Join(dir, node.id), "--log-level", "debug"}
		for _, flag := range flags {
			node.args = append(node.args, flag, node.listen[flag])
		}
	}
	t.Cleanup(func() { c.stop(t) })
	for _, node := range c.nodes {
		node.bin = bin
		node.start(t)
	}
	return c
}

// start launches the node (again) with its output appended to its log.
// processNode is node i ("node<i+1>") of an end-to-end test, its log in
// dir; the caller sets its arguments. Its ports are taken now, just before
// it starts: one reserved a minute earlier may have been handed out
// meanwhile (an outgoing connection's port), and the node could not bind it.
func processNode(t *testing.T, bin, dir string, i int) *testNode {
	ports := testports.Free(t, 2)
	return processNodeOn(bin, dir, i, ports[0], ports[1])
}

// processNodeOn is processNode on given client and bus ports (nodes
// started together take theirs from one freePorts call: a port handed out
// earlier may not be bound yet by the process that got it).
func processNodeOn(bin, dir string, i, client, bus int) *testNode {
	n := &testNode{
		id:     "node" + strconv.Itoa(i+1),
		client: net.JoinHostPort("127.0.0.1", strconv.Itoa(client)),
		bus:    net.JoinHostPort("127.0.0.1", strconv.Itoa(bus)),
		bin:    bin,
	}
	n.logPath = filepath.Join(dir, n.id+".log")
	return n
}

func (n *testNode) start(t *testing.T) {
	t.Helper()
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(n.bin, n.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if len(n.env) > 0 {
		cmd.Env = append(os.Environ(), n.env...)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", n.id, err)
	}
	n.cmd, n.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(n.done) }()
}

// startUntilCleanup starts cmd (a helper process: redis-server,
// prometheus) and kills it, by its pid, when the test ends; done is
// closed when it has exited.
func startUntilCleanup(t *testing.T, cmd *exec.Cmd, name string) (done <-chan struct{}) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	return exited
}

// kill sends SIGKILL and waits for the process to be gone.
func (n *testNode) kill(t *testing.T) {
	t.Helper()
	if err := n.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill %s: %v", n.id, err)
	}
	<-n.done
}

// stop ends every node still running (SIGTERM, then SIGKILL) by pid and,
// when the test failed, prints the end of each node's log.
func (c *testCluster) stop(t *testing.T) {
	for _, n := range c.nodes {
		if n.cmd == nil {
			continue
		}
		select {
		case <-n.done:
			continue
		default:
		}
		_ = n.cmd.Process.Signal(os.Interrupt)
		select {
		case <-n.done:
			if code := n.cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("%s exited with status %d after SIGINT, want 0", n.id, code)
			}
			if line := errorWhileStopping(n.logPath); line != "" {
				t.Errorf("%s logged an error while it stopped: %s", n.id, line)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("%s did not stop within 15s of SIGINT; killing it", n.id)
			_ = n.cmd.Process.Kill()
			<-n.done
		}
	}
	if t.Failed() {
		for _, n := range c.nodes {
			t.Logf("last lines of %s:\n%s", n.logPath, tail(n.logPath, 40))
		}
	}
}

// errorWhileStopping is the first ERROR line a node logged after the
// signal that stopped it: a clean stop logs none (issue #18).
func errorWhileStopping(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	stopping := false
	for _, line := range strings.Split(string(b), "\n") {
		stopping = stopping || strings.Contains(line, "signal received, shutting down")
		if stopping && strings.Contains(line, "level=ERROR") {
			return line
		}
	}
	return ""
}

func tail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

func (c *testCluster) waitOK(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
	defer cancel()
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.client
	}
	if err := probe.WaitClusterOK(ctx, addrs); err != nil {
		t.Fatal(err)
	}
}

// eventually retries fn until it succeeds or e2eDeadline passes.
func (c *testCluster) eventually(t *testing.T, what string, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(e2eDeadline)
	for tries := 1; ; tries++ {
		err := fn()
		if err == nil {
			if tries > 1 {
				t.Logf("%s: ok after %d tries", what, tries)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %v: %v", what, e2eDeadline, err)
		}
		time.Sleep(250 * time.Millisecond) // poll interval, not a wait for propagation
	}
}

// redisCLI runs redis-cli against node with a timeout and returns its output.
func redisCLI(cli string, n *testNode, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	host, port, _ := net.SplitHostPort(n.client)
	full := append([]string{"-h", host, "-p", port}, args...)
	out, err := exec.CommandContext(ctx, cli, full...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("redis-cli %s: %w: %s", strings.Join(full, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// expect runs redis-cli and wants exactly want as its output.
func (c *testCluster) expect(cli string, n *testNode, want string, args ...string) error {
	got, err := redisCLI(cli, n, args...)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("redis-cli -p %s %s = %q, want %q", n.client, strings.Join(args, " "), got, want)
	}
	return nil
}

// slotEntry is one CLUSTER SLOTS entry: a range and its nodes, master first.
type slotEntry struct {
	start, end int
	ports      []int // master, then replicas
}

// clusterSlots reads CLUSTER SLOTS through redis-cli's JSON output.
func (c *testCluster) clusterSlots(t *testing.T, cli string, n *testNode) []slotEntry {
	t.Helper()
	out, err := redisCLI(cli, n, "-2", "--json", "cluster", "slots")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := parseClusterSlotsJSON(out)
	if err != nil {
		t.Fatalf("CLUSTER SLOTS from %s: %v\n%s", n.id, err, out)
	}
	return entries
}

func parseClusterSlotsJSON(out string) ([]slotEntry, error) {
	var raw [][]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		return nil, err
	}
	var entries []slotEntry
	for _, r := range raw {
		if len(r) < 3 {
			return nil, fmt.Errorf("entry %v: want start, end and a master", r)
		}
		s, ok1 := r[0].(float64)
		e, ok2 := r[1].(float64)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("entry %v: bad range", r)
		}
		entry := slotEntry{start: int(s), end: int(e)}
		for _, nd := range r[2:] {
			fields, ok := nd.([]any)
			if !ok || len(fields) < 3 {
				return nil, fmt.Errorf("entry %v: bad node %v", r, nd)
			}
			p, ok := fields[1].(float64)
			if !ok {
				return nil, fmt.Errorf("entry %v: bad port %v", r, fields[1])
			}
			entry.ports = append(entry.ports, int(p))
		}
		entries = append(entries, entry)
	}
	return entries, nil
}

// checkSlotsCoverage wants all 16384 slots covered exactly once by 3 ranges,
// each with a master and 2 replicas on 3 distinct nodes of the cluster.
func checkSlotsCoverage(t *testing.T, entries []slotEntry, c *testCluster) {
	t.Helper()
	if len(entries) != 3 {
		t.Fatalf("CLUSTER SLOTS has %d entries, want 3: %+v", len(entries), entries)
	}
	slices.SortFunc(entries, func(a, b slotEntry) int { return a.start - b.start })
	next := 0
	for _, e := range entries {
		if e.start != next || e.end < e.start {
			t.Fatalf("CLUSTER SLOTS ranges are not contiguous at slot %d: %+v", next, entries)
		}
		next = e.end + 1
		if len(e.ports) != 3 {
			t.Fatalf("range %d-%d has %d nodes, want a master and 2 replicas: %+v", e.start, e.end, len(e.ports), e)
		}
		seen := map[int]bool{}
		for _, p := range e.ports {
			c.nodeByPort(t, p)
			seen[p] = true
		}
		if len(seen) != 3 {
			t.Fatalf("range %d-%d lists a node twice: %+v", e.start, e.end, e)
		}
	}
	if next != 16384 {
		t.Fatalf("CLUSTER SLOTS covers slots 0-%d, want 0-16383", next-1)
	}
}

func masterOf(t *testing.T, entries []slotEntry, slot int) int {
	t.Helper()
	for _, e := range entries {
		if e.start <= slot && slot <= e.end {
			return e.ports[0]
		}
	}
	t.Fatalf("no CLUSTER SLOTS entry covers slot %d", slot)
	return 0
}

func (c *testCluster) nodeByPort(t *testing.T, port int) *testNode {
	t.Helper()
	for _, n := range c.nodes {
		if _, p, _ := net.SplitHostPort(n.client); p == strconv.Itoa(port) {
			return n
		}
	}
	t.Fatalf("port %d is not a node of the test cluster", port)
	return nil
}

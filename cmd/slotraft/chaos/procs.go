package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/slotraft/slotraft/cmd/slotraft/internal/probe"
)

// busOffset is the distance between a node's client port and its bus port
// when --base-port is given, as `slotraft server` derives it.
const busOffset = 10000

// stopWait bounds how long a SIGKILLed process may take to be reaped.
const stopWait = 10 * time.Second

// node is one `slotraft server` process of the run, restarted on its data
// dir as often as the faults want.
type node struct {
	idx     int
	id      string // node1, node2, …
	ip      string // 127.0.0.(idx+2): packet filters match it
	client  string
	bus     string
	http    string // --http (chaos run --ui), "" without
	dataDir string
	logPath string
	argv    []string

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{} // closed when cmd exited
	paused   bool
	expected bool // the next exit is ours (SIGKILL, a drain), not a crash
	external bool // a seed of --target: not ours to start or stop
	life     life
}

// life is where a node is in the cluster's membership.
type life int

const (
	spare  life = iota // planned, never started: a fresh id for a join
	member             // in the cluster: running or down, restarted at heal
	gone               // removed from the cluster: never started again
)

// procs is the run's set of nodes.
type procs struct {
	nodes []*node
	crash func(n *node, err error) // an exit nobody asked for
}

// planNodes lays out the nodes: addresses, ports, data dirs, command
// lines. The first o.Nodes start the cluster; the spares after them get a
// command line when they join (joinArgv).
func planNodes(o *Options, binary, dir string, spares int) ([]*node, error) {
	nodes := make([]*node, o.Nodes+spares)
	peers := make([]string, o.Nodes)
	for i := range nodes {
		n := &node{idx: i, id: "node" + strconv.Itoa(i+1), ip: "127.0.0." + strconv.Itoa(i+2)}
		cp, bp, err := pickPorts(n.ip, o.BasePort)
		if err != nil {
			return nil, err
		}
		n.client = net.JoinHostPort(n.ip, strconv.Itoa(cp))
		n.bus = net.JoinHostPort(n.ip, strconv.Itoa(bp))
		if o.UI != "" { // the dashboard shows what the nodes' HTTP ports report
			hp, err := pickPort(n.ip)
			if err != nil {
				return nil, err
			}
			n.http = net.JoinHostPort(n.ip, strconv.Itoa(hp))
		}
		n.dataDir = filepath.Join(dir, n.id)
		n.logPath = filepath.Join(dir, n.id+".log")
		nodes[i] = n
		if i < o.Nodes {
			peers[i] = n.id + "=" + n.client + "@" + n.bus
			n.life = member
		}
	}
	for _, n := range nodes {
		n.argv = []string{binary, "server", "--id", n.id,
			"--bind", n.client, "--bus-bind", n.bus, "--data-dir", n.dataDir,
			"--groups", strconv.Itoa(o.Groups), "--replicas", strconv.Itoa(o.Replicas),
			"--groups-per-node", "0", "--log-level", o.LogLevel,
		}
		if n.life == member {
			n.argv = append(n.argv, "--peers", strings.Join(peers, ","))
		}
		if n.http != "" {
			n.argv = append(n.argv, "--http", n.http)
		}
	}
	return nodes, nil
}

// join starts spare n as a new member that joins through the bus
// addresses of seeds; restarts keep that command line (its data dir then
// holds its state, so it does not join again).
func (p *procs) join(n *node, seeds []*node) error {
	bus := make([]string, len(seeds))
	for i, s := range seeds {
		bus[i] = s.bus
	}
	n.mu.Lock()
	if n.life != spare {
		n.mu.Unlock()
		return fmt.Errorf("%s is not a spare", n.id)
	}
	n.argv = append(n.argv, "--advertise", n.client, "--bus-advertise", n.bus, "--join", strings.Join(bus, ","))
	n.life = member
	n.mu.Unlock()
	return p.start(n)
}

// lifeOf is n's place in the membership.
func (n *node) lifeOf() life {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.life
}

// retire marks n removed from the cluster: it is never started again,
// and its next exit (a drained node stops by itself) is no crash.
func (n *node) retire() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.life, n.expected = gone, true
}

// unretire undoes retire when the removal was not made.
func (n *node) unretire() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.life, n.expected = member, false
}

// exited is closed once n's current process is reaped (at once if none).
func (n *node) exited() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return n.done
}

// sparesFor is how many spare node slots plan needs: a membership fault
// starts at most one new node, and node i binds 127.0.0.(i+2).
func sparesFor(plan []step, nodes int) int {
	n := 0
	for _, s := range plan {
		if s.Kind == "membership" {
			n++
		}
	}
	return min(n, 253-nodes)
}

// members are the nodes in the cluster (running or not), in index order.
func (p *procs) members() []*node {
	var out []*node
	for _, n := range p.nodes {
		if n.lifeOf() == member {
			out = append(out, n)
		}
	}
	return out
}

// live are the members that run and are not stopped.
func (p *procs) live() []*node {
	return slices.DeleteFunc(p.members(), func(n *node) bool { return !n.running() })
}

// nextSpare is the spare with the lowest index, nil when none is left.
func (p *procs) nextSpare() *node {
	for _, n := range p.nodes {
		if n.lifeOf() == spare {
			return n
		}
	}
	return nil
}

// pickPorts returns the client and bus port of the node on ip: base and
// base+busOffset, or two ports the system hands out as free.
func pickPorts(ip string, base int) (client, bus int, err error) {
	if base > 0 {
		return base, base + busOffset, nil
	}
	var ports [2]int
	for i := range ports {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			return 0, 0, fmt.Errorf("listen on %s (is 127.0.0.0/8 routed to lo?): %w", ip, err)
		}
		defer ln.Close() // both stay open until both are picked, so they differ
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return ports[0], ports[1], nil
}

// pickPort is a port the system hands out as free on ip.
func pickPort(ip string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("listen on %s (is 127.0.0.0/8 routed to lo?): %w", ip, err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// checkFree fails when a node's client or bus address is taken.
func checkFree(nodes []*node) error {
	for _, n := range nodes {
		for _, addr := range []string{n.client, n.bus, n.http} {
			if addr == "" {
				continue
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("%s: address %s is not free: %w", n.id, addr, err)
			}
			ln.Close()
		}
	}
	return nil
}

// start launches n on its data dir, its output appended to its log.
func (p *procs) start(n *node) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return fmt.Errorf("%s is running already (pid %d)", n.id, n.cmd.Process.Pid)
	}
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open %s log: %w", n.id, err)
	}
	defer logf.Close()
	cmd := exec.Command(n.argv[0], n.argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", n.id, err)
	}
	n.cmd, n.done, n.paused, n.expected = cmd, make(chan struct{}), false, false
	go p.reap(n, cmd, n.done)
	return nil
}

// reap waits for cmd and reports an exit nobody asked for.
func (p *procs) reap(n *node, cmd *exec.Cmd, done chan struct{}) {
	err := cmd.Wait()
	n.mu.Lock()
	expected := n.expected
	if n.cmd == cmd {
		n.cmd, n.paused = nil, false
	}
	n.mu.Unlock()
	close(done)
	if !expected && p.crash != nil {
		p.crash(n, err)
	}
}

// pid is n's process id, 0 when it is not running.
func (n *node) pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// running reports whether n's process runs and is not stopped.
func (n *node) running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return (n.cmd != nil || n.external) && !n.paused
}

// kill sends SIGKILL to n (also when it is stopped) and waits until it is
// reaped, so that its ports are free for a restart.
func (n *node) kill() error {
	done, err := n.sendKill()
	if err != nil {
		return err
	}
	return n.awaitExit(done)
}

// sendKill sends SIGKILL; done is closed once n is reaped (nil if n was
// not running).
func (n *node) sendKill() (<-chan struct{}, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return nil, nil
	}
	n.expected = true
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return n.done, fmt.Errorf("kill -9 %s (pid %d): %w", n.id, n.cmd.Process.Pid, err)
	}
	return n.done, nil
}

// awaitExit waits for done, up to stopWait.
func (n *node) awaitExit(done <-chan struct{}) error {
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-time.After(stopWait):
		return fmt.Errorf("%s not reaped %v after SIGKILL", n.id, stopWait)
	}
}

// signalStop sends SIGSTOP (pause) or SIGCONT (resume) to n.
func (n *node) signalStop(stop bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return fmt.Errorf("%s is not running", n.id)
	}
	sig := syscall.SIGCONT
	if stop {
		sig = syscall.SIGSTOP
	}
	if err := n.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%v to %s (pid %d): %w", sig, n.id, n.cmd.Process.Pid, err)
	}
	n.paused = stop
	return nil
}

// killAll sends SIGKILL to every node at once (stopped ones too), then
// waits until each is reaped. It returns the first error; it tries every
// node.
func (p *procs) killAll() error {
	var first error
	dones := make([]<-chan struct{}, len(p.nodes))
	for i, n := range p.nodes {
		var err error
		if dones[i], err = n.sendKill(); err != nil && first == nil {
			first = err
		}
	}
	for i, n := range p.nodes {
		if err := n.awaitExit(dones[i]); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// restore brings every member back: resumes the stopped ones and starts
// the ones that are not running.
func (p *procs) restore() error {
	for _, n := range p.members() {
		n.mu.Lock()
		cmd, paused := n.cmd, n.paused
		n.mu.Unlock()
		switch {
		case n.external:
		case cmd == nil:
			if err := p.start(n); err != nil {
				return err
			}
		case paused:
			if err := n.signalStop(false); err != nil {
				return err
			}
		}
	}
	return nil
}

// clientAddrs are the members' client addresses.
func (p *procs) clientAddrs() []string {
	ms := p.members()
	addrs := make([]string, len(ms))
	for i, n := range ms {
		addrs[i] = n.client
	}
	return addrs
}

// waitOK waits until every member reports cluster_state:ok.
func (p *procs) waitOK(ctx context.Context, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := probe.WaitClusterOK(ctx, p.clientAddrs()); err != nil {
		return fmt.Errorf("cluster not ok within %v: %w", wait, err)
	}
	return nil
}

// logTail is the last lines of n's log, for a crash report.
func (n *node) logTail(lines int) string {
	b, err := os.ReadFile(n.logPath)
	if err != nil {
		return ""
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

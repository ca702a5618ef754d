package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/slotraft/slotraft/cmd/slotraft/internal/probe"
)

// devStopGrace is how long `slotraft dev` waits for its nodes after
// forwarding a signal before it kills them.
const devStopGrace = 20 * time.Second

// devFlags holds `slotraft dev`'s flags.
type devFlags struct {
	dataDir   string
	host      string
	basePort  int
	nodes     int
	groups    int
	replicas  int
	logStore  string
	logLevel  string
	logFormat string
	wait      time.Duration
	pprofPort int
	httpPort  int
	proxyPort int
	secret    string // --cluster-secret-file for every node
	sentinel  int    // node N's Sentinel facade port is sentinel+N-1; 0: none
	chaosUI   bool   // --chaos-ui (dev_chaosui.go)
}

func newDevFlagSet(out io.Writer) (*flag.FlagSet, *devFlags) {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(out)
	f := &devFlags{}
	fs.StringVar(&f.dataDir, "data-dir", filepath.Join("data", "dev"), "parent directory of the nodes' data dirs and logs")
	fs.StringVar(&f.host, "host", "127.0.0.1", "host the nodes bind and advertise")
	fs.IntVar(&f.basePort, "base-port", 7001, "client port of node1; node N uses base-port+N-1, its bus port +10000")
	fs.IntVar(&f.nodes, "nodes", 3, "number of server processes")
	fs.IntVar(&f.groups, "groups", 3, "number of slot groups")
	fs.IntVar(&f.replicas, "replicas", 3, "replicas per slot group")
	fs.StringVar(&f.logStore, "log-store", "pebble", "the nodes' --log-store for new groups: pebble, bolt or wal")
	fs.StringVar(&f.logLevel, "log-level", "info", "the nodes' log level")
	fs.StringVar(&f.logFormat, "log-format", "text", "the nodes' log format: text or json")
	fs.DurationVar(&f.wait, "wait", 60*time.Second, "how long to wait for cluster_state:ok")
	fs.StringVar(&f.secret, "cluster-secret-file", "", "the nodes' --cluster-secret-file: their bus proves this secret and is encrypted (default: none)")
	fs.IntVar(&f.pprofPort, "pprof-base-port", 0, "if set, node N serves Go's profiles (--pprof) on --host:pprof-base-port+N-1")
	fs.IntVar(&f.sentinel, "sentinel-base-port", 26001, "node N serves the Sentinel protocol (--sentinel-bind, master mymaster) on --host:sentinel-base-port+N-1; 0: none")
	fs.IntVar(&f.httpPort, "http-base-port", 9701, "node N serves HTTP for operators (--http: /metrics, /healthz, /readyz, the dashboard /ui/) on --host:http-base-port+N-1; 0: none")
	fs.BoolVar(&f.chaosUI, "chaos-ui", false, "serve the dashboard with buttons that kill, pause, resume, restart and partition the nodes on 127.0.0.1:http-base-port-1 (default data dir data/dev-chaos; partitions need root); off by default")
	fs.IntVar(&f.proxyPort, "proxy-base-port", 6401, "node N serves proxy mode (--proxy-bind: clients that do not speak Redis Cluster) on --host:proxy-base-port+N-1; 0: none")
	fs.Usage = func() {
		fmt.Fprintf(out, "usage: slotraft dev [flags]\n\nStarts a local cluster of separate `slotraft server` processes and stops them on Ctrl-C.\n\nflags:\n")
		fs.PrintDefaults()
	}
	return fs, f
}

// devNode is one child server process.
type devNode struct {
	id      string
	client  string
	bus     string
	logPath string
	http    string   // --http, "" if none
	facade  string   // --sentinel-bind, "" if none
	proxy   string   // --proxy-bind, "" if none
	argv    []string // full command line, argv[0] is the binary
	cmd     *exec.Cmd
	exited  bool
	paused  bool // SIGSTOP from the chaos dashboard
	killing bool // SIGKILL from the chaos dashboard, not reaped yet
}

// devExit reports that a child process ended.
type devExit struct {
	node *devNode
	err  error
}

// runDev implements `slotraft dev`.
func runDev(args []string, stdout, stderr io.Writer) error {
	fs, f := newDevFlagSet(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "slotraft dev: unexpected arguments %q\n", fs.Args())
		return errUsage
	}
	f.chaosUIDefaults(fs)
	nodes, err := f.plan()
	if err != nil {
		return err
	}
	chaos, err := f.setupChaosUI(context.Background(), nodes)
	if err != nil {
		return err
	}
	defer chaos.close(stderr)
	if err := checkPortsFree(nodes); err != nil {
		return err
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	exits := make(chan devExit, len(nodes))
	for _, n := range nodes {
		if err := n.start(exits); err != nil {
			stopNodes(nodes, exits, syscall.SIGTERM, stderr)
			return err
		}
	}
	if err := waitReady(nodes, f.wait, exits, sigs); err != nil {
		stopNodes(nodes, exits, syscall.SIGTERM, stderr)
		return err
	}
	printBanner(stdout, nodes)
	if chaos != nil {
		if err := chaos.serve(stdout); err != nil {
			stopNodes(nodes, exits, syscall.SIGTERM, stderr)
			return err
		}
	}
	return superviseNodes(nodes, exits, sigs, chaos.requests(), stdout, stderr)
}

// plan computes every node's addresses, data dir and command line.
func (f *devFlags) plan() ([]*devNode, error) {
	if f.nodes < 1 {
		return nil, fmt.Errorf("--nodes %d: want at least 1", f.nodes)
	}
	if f.basePort < 1 || f.basePort+f.nodes-1+busPortOffset > 65535 {
		return nil, fmt.Errorf("--base-port %d: node ports and bus ports (+%d) must stay below 65536", f.basePort, busPortOffset)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the slotraft binary: %w", err)
	}
	dir, err := filepath.Abs(f.dataDir)
	if err != nil {
		return nil, fmt.Errorf("--data-dir %q: %w", f.dataDir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	nodes := make([]*devNode, f.nodes)
	peers := make([]string, f.nodes)
	for i := range nodes {
		id := "node" + strconv.Itoa(i+1)
		client := hostPort(f.host, f.basePort+i)
		nodes[i] = &devNode{
			id: id, client: client, bus: hostPort(f.host, f.basePort+i+busPortOffset),
			logPath: filepath.Join(dir, id+".log"),
		}
		peers[i] = id + "=" + client
	}
	for _, n := range nodes {
		n.argv = []string{exe, "server",
			"--id", n.id, "--bind", n.client, "--peers", strings.Join(peers, ","),
			"--data-dir", filepath.Join(dir, n.id),
			"--groups", strconv.Itoa(f.groups), "--replicas", strconv.Itoa(f.replicas),
			"--log-level", f.logLevel, "--log-format", f.logFormat,
		}
		if f.logStore != "" { // unset (bench reshard's plan): the server's default
			n.argv = append(n.argv, "--log-store", f.logStore)
		}
		if f.secret != "" {
			n.argv = append(n.argv, "--cluster-secret-file", f.secret)
		}
	}
	if f.pprofPort > 0 {
		for i, n := range nodes {
			n.argv = append(n.argv, "--pprof", hostPort(f.host, f.pprofPort+i))
		}
	}
	if f.httpPort > 0 {
		for i, n := range nodes {
			n.http = hostPort(f.host, f.httpPort+i)
			n.argv = append(n.argv, "--http", n.http)
		}
	}
	if f.sentinel > 0 {
		for i, n := range nodes {
			n.facade = hostPort(f.host, f.sentinel+i)
			n.argv = append(n.argv, "--sentinel-bind", n.facade)
		}
	}
	if f.proxyPort > 0 {
		for i, n := range nodes {
			n.proxy = hostPort(f.host, f.proxyPort+i)
			n.argv = append(n.argv, "--proxy-bind", n.proxy)
		}
	}
	return nodes, nil
}

// checkPortsFree fails early, with a clear message, when a node's client or
// bus port is taken (for example by another `make run`).
func checkPortsFree(nodes []*devNode) error {
	for _, n := range nodes {
		for _, addr := range []string{n.client, n.bus, n.http, n.facade, n.proxy} {
			if addr == "" {
				continue
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("%s: port %s is not free (is another slotraft running? see --base-port, --http-base-port, --sentinel-base-port, --proxy-base-port): %w", n.id, addr, err)
			}
			ln.Close()
		}
	}
	return nil
}

func hostPort(host string, port int) string { return host + ":" + strconv.Itoa(port) }

// start launches the node with its output appended to its log file.
func (n *devNode) start(exits chan<- devExit) error {
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open %s log: %w", n.id, err)
	}
	defer logf.Close()
	cmd := exec.Command(n.argv[0], n.argv[1:]...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", n.id, err)
	}
	n.cmd = cmd
	go func() { exits <- devExit{node: n, err: cmd.Wait()} }()
	return nil
}

// waitReady polls the nodes until each reports cluster_state:ok; a node that
// exits or a signal aborts the wait.
func waitReady(nodes []*devNode, wait time.Duration, exits <-chan devExit, sigs <-chan os.Signal) error {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.client
	}
	ready := make(chan error, 1)
	go func() { ready <- probe.WaitClusterOK(ctx, addrs) }()
	select {
	case err := <-ready:
		if err != nil {
			return fmt.Errorf("%w; see the logs in %s", err, filepath.Dir(nodes[0].logPath))
		}
		// The ports might answer for another cluster while ours died (port in use).
		select {
		case e := <-exits:
			e.node.exited = true
			return fmt.Errorf("%s exited during startup (%v); see %s", e.node.id, e.err, e.node.logPath)
		default:
			return nil
		}
	case e := <-exits:
		e.node.exited = true
		return fmt.Errorf("%s exited during startup (%v); see %s", e.node.id, e.err, e.node.logPath)
	case s := <-sigs:
		return fmt.Errorf("interrupted by %v during startup", s)
	}
}

// printBanner tells how to connect, and how to kill and restart a node.
func printBanner(w io.Writer, nodes []*devNode) {
	first, last := nodes[0], nodes[len(nodes)-1]
	fmt.Fprintf(w, "\nslotraft dev: %d nodes up, cluster_state:ok\n\n", len(nodes))
	fmt.Fprintf(w, "  connect:  redis-cli -c -p %s\n", port(first.client))
	fmt.Fprintf(w, "  try:      redis-cli -c -p %s set foo bar; redis-cli -c -p %s get foo\n\n", port(first.client), port(last.client))
	for _, n := range nodes {
		fmt.Fprintf(w, "  %-6s pid %-7d client %-16s bus %-16s log %s\n", n.id, n.cmd.Process.Pid, n.client, n.bus, n.logPath)
	}
	if first.http != "" {
		fmt.Fprintf(w, "\n  metrics:  curl http://%s/metrics   (node N on port %s+N-1; also /healthz, /readyz)\n", first.http, port(first.http))
		fmt.Fprintf(w, "  dashboard: http://%s/ui/   (every node serves one)\n", first.http)
	}
	if first.facade != "" {
		if first.http == "" {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "  sentinel: redis-cli -p %s sentinel get-master-addr-by-name mymaster   (node N on port %s+N-1)\n", port(first.facade), port(first.facade))
	}
	if first.proxy != "" {
		if first.http == "" && first.facade == "" {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "  proxy:    redis-cli -p %s   (no -c: any client, as to one Redis; node N on port %s+N-1)\n", port(first.proxy), port(first.proxy))
	}
	fmt.Fprintf(w, "\nKill a node with `kill -9 <pid>`; restart it on its data dir with:\n")
	for _, n := range nodes {
		fmt.Fprintf(w, "  %s >> %s 2>&1 &\n", shellJoin(n.argv), shellQuote(n.logPath))
	}
	fmt.Fprintf(w, "\nCtrl-C stops the nodes started here (a node restarted by hand is not a child: stop it with kill).\n")
}

func port(addr string) string {
	_, p, _ := strings.Cut(addr, ":")
	return p
}

// superviseNodes reports nodes that exit, carries out the chaos
// dashboard's requests (ctl, nil without --chaos-ui) and, on SIGINT or
// SIGTERM, forwards the signal to the nodes and waits for them.
func superviseNodes(nodes []*devNode, exits chan devExit, sigs <-chan os.Signal, ctl <-chan devReq, stdout, stderr io.Writer) error {
	for {
		select {
		case r := <-ctl:
			serveChaos(r, nodes, exits)
		case e := <-exits:
			e.node.exited, e.node.paused = true, false
			if e.node.killing {
				e.node.killing = false
				fmt.Fprintf(stderr, "slotraft dev: %s (pid %d) killed from the chaos dashboard\n", e.node.id, e.node.cmd.Process.Pid)
				continue
			}
			fmt.Fprintf(stderr, "slotraft dev: %s (pid %d) exited: %v; restart it with:\n  %s >> %s 2>&1 &\n",
				e.node.id, e.node.cmd.Process.Pid, exitText(e.err), shellJoin(e.node.argv), shellQuote(e.node.logPath))
		case s := <-sigs:
			fmt.Fprintf(stdout, "\nslotraft dev: %v received, stopping the nodes\n", s)
			if err := stopNodes(nodes, exits, s, stderr); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "slotraft dev: all nodes stopped\n")
			return nil
		}
	}
}

// stopNodes sends sig to every running node, waits up to devStopGrace for
// them to exit, then kills the rest. It fails if a node had to be killed or
// exited with an error.
func stopNodes(nodes []*devNode, exits <-chan devExit, sig os.Signal, stderr io.Writer) error {
	running := 0
	for _, n := range nodes {
		if n.cmd == nil || n.exited {
			continue
		}
		if err := n.cmd.Process.Signal(sig); err != nil {
			fmt.Fprintf(stderr, "slotraft dev: signal %s: %v\n", n.id, err)
		}
		if n.paused { // stopped from the chaos dashboard: let it take the signal
			_ = n.cmd.Process.Signal(syscall.SIGCONT)
		}
		running++
	}
	var failed []string
	timeout := time.After(devStopGrace)
	for running > 0 {
		select {
		case e := <-exits:
			e.node.exited = true
			running--
			if e.err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", e.node.id, e.err))
			}
		case <-timeout:
			for _, n := range nodes {
				if n.cmd != nil && !n.exited {
					failed = append(failed, n.id+": killed after "+devStopGrace.String())
					_ = n.cmd.Process.Kill()
				}
			}
			timeout = nil
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("nodes did not stop cleanly: %s", strings.Join(failed, "; "))
	}
	return nil
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// shellJoin renders argv as a command line a POSIX shell reads back as argv.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

func shellQuote(s string) string {
	safe := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,@+", r)
	}
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool { return !safe(r) }) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/slotraft/slotraft/cmd/slotraft/internal/chaosui"
	"github.com/slotraft/slotraft/cmd/slotraft/internal/nft"
)

// `slotraft dev --chaos-ui`: dev serves the dashboard itself, with
// buttons that kill (-9), pause, resume and restart its nodes and
// partition them, on --host:(http-base-port - 1) (127.0.0.1:9700 by
// default). The supervise loop (superviseNodes) owns the processes: the
// page's actions reach it over a channel and are carried out there, one
// at a time. Partitions cut the bus between nodes with nftables, so each
// node's bus is on its own loopback address 127.0.0.(N+1) (clients and
// HTTP stay on --host); they need root, else the page says why not.
// docs/chaos.md.

// devChaosDataDir is --chaos-ui's default --data-dir: its nodes' bus
// addresses differ from a plain `slotraft dev`'s, which a cluster map on
// disk remembers.
var devChaosDataDir = filepath.Join("data", "dev-chaos")

// devChaosWait bounds how long a question to the supervise loop waits.
const devChaosWait = 10 * time.Second

// devChaos is dev's chaosui.Controller.
type devChaos struct {
	reqs     chan devReq
	done     chan struct{} // closed when the supervise loop returns
	nodes    []devNodeInfo // fixed once planned
	table    *nft.Table    // nil: no partitions (reason says why)
	reason   string
	uiAddr   string
	mu       sync.Mutex
	cut      string
	stopHTTP func()
}

// devNodeInfo is what the controller knows of a node outside the loop.
type devNodeInfo struct {
	id, client, http, busIP string
}

// devReq is an action or (zero action) a question for the state, carried
// out by the supervise loop.
type devReq struct {
	a     chaosui.Action
	reply chan devReply
}

type devReply struct {
	procs []chaosui.Proc
	text  string
	err   error
}

// setupChaosUI prepares --chaos-ui: the chaos dashboard's address, each
// node's bus on its own loopback address, the nftables table. It returns
// nil without --chaos-ui.
func (f *devFlags) setupChaosUI(ctx context.Context, nodes []*devNode) (*devChaos, error) {
	if !f.chaosUI {
		return nil, nil
	}
	if f.httpPort < 2 {
		return nil, errors.New("--chaos-ui needs --http-base-port: the page shows what the nodes' HTTP ports report")
	}
	dc := &devChaos{reqs: make(chan devReq), done: make(chan struct{}), uiAddr: hostPort("127.0.0.1", f.httpPort-1)}
	// Distinct loopback addresses need Linux's routing of 127.0.0.0/8
	// (and nftables).
	distinct := runtime.GOOS == "linux" && isLoopbackHost(f.host) && len(nodes) <= 250
	for i, n := range nodes {
		info := devNodeInfo{id: n.id, client: n.client, http: n.http}
		if distinct {
			info.busIP = "127.0.0." + strconv.Itoa(i+2)
		}
		dc.nodes = append(dc.nodes, info)
	}
	if !distinct {
		dc.reason = fmt.Sprintf("the nodes share the address %s; partitions cut the bus between distinct loopback addresses (Linux, --host 127.0.0.1)", f.host)
		return dc, nil
	}
	placeBusForPartitions(nodes, dc.nodes)
	t, err := nft.New(ctx)
	if err != nil {
		dc.reason = err.Error()
		return dc, nil
	}
	dc.table = t
	return dc, nil
}

// chaosUIDefaults makes data/dev-chaos the data dir of --chaos-ui unless
// --data-dir was given.
func (f *devFlags) chaosUIDefaults(fs *flag.FlagSet) {
	given := false
	fs.Visit(func(fl *flag.Flag) { given = given || fl.Name == "data-dir" })
	if f.chaosUI && !given {
		f.dataDir = devChaosDataDir
	}
}

// placeBusForPartitions moves each node's bus to its own loopback address
// (same port), in its --bus-bind and in every node's --peers.
func placeBusForPartitions(nodes []*devNode, infos []devNodeInfo) {
	peers := make([]string, len(nodes))
	for i, n := range nodes {
		_, port, _ := net.SplitHostPort(n.bus)
		n.bus = net.JoinHostPort(infos[i].busIP, port)
		peers[i] = n.id + "=" + n.client + "@" + n.bus
	}
	for _, n := range nodes {
		if i := slices.Index(n.argv, "--peers"); i >= 0 {
			n.argv[i+1] = strings.Join(peers, ",")
		}
		n.argv = append(n.argv, "--bus-bind", n.bus)
	}
}

func isLoopbackHost(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// serve starts the chaos dashboard; it prints its URL.
func (dc *devChaos) serve(stdout io.Writer) error {
	url, stop, err := chaosui.Serve(dc.uiAddr, chaosui.New(dc).Handler(), slog.Default())
	if err != nil {
		return err
	}
	dc.stopHTTP = stop
	fmt.Fprintf(stdout, "\n  chaos:    %s   (kill -9, pause, resume, restart, partition the nodes from the page)\n", url)
	if dc.table == nil {
		fmt.Fprintf(stdout, "            partitions unavailable: %s\n", dc.reason)
	}
	return nil
}

// requests is the channel the supervise loop serves (nil without
// --chaos-ui: a nil channel is never ready).
func (dc *devChaos) requests() <-chan devReq {
	if dc == nil {
		return nil
	}
	return dc.reqs
}

// close stops the dashboard and removes the nftables table; the loop
// has returned.
func (dc *devChaos) close(stderr io.Writer) {
	if dc == nil {
		return
	}
	close(dc.done)
	if dc.stopHTTP != nil {
		dc.stopHTTP()
	}
	if dc.table != nil {
		if err := dc.table.Delete(context.Background()); err != nil {
			fmt.Fprintf(stderr, "slotraft dev: delete nftables table %s: %v\n", dc.table.Name(), err)
		}
	}
}

// ask hands r to the supervise loop and waits for its answer.
func (dc *devChaos) ask(ctx context.Context, a chaosui.Action) devReply {
	r := devReq{a: a, reply: make(chan devReply, 1)}
	ctx, cancel := context.WithTimeout(ctx, devChaosWait)
	defer cancel()
	select {
	case dc.reqs <- r:
	case <-dc.done:
		return devReply{err: fmt.Errorf("%w: slotraft dev is stopping", chaosui.ErrUnavailable)}
	case <-ctx.Done():
		return devReply{err: fmt.Errorf("%w: slotraft dev did not take the request: %w", chaosui.ErrUnavailable, ctx.Err())}
	}
	return <-r.reply
}

// State implements chaosui.Controller.
func (dc *devChaos) State() chaosui.State {
	st := chaosui.State{Mode: chaosui.ModeDev, Partition: chaosui.Partition{Available: dc.table != nil, Reason: dc.reason}}
	dc.mu.Lock()
	st.Partition.Cut = dc.cut
	dc.mu.Unlock()
	st.Nodes = dc.ask(context.Background(), chaosui.Action{}).procs
	return st
}

// Do implements chaosui.Controller.
func (dc *devChaos) Do(ctx context.Context, a chaosui.Action) (string, error) {
	switch a.Action {
	case chaosui.ActPartition:
		return dc.partition(ctx, a.Nodes)
	case chaosui.ActHeal:
		return dc.heal(ctx)
	}
	if !slices.ContainsFunc(dc.nodes, func(n devNodeInfo) bool { return n.id == a.Node }) {
		return "", fmt.Errorf("%w: %q", chaosui.ErrUnknownNode, a.Node)
	}
	r := dc.ask(ctx, a)
	return r.text, r.err
}

// partition cuts the bus between the nodes named and the others.
func (dc *devChaos) partition(ctx context.Context, side []string) (string, error) {
	if dc.table == nil {
		return "", fmt.Errorf("%w: %s", chaosui.ErrUnavailable, dc.reason)
	}
	ids, ip := make([]string, len(dc.nodes)), map[string]string{}
	for i, n := range dc.nodes {
		ids[i], ip[n.id] = n.id, n.busIP
	}
	in, out, err := chaosui.SplitSides(ids, side)
	if err != nil {
		return "", err
	}
	if err := dc.table.Cut(ctx, chaosui.CutPairs(in, out, ip)); err != nil {
		return "", err
	}
	desc := chaosui.SideText(in) + " | " + chaosui.SideText(out)
	dc.mu.Lock()
	dc.cut = desc
	dc.mu.Unlock()
	return "partition " + desc, nil
}

// heal removes every partition rule.
func (dc *devChaos) heal(ctx context.Context) (string, error) {
	if dc.table == nil {
		return "", fmt.Errorf("%w: %s", chaosui.ErrUnavailable, dc.reason)
	}
	dropped, err := dc.table.Heal(ctx)
	if err != nil {
		return "", err
	}
	dc.mu.Lock()
	dc.cut = ""
	dc.mu.Unlock()
	return fmt.Sprintf("healed (%d packets dropped)", dropped), nil
}

// serveChaos carries out r in the supervise loop, which owns the nodes.
func serveChaos(r devReq, nodes []*devNode, exits chan devExit) {
	var rep devReply
	if r.a.Action == "" {
		rep.procs = devProcs(nodes)
	} else {
		rep.text, rep.err = devAct(r.a, nodes, exits)
	}
	r.reply <- rep
}

// devProcess is n's process state.
func devProcess(n *devNode) string {
	switch {
	case n.cmd == nil:
		return chaosui.ProcNotStarted
	case n.exited:
		return chaosui.ProcKilled
	case n.killing:
		return chaosui.ProcExiting
	case n.paused:
		return chaosui.ProcPaused
	}
	return chaosui.ProcRunning
}

func devProcs(nodes []*devNode) []chaosui.Proc {
	out := make([]chaosui.Proc, len(nodes))
	for i, n := range nodes {
		p := devProcess(n)
		out[i] = chaosui.Proc{ID: n.id, Process: p, Client: n.client, HTTP: n.http, Can: chaosui.CanFor(p)}
		if p != chaosui.ProcKilled && n.cmd != nil {
			out[i].PID = n.cmd.Process.Pid
		}
	}
	return out
}

// devAct carries out a process action on its node.
func devAct(a chaosui.Action, nodes []*devNode, exits chan devExit) (string, error) {
	i := slices.IndexFunc(nodes, func(n *devNode) bool { return n.id == a.Node })
	if i < 0 {
		return "", fmt.Errorf("%w: %q", chaosui.ErrUnknownNode, a.Node)
	}
	n := nodes[i]
	state := devProcess(n)
	can := chaosui.CanFor(state)
	if ok := map[string]bool{chaosui.ActKill: can.Kill, chaosui.ActPause: can.Pause,
		chaosui.ActResume: can.Resume, chaosui.ActRestart: can.Restart}[a.Action]; !ok {
		return "", fmt.Errorf("%w: %s is %s, nothing to %s", chaosui.ErrConflict, n.id, state, a.Action)
	}
	pid := n.cmd.Process.Pid
	switch a.Action {
	case chaosui.ActKill:
		if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			return "", fmt.Errorf("kill -9 %s (pid %d): %w", n.id, pid, err)
		}
		n.killing = true
		return fmt.Sprintf("kill -9 %s (pid %d)", n.id, pid), nil
	case chaosui.ActPause, chaosui.ActResume:
		sig, name := syscall.SIGSTOP, "SIGSTOP"
		if a.Action == chaosui.ActResume {
			sig, name = syscall.SIGCONT, "SIGCONT"
		}
		if err := n.cmd.Process.Signal(sig); err != nil {
			return "", fmt.Errorf("%s to %s (pid %d): %w", name, n.id, pid, err)
		}
		n.paused = a.Action == chaosui.ActPause
		return fmt.Sprintf("%s %s (pid %d)", name, n.id, pid), nil
	}
	n.exited, n.killing, n.paused = false, false, false
	if err := n.start(exits); err != nil {
		n.exited = true
		return "", err
	}
	return fmt.Sprintf("restarted %s on its data dir (pid %d)", n.id, n.cmd.Process.Pid), nil
}

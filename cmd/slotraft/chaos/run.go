package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slotraft/slotraft/cmd/slotraft/internal/nft"
	"github.com/slotraft/slotraft/slots"
)

// How long the run waits for the cluster, and for its final reads.
const (
	startWait   = 90 * time.Second
	recoverWait = 120 * time.Second
	finalWait   = 60 * time.Second
	crashLines  = 20 // log lines quoted for a node that exited by itself
)

// errInterrupted: the run was stopped by SIGINT or SIGTERM.
var errInterrupted = errors.New("interrupted")

// errBadInput marks what preflight refused: nothing was started.
var errBadInput = errors.New("nothing started")

// cleaner runs the run's clean-up once, from whichever path gets there
// first: the end of the run, an error, a panic, a second Ctrl-C.
type cleaner struct {
	once sync.Once
	mu   sync.Mutex
	fns  []func()
}

func (c *cleaner) add(fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fns = append(c.fns, fn)
}

// run calls the clean-ups, last added first.
func (c *cleaner) run() {
	c.once.Do(func() {
		c.mu.Lock()
		fns := slices.Clone(c.fns)
		c.mu.Unlock()
		for _, fn := range slices.Backward(fns) {
			fn()
		}
	})
}

// chaosRun is one `chaos run`: its options, nodes and history.
type chaosRun struct {
	o       *Options
	out     io.Writer // progress
	begin   time.Time
	dir     string
	nodes   []*node
	procs   *procs
	topo    *topology
	nft     *nft.Table
	disk    *diskThrottle
	h       *history
	wls     []Workload
	plan    []step
	clean   *cleaner
	mu      sync.Mutex
	crashes []Anomaly
	// acts serialises the nemesis's injections and healings with the
	// dashboard's actions; ui is nil without --ui (ui.go).
	acts sync.Mutex
	ui   *runUI
	live *liveChecker // nil with --live-every 0
}

func (r *chaosRun) say(format string, args ...any) {
	fmt.Fprintf(r.out, "[%7.1fs] %s\n", time.Since(r.begin).Seconds(), fmt.Sprintf(format, args...))
}

// Run carries out a chaos run and returns its summary. Errors mean the run
// could not be carried out (bad environment, a cluster that never started,
// a fault that could not be healed) or was interrupted; anomalies are in
// the summary.
func Run(ctx context.Context, o *Options, progress io.Writer, clean *cleaner) (*Summary, error) {
	r := &chaosRun{o: o, out: progress, begin: time.Now(), clean: clean, h: newHistory()}
	if err := r.preflight(ctx); err != nil {
		return nil, interrupted(ctx, fmt.Errorf("%w (%w)", err, errBadInput))
	}
	r.say("seed %d (--seed %d repeats this schedule and these choices)", o.Seed, o.Seed)
	start := r.startCluster
	if len(o.Target) > 0 {
		start = r.startTarget
	}
	if err := r.serveUI(); err != nil {
		return nil, err
	}
	if err := start(ctx); err != nil {
		return nil, interrupted(ctx, err)
	}
	if err := r.setup(ctx); err != nil {
		return nil, interrupted(ctx, err)
	}
	stopPoll := r.pollLeaders(ctx)
	defer stopPoll()
	lctx, stopLive := context.WithCancel(ctx)
	defer stopLive()
	r.startLive(lctx)
	r.ui.setPhase("faults")
	nemErr := r.runFaultsAndLoad(ctx)
	r.live.workloadsStopped()
	if ctx.Err() != nil {
		return nil, errInterrupted
	}
	r.ui.setPhase("healing")
	r.acts.Lock() // an action from the page that is on its way ends first
	recovered := r.healAll(ctx)
	r.acts.Unlock()
	r.ui.closeAll()
	r.ui.setPhase("final reads")
	finalErr := r.finalReads(ctx)
	if ctx.Err() != nil {
		return nil, errInterrupted
	}
	leaders := stopPoll()
	if len(o.Target) > 0 { // the user's cluster keeps none of the run's keys
		if err := r.deleteKeys(ctx); err != nil {
			r.say("delete the run's keys: %v", err)
		}
	}
	r.stopAll() // every process and rule goes before the checks run
	r.ui.setPhase("checking")
	live := r.live.stop()
	s := r.check(ctx, recovered, finalErr)
	s.Leaders, s.Live = leaders, live
	if nemErr != nil {
		s.Error = nemErr.Error()
		if s.Result != "anomalies" {
			s.Result = "failed"
		}
	}
	if s.Result != "ok" && len(r.o.Target) == 0 {
		// The nodes' logs and the history are what explains a failed run:
		// keep them, as with --keep (make chaos runs without it).
		r.o.Keep = true
	}
	r.keepHistory()
	r.lingerUI(ctx, s)
	return s, nil
}

// interrupted is errInterrupted when ctx ended (a signal), else err.
func interrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return errInterrupted
	}
	return err
}

// preflight refuses, before anything starts, what would make the run fail:
// a platform without the tools, a binary that is not slotraft, addresses
// that are taken, nftables that cannot be used.
func (r *chaosRun) preflight(ctx context.Context) error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("chaos runs need Linux (loopback addresses, signals, nftables), not %s", runtime.GOOS)
	}
	r.plan = makeSchedule(r.o.Seed, r.o.Faults, r.o.Duration)
	if len(r.o.Target) > 0 {
		r.nodes = targetNodes(r.o.Target)
		if err := checkPids(r.o.Pids); err != nil {
			return err
		}
		return r.makeDir()
	}
	bin, err := checkBinary(ctx, r.o.Binary)
	if err != nil {
		return err
	}
	r.o.Binary = bin
	if slices.Contains(r.o.Faults, "partition") && r.o.Nodes < 2 {
		return errors.New("partition faults need at least 2 nodes")
	}
	if r.o.UI != "" {
		r.ui = newRunUI(r)
	}
	if slices.Contains(r.o.Faults, "partition") || r.ui != nil {
		if r.nft, err = nft.New(ctx); err != nil && slices.Contains(r.o.Faults, "partition") {
			return err
		}
		if err != nil { // only the dashboard wanted it: its button says why not
			r.ui.nftReason = err.Error()
		}
	}
	if r.nft != nil {
		r.clean.add(func() {
			if err := r.nft.Delete(context.Background()); err != nil {
				fmt.Fprintf(r.out, "chaos: delete nftables table %s: %v\n", r.nft.Name(), err)
			}
		})
	}
	if err := r.makeDir(); err != nil {
		return err
	}
	if err := r.makeDiskThrottle(); err != nil {
		return err
	}
	if r.nodes, err = planNodes(r.o, bin, r.dir, sparesFor(r.plan, r.o.Nodes)); err != nil {
		return err
	}
	return checkFree(r.nodes)
}

// makeDiskThrottle creates the run's block-I/O cgroup when disk faults are
// asked for, on the disk that holds the run's directory.
func (r *chaosRun) makeDiskThrottle() error {
	if !slices.Contains(r.o.Faults, "disk") {
		return nil
	}
	d, err := newDiskThrottle(r.dir)
	if err != nil {
		return err
	}
	r.disk = d
	r.clean.add(func() {
		if err := d.delete(); err != nil {
			fmt.Fprintf(r.out, "chaos: delete cgroup %s: %v\n", d.dir, err)
		}
	})
	return nil
}

// checkBinary resolves the binary and checks it is a slotraft that runs.
func checkBinary(ctx context.Context, bin string) (string, error) {
	if bin == "" {
		var err error
		if bin, err = defaultBinary(); err != nil {
			return "", err
		}
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		return "", fmt.Errorf("--binary %q: %w", bin, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("--binary %q: %w", bin, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, abs, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "slotraft") {
		return "", fmt.Errorf("--binary %q is not a slotraft binary (`%s version`: %q, %v)", bin, abs, strings.TrimSpace(string(out)), err)
	}
	return abs, nil
}

// makeDir creates the run's directory.
func (r *chaosRun) makeDir() error {
	dir, err := os.MkdirTemp(r.o.Dir, "slotraft-chaos-")
	if err != nil {
		return fmt.Errorf("create the run's directory: %w", err)
	}
	r.dir = dir
	r.clean.add(func() {
		if r.o.Keep {
			fmt.Fprintf(r.out, "chaos: data dirs and logs kept in %s\n", dir)
			return
		}
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(r.out, "chaos: remove %s: %v\n", dir, err)
		}
	})
	return nil
}

// startCluster starts the nodes and waits for cluster_state:ok.
func (r *chaosRun) startCluster(ctx context.Context) error {
	nodes := r.nodes
	r.procs = &procs{nodes: nodes, crash: r.noteCrash}
	r.topo = newTopology(nodes)
	r.clean.add(func() {
		r.topo.close()
		if err := r.procs.killAll(); err != nil {
			fmt.Fprintf(r.out, "chaos: stop nodes: %v\n", err)
		}
	})
	first := r.procs.members()
	for _, n := range first {
		if err := r.procs.start(n); err != nil {
			return err
		}
	}
	r.say("started %d nodes (%s … %s), data in %s", len(first), first[0].client, first[len(first)-1].client, r.dir)
	if err := r.procs.waitOK(ctx, startWait); err != nil {
		return fmt.Errorf("%w%s", err, r.crashText())
	}
	r.say("cluster_state:ok on every node")
	return nil
}

// noteCrash records a node that exited without being killed by the run.
func (r *chaosRun) noteCrash(n *node, err error) {
	i := r.h.begin(Event{Kind: "crash", Desc: fmt.Sprintf("%s exited by itself: %v", n.id, err), Targets: []string{n.id}})
	r.h.end(i, "", nil)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.crashes = append(r.crashes, Anomaly{Kind: "node crashed",
		Text: fmt.Sprintf("%s exited by itself (%v); the end of its log:\n%s", n.id, err, n.logTail(crashLines))})
	r.say("%s exited by itself: %v", n.id, err)
}

func (r *chaosRun) crashText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, a := range r.crashes {
		b.WriteString("\n" + a.Text)
	}
	return b.String()
}

// setup picks the workloads' keys over the groups and lays out the faults.
func (r *chaosRun) setup(ctx context.Context) error {
	sh, err := r.topo.shards(ctx)
	if err != nil {
		return err
	}
	keys := &keyPicker{prefix: r.keyPrefix(), shards: sh}
	for _, name := range r.o.Workloads {
		wl := newWorkload(name)
		wl.Setup(keys)
		r.wls = append(r.wls, wl)
	}
	if len(r.o.Target) > 0 { // the cluster's own shape, not the flags'
		r.o.Nodes, r.o.Groups, r.o.Replicas = 0, len(sh), 0
	}
	r.say("%d slot groups; workloads %s; %d faults scheduled (seed %d)", len(sh), strings.Join(r.o.Workloads, ","), len(r.plan), r.o.Seed)
	return nil
}

// startLive starts the live checks (live.go), unless --live-every is 0.
func (r *chaosRun) startLive(ctx context.Context) {
	if r.o.LiveEvery <= 0 {
		return
	}
	l := newLiveChecker(r.h, r.wls, r.o.LiveEvery)
	r.mu.Lock()
	r.live = l
	r.mu.Unlock()
	l.start(ctx)
}

// keyPrefix is what every key of the run begins with: the seed makes it
// the run's own.
func (r *chaosRun) keyPrefix() string { return "chaos:" + strconv.FormatUint(r.o.Seed, 36) + ":" }

// runFaultsAndLoad runs the workloads and the nemesis for the duration.
// It returns the nemesis's error (a fault it could not heal).
func (r *chaosRun) runFaultsAndLoad(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, r.o.Duration)
	defer cancel()
	var wg sync.WaitGroup
	panics := make(chan error, len(r.wls)+1)
	for _, wl := range r.wls {
		ru := &runner{wl: wl, h: r.h, addrs: r.procs.clientAddrs, seed: r.o.Seed, clients: r.o.Clients,
			rate: r.o.Rate, maxOps: r.o.MaxOps, opTimeout: r.o.OpTimeout, onErr: r.h.noteErr}
		wg.Go(func() { panics <- ru.run(rctx) })
	}
	e := &env{procs: r.procs, topo: r.topo, nft: r.nft, disk: r.disk, base: r.o.Nodes, replicas: r.o.Replicas, keySlots: r.keySlots()}
	nm := &nemesis{env: e, h: r.h, faults: map[string]Fault{}, say: r.say, acts: &r.acts}
	for _, k := range r.o.Faults {
		nm.faults[k] = newFault(k)
		if len(r.o.Target) > 0 && k == "pause" {
			nm.faults[k] = pidPauseFault{pids: r.o.Pids}
		}
	}
	var nemErr error
	err := guard(func() { nemErr = nm.run(rctx, time.Now(), r.plan) })
	if err == nil {
		err = nemErr
	}
	if err != nil {
		r.say("nemesis: %v", err)
		cancel()
	}
	<-rctx.Done()
	wg.Wait()
	close(panics)
	for p := range panics {
		err = errors.Join(err, p)
	}
	return err
}

// keySlots are the slots of every workload's keys.
func (r *chaosRun) keySlots() []uint16 {
	var out []uint16
	for _, wl := range r.wls {
		for _, op := range wl.Finals() {
			out = append(out, slots.Of([]byte(op.Key)))
		}
	}
	return out
}

// stopAll kills the nodes and removes the rules, keeping the run's
// directory until the end (the cleaner removes it, or keeps it with --keep).
func (r *chaosRun) stopAll() {
	r.topo.close()
	if err := r.procs.killAll(); err != nil {
		r.say("stop nodes: %v", err)
	}
	if r.nft != nil {
		if err := r.nft.Delete(context.Background()); err != nil {
			r.say("delete nftables table %s: %v", r.nft.Name(), err)
		}
	}
	if r.disk != nil {
		if err := r.disk.delete(); err != nil {
			r.say("delete cgroup %s: %v", r.disk.dir, err)
		}
	}
}

// keepHistory writes the history, one operation or event per line, into
// the run's directory when it is kept.
func (r *chaosRun) keepHistory() {
	if !r.o.Keep {
		return
	}
	ops, events := r.h.snapshot()
	f, err := os.Create(filepath.Join(r.dir, "history.jsonl"))
	if err != nil {
		r.say("write the history: %v", err)
		return
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	_ = enc.Encode(map[string]any{"started": r.h.start.Format(time.RFC3339Nano)})
	for _, e := range events {
		_ = enc.Encode(map[string]any{"event": e})
	}
	for _, op := range ops {
		_ = enc.Encode(map[string]any{"op": op})
	}
	r.say("history written to %s", f.Name())
}

// guard runs fn and turns a panic into an error, so the run still cleans up.
func guard(fn func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	fn()
	return nil
}

// healAll heals everything (rules, stopped and dead nodes) and waits for
// the cluster; an error if it does not come back, which is an anomaly.
func (r *chaosRun) healAll(ctx context.Context) error {
	if r.nft != nil {
		if _, err := r.nft.Heal(ctx); err != nil {
			return fmt.Errorf("heal the partition rules: %w", err)
		}
	}
	if r.disk != nil {
		if err := r.disk.heal(); err != nil {
			return fmt.Errorf("lift the disk throttle: %w", err)
		}
	}
	if err := r.procs.restore(); err != nil {
		return err
	}
	r.say("faults over: everything healed, waiting for cluster_state:ok")
	if err := r.procs.waitOK(ctx, recoverWait); err != nil {
		return err
	}
	r.say("cluster_state:ok again")
	return nil
}

// finalReads reads every key of every workload.
func (r *chaosRun) finalReads(ctx context.Context) error {
	cn := clusterConn{newClusterClient(r.procs.clientAddrs(), r.o.OpTimeout)}
	defer cn.close()
	ctx, cancel := context.WithTimeout(ctx, finalWait)
	defer cancel()
	var errs error
	for _, wl := range r.wls {
		errs = errors.Join(errs, finalReads(ctx, wl, cn, r.h, r.o.OpTimeout))
	}
	if errs == nil {
		r.say("final reads done")
	}
	return errs
}

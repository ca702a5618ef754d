package chaos

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// ErrNotBuilt marks a fault kind, workload or flag the chaos playground
// names but does not implement yet (docs/chaos.md lists them).
var ErrNotBuilt = errors.New("not built yet")

// errUsage marks a bad command line whose message was already printed.
var errUsage = errors.New("usage")

// maxNodes bounds --nodes: node i binds 127.0.0.(i+2), and a run of more
// nodes than this would not fit two cores anyway.
const maxNodes = 50

// Options is a parsed `slotraft chaos run` command line.
type Options struct {
	Nodes     int
	Groups    int
	Replicas  int
	Duration  time.Duration
	Faults    []string // built fault kinds, in registry order
	Workloads []string // built workload kinds, in registry order
	Seed      uint64
	Binary    string
	Keep      bool
	JSON      bool
	Report    string
	BasePort  int           // 0: free ports picked per node
	Clients   int           // concurrent clients per workload
	Rate      int           // operations per second per workload, all its clients together
	MaxOps    int           // operations per workload at most
	OpTimeout time.Duration // a client's patience for one operation, retries of refused attempts included
	Dir       string        // parent of the run's temporary directory
	LogLevel  string        // the nodes' log level
	Target    []string      // seeds of a cluster already running: no node is started
	Pids      []int         // with Target: the processes pause may stop
	UI        string        // --ui: serve the dashboard with chaos controls here (ui.go)
	UILinger  time.Duration // --ui-linger: how long the dashboard shows the verdict after the run
	LiveEvery time.Duration // --live-every: how often the checks that hold on a prefix run during the run (live.go); 0 never
}

const runUsage = `usage: slotraft chaos run [flags]

Starts a cluster of real slotraft server processes on loopback addresses
127.0.0.2, 127.0.0.3, ..., runs workloads through a cluster client while
faults are injected, checks the recorded history and exits 0 when no
anomaly was found, 1 when one was, 2 on bad input, 3 when the run could
not be carried out, 130 when interrupted. See docs/chaos.md.

flags:
`

// newRunFlags declares the flags of `chaos run` on a fresh FlagSet.
func newRunFlags(out io.Writer) (*flag.FlagSet, *Options, *rawLists) {
	fs := flag.NewFlagSet("chaos run", flag.ContinueOnError)
	fs.SetOutput(out)
	o := &Options{}
	raw := &rawLists{}
	fs.IntVar(&o.Nodes, "nodes", 5, "number of server processes (node i binds 127.0.0.(i+1))")
	fs.IntVar(&o.Groups, "groups", 0, "number of slot groups (default: --nodes)")
	fs.IntVar(&o.Replicas, "replicas", 3, "replicas per slot group")
	fs.DurationVar(&o.Duration, "duration", 60*time.Second, "how long faults are injected while the workloads run")
	fs.StringVar(&raw.faults, "faults", "all", "comma list of fault kinds, or all: "+strings.Join(kindNames(faultKinds), ", "))
	fs.StringVar(&raw.workloads, "workload", "all", "comma list of workloads, or all: "+strings.Join(kindNames(workloadKinds), ", "))
	fs.Uint64Var(&o.Seed, "seed", 0, "seed of the fault schedule and of the clients' choices (default: from the clock, printed)")
	fs.StringVar(&o.Binary, "binary", "", "slotraft binary the nodes run (default: this executable)")
	fs.BoolVar(&o.Keep, "keep", false, "keep the nodes' data dirs and logs (else removed at the end)")
	fs.BoolVar(&o.JSON, "json", false, "print a machine-readable summary on stdout (progress goes to stderr)")
	fs.StringVar(&o.Report, "report", "", "write a self-contained HTML report to this file")
	fs.IntVar(&o.BasePort, "base-port", 0, "client port of every node (bus port +10000), each on its own address (default: free ports)")
	fs.IntVar(&o.Clients, "clients", 4, "concurrent clients per workload")
	fs.IntVar(&o.Rate, "rate", 100, "operations per second per workload, all its clients together")
	fs.IntVar(&o.MaxOps, "max-ops", 50000, "operations per workload at most")
	fs.DurationVar(&o.OpTimeout, "op-timeout", 2*time.Second, "a client's patience for one operation")
	fs.StringVar(&o.Dir, "dir", "", "parent directory of the run's data dirs and logs (default: the system's temp dir)")
	fs.StringVar(&o.LogLevel, "log-level", "info", "the nodes' log level")
	fs.StringVar(&raw.target, "target", "", "comma list of host:port of a cluster that is already running: no node is started, only pause (with --pids) may be injected; keys go under chaos:<seed>: and are deleted at the end")
	fs.StringVar(&o.UI, "ui", "", "serve the dashboard, with buttons that kill, pause, resume, restart and partition the nodes and the run's progress and verdict, on this loopback host:port (e.g. 127.0.0.1:9700); the nodes get an HTTP port each")
	fs.DurationVar(&o.UILinger, "ui-linger", time.Minute, "with --ui: how long the dashboard shows the verdict after the run (Ctrl-C ends it sooner)")
	fs.DurationVar(&o.LiveEvery, "live-every", 5*time.Second, "how often the checks that hold on the history so far run during the run (the live verdict, on the dashboard and in the summary); 0 turns them off")
	fs.StringVar(&raw.pids, "pids", "", "with --target: comma list of the nodes' pids; pause stops one of them (SIGSTOP/SIGCONT)")
	fs.Usage = func() {
		fmt.Fprint(out, runUsage)
		fs.PrintDefaults()
	}
	return fs, o, raw
}

// rawLists holds the flags that need parsing after the FlagSet.
type rawLists struct {
	faults, workloads string
	target, pids      string
}

// parseRunFlags parses and checks the command line of `chaos run`.
func parseRunFlags(args []string, stderr io.Writer) (*Options, error) {
	fs, o, raw := newRunFlags(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, errUsage
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if o.Faults, err = parseKinds(raw.faults, faultKinds, "fault"); err != nil {
		return nil, err
	}
	faultsGiven := false
	fs.Visit(func(f *flag.Flag) { faultsGiven = faultsGiven || f.Name == "faults" })
	if err := parseTarget(o, raw.target, raw.pids, faultsGiven); err != nil {
		return nil, err
	}
	if o.Workloads, err = parseKinds(raw.workloads, workloadKinds, "workload"); err != nil {
		return nil, err
	}
	if len(o.Workloads) == 0 {
		return nil, errors.New("--workload: name at least one workload")
	}
	if o.Groups == 0 {
		o.Groups = o.Nodes
	}
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	return o, nil
}

// check refuses values the run cannot work with.
func (o *Options) check() error {
	switch {
	case o.Nodes < 1 || o.Nodes > maxNodes:
		return fmt.Errorf("--nodes %d: want 1 to %d", o.Nodes, maxNodes)
	case o.Groups < 1:
		return fmt.Errorf("--groups %d: want at least 1", o.Groups)
	case o.Replicas < 1:
		return fmt.Errorf("--replicas %d: want at least 1", o.Replicas)
	case o.Duration < time.Second:
		return fmt.Errorf("--duration %v: want at least 1s", o.Duration)
	case o.Clients < 1 || o.Rate < 1 || o.MaxOps < 1:
		return fmt.Errorf("--clients, --rate and --max-ops must be at least 1 (got %d, %d, %d)", o.Clients, o.Rate, o.MaxOps)
	case o.OpTimeout < 100*time.Millisecond:
		return fmt.Errorf("--op-timeout %v: want at least 100ms", o.OpTimeout)
	case o.BasePort < 0 || o.BasePort > 65535-busOffset:
		return fmt.Errorf("--base-port %d: the port and the bus port (+%d) must be valid ports", o.BasePort, busOffset)
	case o.UI != "" && len(o.Target) > 0:
		return errors.New("--ui needs the nodes this run starts (its buttons signal them), not --target")
	case o.UILinger < 0:
		return fmt.Errorf("--ui-linger %v: want 0 or more", o.UILinger)
	case o.LiveEvery != 0 && o.LiveEvery < 100*time.Millisecond:
		return fmt.Errorf("--live-every %v: want 0 (off) or at least 100ms", o.LiveEvery)
	}
	return nil
}

// kind is one entry of a registry of fault kinds or workloads: built
// entries carry a constructor, the others say why they are missing.
type kind[T any] struct {
	name    string
	build   func() T // nil: not built yet
	missing string   // why it is not built (docs/chaos.md says more)
}

func kindNames[T any](reg []kind[T]) []string {
	names := make([]string, len(reg))
	for i, k := range reg {
		names[i] = k.name
		if k.build == nil {
			names[i] += " (" + ErrNotBuilt.Error() + ")"
		}
	}
	return names
}

// parseKinds reads a comma list of names of reg ("all": every built one).
// An unknown name, or a known one not built yet, is an error. The result is
// in registry order, each name once.
func parseKinds[T any](list string, reg []kind[T], what string) ([]string, error) {
	want := map[string]bool{}
	for _, item := range strings.Split(list, ",") {
		name := strings.TrimSpace(item)
		if name == "" {
			continue
		}
		if name == "all" {
			for _, k := range reg {
				if k.build != nil {
					want[k.name] = true
				}
			}
			continue
		}
		i := slices.IndexFunc(reg, func(k kind[T]) bool { return k.name == name })
		switch {
		case i < 0:
			return nil, fmt.Errorf("unknown %s %q (known: %s)", what, name, strings.Join(kindNames(reg), ", "))
		case reg[i].build == nil:
			return nil, fmt.Errorf("%s %q: %w (%s)", what, name, ErrNotBuilt, reg[i].missing)
		}
		want[name] = true
	}
	var out []string
	for _, k := range reg {
		if want[k.name] {
			out = append(out, k.name)
		}
	}
	return out, nil
}

// defaultBinary is this executable, so that a binary built with
// `-tags plantbug` starts its nodes from itself.
func defaultBinary() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find this executable (give --binary): %w", err)
	}
	return exe, nil
}

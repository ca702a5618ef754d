package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A run against a cluster that is already running (--target): no node is
// started or stopped; the seeds are the run's nodes, marked external, so
// the workloads, the checks and the leader poller work as usual. The only
// fault is pause, by SIGSTOP and SIGCONT of the pids the user gives: a
// killed node could not be brought back by this run, and partitions and
// restart-all need nodes it started on addresses of its own.

// targetFaults are the fault kinds a --target run may inject.
var targetFaults = map[string]string{
	"kill":        "a killed node of a cluster this run did not start cannot be restarted by it (not built: a --restart-cmd)",
	"partition":   "partitions filter the run's own node addresses (127.0.0.2, …); a cluster it did not start has none",
	"restart-all": "a cluster this run did not start cannot be restarted by it",
}

// parseTarget reads --target and --pids into o and refuses, before
// anything starts, what a run against that cluster cannot do.
// faultsGiven says whether --faults was on the command line.
func parseTarget(o *Options, target, pids string, faultsGiven bool) error {
	if target == "" {
		if pids != "" {
			return errors.New("--pids needs --target (the pids of the nodes of that cluster)")
		}
		return nil
	}
	for _, a := range strings.Split(target, ",") {
		if a = strings.TrimSpace(a); a != "" {
			o.Target = append(o.Target, a)
		}
	}
	for _, p := range strings.Split(pids, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		pid, err := strconv.Atoi(p)
		if err != nil || pid <= 1 {
			return fmt.Errorf("--pids: %q is not a process id", p)
		}
		o.Pids = append(o.Pids, pid)
	}
	if len(o.Target) == 0 {
		return errors.New("--target: name at least one host:port")
	}
	if !faultsGiven { // "all" means what this cluster allows
		o.Faults = nil
		if len(o.Pids) > 0 {
			o.Faults = []string{"pause"}
		}
	}
	for _, f := range o.Faults {
		if why, ok := targetFaults[f]; ok {
			return fmt.Errorf("--faults %s with --target: %s", f, why)
		}
		if f == "pause" && len(o.Pids) == 0 {
			return errors.New("--faults pause with --target needs --pids (the processes to stop)")
		}
	}
	return nil
}

// checkPids refuses pids that are not processes this user may signal.
func checkPids(pids []int) error {
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err != nil {
			return fmt.Errorf("--pids %d: %w", pid, err)
		}
	}
	return nil
}

// targetNodes are the seeds as external nodes: never started, never
// killed, always counted as running.
func targetNodes(addrs []string) []*node {
	nodes := make([]*node, len(addrs))
	for i, a := range addrs {
		nodes[i] = &node{idx: i, id: a, client: a, external: true, life: member}
	}
	return nodes
}

// pidPauseFault pauses one of --pids, chosen by the step's pick: the run
// does not know which node each pid is, so it cannot prefer leaders.
type pidPauseFault struct{ pids []int }

func (pidPauseFault) Kind() string { return "pause" }

func (f pidPauseFault) Inject(_ context.Context, _ *env, pick uint64) (Injected, error) {
	pid := f.pids[pick%uint64(len(f.pids))]
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return Injected{}, fmt.Errorf("SIGSTOP pid %d: %w", pid, err)
	}
	name := "pid " + strconv.Itoa(pid)
	return Injected{Desc: "SIGSTOP " + name, Targets: []string{name}, Heal: func(context.Context) (string, error) {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			return "", fmt.Errorf("SIGCONT pid %d: %w", pid, err)
		}
		return "", nil
	}}, nil
}

// resumePids sends SIGCONT to every pid, whatever happened: a run must
// never leave the user's nodes stopped.
func resumePids(pids []int) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
}

// deleteKeys removes every key the workloads wrote (all under the run's
// prefix chaos:<seed>:), through the cluster client.
func (r *chaosRun) deleteKeys(ctx context.Context) error {
	cn := clusterConn{newClusterClient(r.procs.clientAddrs(), r.o.OpTimeout)}
	defer cn.close()
	ctx, cancel := context.WithTimeout(ctx, finalWait)
	defer cancel()
	n := 0
	for _, wl := range r.wls {
		for _, op := range wl.Finals() {
			if err := cn.rc.Del(ctx, op.Key).Err(); err != nil {
				return fmt.Errorf("DEL %s: %w", op.Key, err)
			}
			n++
		}
	}
	r.say("deleted the run's %d keys", n)
	return nil
}

// startTarget checks the target cluster instead of starting one.
func (r *chaosRun) startTarget(ctx context.Context) error {
	r.procs = &procs{nodes: r.nodes, crash: r.noteCrash}
	r.topo = newTopology(r.nodes)
	r.clean.add(func() {
		r.topo.close()
		resumePids(r.o.Pids)
	})
	if err := r.procs.waitOK(ctx, 10*time.Second); err != nil {
		return err
	}
	r.say("target %s: cluster_state:ok; keys under %s; pause victims: pids %v (pid %d is this run)",
		strings.Join(r.o.Target, ","), r.keyPrefix(), r.o.Pids, os.Getpid())
	return nil
}

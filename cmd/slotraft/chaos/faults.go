package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/slotraft/slotraft/cmd/slotraft/internal/nft"
)

// Fault is one kind of fault the nemesis injects. Inject starts it on the
// run's nodes; pick is the schedule's random number for this step, from
// which the fault makes all its choices (which group's leader, which
// shape), so the same seed makes the same choices against the same
// cluster state. The returned Injected says what was done and undoes it.
type Fault interface {
	Kind() string
	Inject(ctx context.Context, e *env, pick uint64) (Injected, error)
}

// Injected is a fault in effect.
type Injected struct {
	Desc    string
	Targets []string
	// Heal undoes the fault; its text, if any, is added to the description.
	Heal func(ctx context.Context) (string, error)
}

// env is what faults act on.
type env struct {
	procs          *procs
	topo           *topology
	nft            *nft.Table    // nil unless partitions were asked for
	disk           *diskThrottle // nil unless disk faults were asked for
	base, replicas int           // --nodes, --replicas
	// keySlots are the slots of the workloads' keys: slot moves aim at them.
	keySlots []uint16
}

// faultKinds is every fault kind the issue names, built or not.
var faultKinds = []kind[Fault]{
	{name: "kill", build: func() Fault { return killFault{} }},
	{name: "pause", build: func() Fault { return pauseFault{} }},
	{name: "partition", build: func() Fault { return partitionFault{} }},
	{name: "restart-all", build: func() Fault { return restartAllFault{} }},
	{name: "migrate", build: func() Fault { return migrateFault{} }},
	{name: "membership", build: func() Fault { return membershipFault{} }},
	{name: "disk", build: func() Fault { return diskFault{} }},
	{name: "clock", missing: "skewing one process's clock needs a test build hook (the nodes read the system clock): a later milestone"},
}

func newFault(name string) Fault {
	for _, k := range faultKinds {
		if k.name == name && k.build != nil {
			return k.build()
		}
	}
	panic("chaos: fault not built: " + name)
}

// victim chooses the node a kill or a pause hits, among the running
// members: in three steps of four the leader of group pick (leaders are
// where faults hurt), else the pick-th of them.
func (e *env) victim(ctx context.Context, pick uint64) (*node, error) {
	live := e.procs.live()
	if len(live) == 0 {
		return nil, errors.New("no running node to hit")
	}
	if pick/uint64(len(live))%4 != 0 {
		if li, _ := e.topo.leaderOf(ctx, pick/4); li >= 0 {
			if i := slices.IndexFunc(live, func(n *node) bool { return n.idx == li }); i >= 0 {
				return live[i], nil
			}
		}
	}
	return live[pick%uint64(len(live))], nil
}

// killFault: SIGKILL one node, restart it on its data dir at heal.
type killFault struct{}

func (killFault) Kind() string { return "kill" }

func (killFault) Inject(ctx context.Context, e *env, pick uint64) (Injected, error) {
	n, err := e.victim(ctx, pick)
	if err != nil {
		return Injected{}, err
	}
	pid, note := n.pid(), leaderNote(ctx, e, n) // asked while n still answers for itself
	if err := n.kill(); err != nil {
		return Injected{}, err
	}
	return Injected{
		Desc:    fmt.Sprintf("kill -9 %s (pid %d)%s", n.id, pid, note),
		Targets: []string{n.id},
		Heal: func(context.Context) (string, error) {
			return "", e.procs.start(n)
		},
	}, nil
}

// pauseFault: SIGSTOP one node, SIGCONT at heal: it wakes up believing
// whatever it believed, leaderships included.
type pauseFault struct{}

func (pauseFault) Kind() string { return "pause" }

func (pauseFault) Inject(ctx context.Context, e *env, pick uint64) (Injected, error) {
	n, err := e.victim(ctx, pick)
	if err != nil {
		return Injected{}, err
	}
	note := leaderNote(ctx, e, n)
	if err := n.signalStop(true); err != nil {
		return Injected{}, err
	}
	return Injected{
		Desc:    fmt.Sprintf("SIGSTOP %s (pid %d)%s", n.id, n.pid(), note),
		Targets: []string{n.id},
		Heal: func(context.Context) (string, error) {
			return "", n.signalStop(false)
		},
	}, nil
}

// restartAllFault: SIGKILL every node at once (a power loss), start them
// all again on their data dirs at heal.
type restartAllFault struct{}

func (restartAllFault) Kind() string { return "restart-all" }

func (restartAllFault) Inject(_ context.Context, e *env, _ uint64) (Injected, error) {
	if err := e.procs.killAll(); err != nil {
		// Some died, one did not in time: bring back the dead at once
		// rather than leave them down for the rest of the schedule.
		return Injected{}, errors.Join(err, e.procs.restore())
	}
	ms := e.procs.members()
	ids := make([]string, len(ms))
	for i, n := range ms {
		ids[i] = n.id
	}
	return Injected{
		Desc:    fmt.Sprintf("kill -9 all %d members at once", len(ids)),
		Targets: ids,
		Heal: func(context.Context) (string, error) {
			return "", e.procs.restore()
		},
	}, nil
}

// leaderNote says which groups n leads, as the nodes see it.
func leaderNote(ctx context.Context, e *env, n *node) string {
	sh, err := e.topo.shards(ctx)
	if err != nil {
		return ""
	}
	var led []string
	for _, s := range sh {
		if s.leader == n.idx {
			led = append(led, strconv.FormatUint(uint64(s.id), 10))
		}
	}
	if len(led) == 0 {
		return ", leading no group"
	}
	return ", leader of group " + strings.Join(led, ", ")
}

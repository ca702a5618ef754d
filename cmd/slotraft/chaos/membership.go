package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/cmd/slotraft/internal/probe"
)

// How long the membership fault waits for the cluster's side of a change.
const (
	joinWait   = 60 * time.Second // a joined node's cluster_state:ok
	drainWait  = 120 * time.Second
	removeWait = 20 * time.Second // gossip seeing a killed node down, and the removal
)

// The membership changes the fault makes.
const (
	actJoin    = "join"    // a spare starts with --join and becomes a member
	actDrain   = "drain"   // REMOVE-NODE of a live member: drained, it exits by itself
	actReplace = "replace" // SIGKILL a member, REMOVE-NODE it while down, a spare joins at heal
)

// membershipFault changes who is in the cluster (see the act constants).
// The members stay between --nodes − 1 and --nodes + 1 and never fewer
// than --replicas + 1, so every group keeps its replicas somewhere and a
// removal never takes a group's majority: one node at a time, while every
// other member runs (one fault at a time). Joins use spare node slots
// planned for the run: fresh ids, addresses and data dirs.
type membershipFault struct{}

func (membershipFault) Kind() string { return "membership" }

// chooseMembership picks the change from pick among those allowed with
// members nodes in the cluster, base of them wanted (--nodes), replicas
// per group and spares left; "" when none is.
func chooseMembership(pick uint64, members, base, replicas, spares int) string {
	var ok []string
	if spares > 0 && members < base+1 {
		ok = append(ok, actJoin)
	}
	if members > base-1 && members > replicas {
		ok = append(ok, actDrain)
	}
	if spares > 0 && members > replicas {
		ok = append(ok, actReplace)
	}
	if len(ok) == 0 {
		return ""
	}
	return ok[pick%uint64(len(ok))]
}

func (membershipFault) Inject(ctx context.Context, e *env, pick uint64) (Injected, error) {
	spares := 0
	for _, n := range e.procs.nodes {
		if n.lifeOf() == spare {
			spares++
		}
	}
	act := chooseMembership(pick, len(e.procs.members()), e.base, e.replicas, spares)
	switch act {
	case actJoin:
		return joinNode(e)
	case actDrain, actReplace:
		// pick/3 leaves the part of pick that chose the action to the victim.
		victim, err := e.victim(ctx, pick/3)
		if err != nil {
			return Injected{}, err
		}
		if act == actDrain {
			return drainNode(ctx, e, victim)
		}
		return replaceNode(ctx, e, victim)
	}
	return Injected{}, errors.New("membership: no safe change with the members there are")
}

// joinNode starts the next spare with --join; heal waits until it reports
// cluster_state:ok (it then has the map; replicas move to it meanwhile).
func joinNode(e *env) (Injected, error) {
	n, seeds := e.procs.nextSpare(), e.procs.live()
	if n == nil || len(seeds) == 0 {
		return Injected{}, errors.New("membership: no spare node or no running member to join through")
	}
	if err := e.procs.join(n, seeds); err != nil {
		return Injected{}, err
	}
	return Injected{
		Desc:    fmt.Sprintf("join %s (%s) through %s", n.id, n.client, ids(seeds)),
		Targets: []string{n.id},
		Heal: func(ctx context.Context) (string, error) {
			return "", waitNodeOK(ctx, n)
		},
	}, nil
}

// drainNode sends REMOVE-NODE for a live member: the cluster moves its
// replicas and leaderships away, removes it from the map, and its process
// leaves by itself, which heal waits for.
func drainNode(ctx context.Context, e *env, n *node) (Injected, error) {
	asker, note, err := removalFrom(ctx, e, n)
	if err != nil {
		return Injected{}, err
	}
	n.retire() // before the command: its exit must not count as a crash
	reply, err := removeNode(ctx, e, asker, n)
	if err != nil {
		n.unretire()
		return Injected{}, err
	}
	done := n.exited()
	return Injected{
		Desc:    fmt.Sprintf("drain %s (REMOVE-NODE via %s: %s)%s", n.id, asker.id, reply, note),
		Targets: []string{n.id},
		Heal: func(context.Context) (string, error) {
			began := time.Now()
			select {
			case <-done:
				return fmt.Sprintf(" (drained, exited %.1fs after the heal began)", time.Since(began).Seconds()), nil
			case <-time.After(drainWait):
				return "", fmt.Errorf("%s still running %v after REMOVE-NODE (not drained)", n.id, drainWait)
			}
		},
	}, nil
}

// replaceNode SIGKILLs n, waits until the asked node's gossip sees it
// down, and removes it while it is down: its groups drop it and rebuild
// their replicas on other members. Heal starts a spare in its place. When
// the cluster refuses the removal (a group would need n's copy for its
// majority), n stays a member and heal restarts it on its data dir.
func replaceNode(ctx context.Context, e *env, n *node) (Injected, error) {
	asker, note, err := removalFrom(ctx, e, n)
	if err != nil {
		return Injected{}, err
	}
	pid := n.pid()
	if err := n.kill(); err != nil {
		return Injected{}, err
	}
	desc := fmt.Sprintf("replace %s: kill -9 (pid %d)%s", n.id, pid, note)
	reply, err := removeDead(ctx, e, asker, n)
	if err != nil {
		return Injected{
			Desc: desc + fmt.Sprintf(", removal refused (%v): restarted at heal", err), Targets: []string{n.id},
			Heal: func(context.Context) (string, error) { return "", e.procs.start(n) },
		}, nil
	}
	n.retire()
	return Injected{
		Desc: desc + fmt.Sprintf(", REMOVE-NODE while down via %s: %s", asker.id, reply), Targets: []string{n.id},
		Heal: func(ctx context.Context) (string, error) {
			spare := e.procs.nextSpare()
			if spare == nil {
				return " (no spare left to join)", nil
			}
			seeds := e.procs.live()
			if err := e.procs.join(spare, seeds); err != nil {
				return "", err
			}
			return fmt.Sprintf(" (%s joined in its place through %s)", spare.id, ids(seeds)), waitNodeOK(ctx, spare)
		},
	}, nil
}

// removeDead waits until asker's gossip no longer sees n alive (else
// REMOVE-NODE would drain it), then removes it, retrying while the meta
// group elects a leader (n may have led it), up to removeWait.
func removeDead(ctx context.Context, e *env, asker, n *node) (reply string, err error) {
	err = poll(ctx, removeWait, func(ctx context.Context) error {
		var st cluster.ClusterStatus
		if err := e.topo.slotraftJSON(ctx, asker.idx, "STATUS", &st); err != nil {
			return err
		}
		if gossipOf(st, n.id) == "alive" {
			return fmt.Errorf("%s's gossip still sees %s alive", asker.id, n.id)
		}
		reply, err = removeNode(ctx, e, asker, n)
		return err
	})
	return reply, err
}

// removeNode sends SLOTRAFT REMOVE-NODE for n to asker.
func removeNode(ctx context.Context, e *env, asker, n *node) (string, error) {
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	reply, err := e.topo.client(asker.idx).Do(c, "SLOTRAFT", "REMOVE-NODE", n.id).Text()
	if err != nil {
		return "", fmt.Errorf("SLOTRAFT REMOVE-NODE %s on %s: %w", n.id, asker.id, err)
	}
	return reply, nil
}

// gossipOf is the gossip state st reports for node id, "" if not listed.
func gossipOf(st cluster.ClusterStatus, id string) string {
	i := slices.IndexFunc(st.Nodes, func(ns cluster.NodeStatus) bool { return ns.ID == id })
	if i < 0 {
		return ""
	}
	return st.Nodes[i].Gossip
}

// removalFrom is the member to send REMOVE-NODE for n to (the running
// member with the lowest index other than n) and which groups n leads.
func removalFrom(ctx context.Context, e *env, n *node) (asker *node, note string, err error) {
	for _, m := range e.procs.live() {
		if m != n {
			return m, leaderNote(ctx, e, n), nil
		}
	}
	return nil, "", errors.New("membership: no other running member to send REMOVE-NODE to")
}

// waitNodeOK waits until n reports cluster_state:ok, up to joinWait.
func waitNodeOK(ctx context.Context, n *node) error {
	ctx, cancel := context.WithTimeout(ctx, joinWait)
	defer cancel()
	if err := probe.WaitClusterOK(ctx, []string{n.client}); err != nil {
		return fmt.Errorf("%s not cluster_state:ok within %v of joining: %w", n.id, joinWait, err)
	}
	return nil
}

func ids(ns []*node) string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.id
	}
	return strings.Join(out, ",")
}

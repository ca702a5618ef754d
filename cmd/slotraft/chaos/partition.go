package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// partitionFault cuts traffic between groups of nodes with nftables (see
// cmd/slotraft/internal/nft). The shape is one of: halves; a group's leader isolated with a
// minority (the leader is cut off from the majority that elects another);
// a bridge (two halves that see one node in the middle, which sees both);
// a ring (each node sees only its two neighbours, so every node sees a
// majority but no two majorities agree).
type partitionFault struct{}

func (partitionFault) Kind() string { return "partition" }

// cutPlan is a partition shape: the pairs of nodes that cannot talk.
type cutPlan struct {
	desc  string
	pairs [][2]int
}

// shapes lists the partition shapes possible with n nodes.
func shapes(n int) []string {
	switch {
	case n < 2:
		return nil
	case n < 3:
		return []string{"halves", "leader-minority"}
	case n < 4:
		return []string{"halves", "leader-minority", "bridge"}
	}
	return []string{"halves", "leader-minority", "bridge", "ring"}
}

func (partitionFault) Inject(ctx context.Context, e *env, pick uint64) (Injected, error) {
	if e.nft == nil {
		return Injected{}, errors.New("partition: no nftables table")
	}
	live := e.procs.live() // the members now: nodes come and go
	n := len(live)
	sh := shapes(n)
	if len(sh) == 0 {
		return Injected{}, errors.New("partition: needs at least 2 running nodes")
	}
	rng := rand.New(rand.NewPCG(pick, 0x70617274))
	order := make([]int, n) // node indexes, shuffled
	for i, j := range rng.Perm(n) {
		order[i] = live[j].idx
	}
	var plan cutPlan
	switch sh[pick%uint64(len(sh))] {
	case "halves":
		plan = cutBetween("halves", order[:n/2], order[n/2:])
	case "leader-minority":
		plan = leaderMinority(ctx, e, pick, order)
	case "bridge":
		plan = bridge(order)
	default:
		plan = ring(order)
	}
	pairs := make([][2]string, len(plan.pairs))
	for i, p := range plan.pairs {
		pairs[i] = [2]string{e.procs.nodes[p[0]].ip, e.procs.nodes[p[1]].ip}
	}
	if err := e.nft.Cut(ctx, pairs); err != nil {
		return Injected{}, err
	}
	return Injected{
		Desc:    plan.desc,
		Targets: cutTargets(e, plan.pairs),
		Heal: func(ctx context.Context) (string, error) {
			dropped, err := e.nft.Heal(ctx)
			return fmt.Sprintf(" (%d packets dropped)", dropped), err
		},
	}, nil
}

// cutBetween cuts every pair across two sides.
func cutBetween(shape string, a, b []int) cutPlan {
	var pairs [][2]int
	for _, x := range a {
		for _, y := range b {
			pairs = append(pairs, [2]int{x, y})
		}
	}
	return cutPlan{desc: shape + " " + side(a) + " | " + side(b), pairs: pairs}
}

// leaderMinority isolates the leader of group pick with a minority,
// preferring companions that do not replicate that group, so that the
// leader loses its quorum. Without a known leader it cuts halves.
func leaderMinority(ctx context.Context, e *env, pick uint64, order []int) cutPlan {
	li, sh := e.topo.leaderOf(ctx, pick)
	n := len(order)
	if li < 0 {
		return cutBetween("halves (no leader known)", order[:n/2], order[n/2:])
	}
	others := slices.DeleteFunc(slices.Clone(order), func(i int) bool { return i == li })
	// Non-replicas of the group first, keeping the shuffled order otherwise.
	slices.SortStableFunc(others, func(a, b int) int {
		return boolInt(slices.Contains(sh.replicas, a)) - boolInt(slices.Contains(sh.replicas, b))
	})
	m := max(1, (n-1)/2) // the minority's size, the leader included
	minority := append([]int{li}, others[:m-1]...)
	p := cutBetween("leader-minority", minority, others[m-1:])
	p.desc = fmt.Sprintf("leader-minority (leader of group %d) %s", sh.id, strings.TrimPrefix(p.desc, "leader-minority "))
	return p
}

// bridge: the first node sees everyone; the others form two halves that
// do not see each other.
func bridge(order []int) cutPlan {
	mid, rest := order[0], order[1:]
	p := cutBetween("bridge", rest[:len(rest)/2], rest[len(rest)/2:])
	p.desc = fmt.Sprintf("bridge %s | {%s} | %s", side(rest[:len(rest)/2]), nodeName(mid), side(rest[len(rest)/2:]))
	return p
}

// ring: nodes in order, each seeing only its two neighbours.
func ring(order []int) cutPlan {
	n := len(order)
	var pairs [][2]int
	for i := range n {
		for j := i + 1; j < n; j++ {
			if j-i != 1 && !(i == 0 && j == n-1) {
				pairs = append(pairs, [2]int{order[i], order[j]})
			}
		}
	}
	parts := make([]string, n)
	for i, x := range order {
		parts[i] = nodeName(x)
	}
	return cutPlan{desc: "ring " + strings.Join(parts, "-") + "-" + parts[0], pairs: pairs}
}

func side(xs []int) string {
	s := slices.Sorted(slices.Values(xs))
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = nodeName(x)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// nodeName is node index i's id (node1 is index 0).
func nodeName(i int) string { return fmt.Sprintf("node%d", i+1) }

// cutTargets lists the nodes that lost a link.
func cutTargets(e *env, pairs [][2]int) []string {
	seen := map[int]bool{}
	for _, p := range pairs {
		seen[p[0]], seen[p[1]] = true, true
	}
	var out []string
	for _, n := range e.procs.nodes {
		if seen[n.idx] {
			out = append(out, n.id)
		}
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

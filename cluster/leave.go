package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// Leaving: a node that stops on purpose (SIGTERM, `slotraft admin leave`)
// first hands its leaderships away (HandOff), then stays a voting follower
// until every group it hosts has a quorum of other replicas that are up,
// follow a leader and have nearly caught up. In a rolling restart this is
// what makes the next node wait for the previous one to be back: stopping
// it earlier would leave its groups without a majority.

const (
	// leaveMaxLag is how far behind its leader's log a replica may be and
	// still count as caught up: it is replicating, not installing a snapshot.
	leaveMaxLag = 1024
	leavePoll   = 200 * time.Millisecond
)

// RequestLeave asks the process running this node to leave the cluster as
// on SIGTERM; LeaveRequested is closed once it was asked.
func (n *Node) RequestLeave() { n.leaveOnce.Do(func() { close(n.leaveReq) }) }

// LeaveRequested is closed when RequestLeave was called.
func (n *Node) LeaveRequested() <-chan struct{} { return n.leaveReq }

// Leave hands off every leadership, then waits up to wait (Redis's
// shutdown-timeout; 0: not at all) until the node is no longer needed for
// any group's quorum. It returns an error when ctx or the wait ends
// first; the caller stops the node anyway.
func (n *Node) Leave(ctx context.Context, wait time.Duration) error {
	if err := n.HandOff(ctx); err != nil {
		return err
	}
	if wait <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		needed := n.neededBy(ctx)
		if len(needed) == 0 {
			n.log.Info("no group needs this node for its quorum: leaving")
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("leave: groups %v still need this node for their quorum: %w", needed, ctx.Err())
		case <-time.After(leavePoll):
		}
	}
}

// neededBy lists the hosted groups whose other replicas do not make a
// healthy quorum without this node.
func (n *Node) neededBy(ctx context.Context) []uint32 {
	peers, all, errs := n.views(ctx)
	views := map[string]NodeView{}
	for i, p := range peers {
		if p.ID != n.self.ID && errs[i] == nil {
			views[p.ID] = all[i]
		}
	}
	var needed []uint32
	for _, g := range n.Groups() {
		if g.local && !quorumWithout(g, n.self.ID, views) {
			needed = append(needed, g.id)
		}
	}
	return needed
}

// quorumWithout says whether g's replicas other than self are a majority of
// g that follows one leader (not self) and has caught up with it.
func quorumWithout(g *Group, self string, views map[string]NodeView) bool {
	var others []string
	for _, id := range g.Replicas() {
		if id != self {
			others = append(others, id)
		}
	}
	reps, leader := replicaViews(g.id, others, views)
	if leader.State == "" {
		return false
	}
	healthy := 0
	for _, r := range reps {
		if r.Term == leader.Term && r.Leader == leader.Leader && r.AppliedIndex+leaveMaxLag >= leader.LastIndex {
			healthy++
		}
	}
	return healthy >= len(g.layout().replicas)/2+1
}

// replicaViews picks group gid's replica views out of the nodes' views of
// the given replicas, and the one among them that leads in the highest
// term (State "" when none does).
func replicaViews(gid uint32, replicas []string, views map[string]NodeView) (map[string]ReplicaView, ReplicaView) {
	reps := map[string]ReplicaView{}
	var leader ReplicaView
	for _, id := range replicas {
		for _, r := range views[id].Replicas {
			if r.Group == gid {
				reps[id] = r
				if r.State == raft.Leader.String() && r.Term >= leader.Term {
					leader = r
				}
			}
		}
	}
	return reps, leader
}

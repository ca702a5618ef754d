package cluster

import (
	"context"
	"time"

	"github.com/hashicorp/raft"
)

// GroupStats are one hosted replica's facts, read from its Raft and the
// recordings of raftmetrics.go without asking any other node: what the
// front end's /metrics and /readyz report.
type GroupStats struct {
	Group        uint32
	State        string // Leader, Follower, Candidate, Shutdown
	Leader       string // the leader's node id, "" if none is known
	Term         uint64
	LastIndex    uint64
	CommitIndex  uint64 // as this replica knows it (a follower: the leader's, as of its last contact)
	AppliedIndex uint64
	// LastContact is, on a follower, how long ago it last heard from its
	// leader (-1: never); 0 on a leader. HeartbeatTimeout is the Raft
	// setting a follower starts an election after, without contact.
	LastContact      time.Duration
	HeartbeatTimeout time.Duration
	LeaderChanges    uint64 // new leaders this replica observed since it opened
	Apply            HistogramSnapshot
	LogStore         HistogramSnapshot // appends, fsync included
	Snapshot         HistogramSnapshot // persists
	SnapshotBytes    uint64            // the size of the last snapshot persisted here
}

// GroupStats reports every group hosted here, in slot order.
func (n *Node) GroupStats() []GroupStats {
	hb := n.cfg.raftConfig().HeartbeatTimeout
	var out []GroupStats
	for _, g := range n.Groups() {
		if g.local && g.stores != nil {
			out = append(out, g.stats(hb))
		}
	}
	return out
}

func (g *Group) stats(hb time.Duration) GroupStats {
	_, lid := g.raft.LeaderWithID()
	st := g.raft.Stats()
	m := g.stores.metrics
	return GroupStats{
		Group: g.id, State: g.raft.State().String(), Leader: string(lid),
		Term: g.raft.CurrentTerm(), LastIndex: g.raft.LastIndex(),
		CommitIndex: parseStat(st["commit_index"]), AppliedIndex: g.raft.AppliedIndex(),
		LastContact: parseContact(st["last_contact"]), HeartbeatTimeout: hb,
		LeaderChanges: m.leaderChanges.Load(),
		Apply:         m.apply.Snapshot(), LogStore: m.logStore.Snapshot(), Snapshot: m.snapshot.Snapshot(),
		SnapshotBytes: m.snapshotBytes.Load(),
	}
}

// parseContact reads raft's last_contact stat: "never", "0" (a leader)
// or a duration.
func parseContact(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		return -1
	}
	return d
}

// Ready reports whether this node knows the cluster map and has opened
// the groups it hosts.
func (n *Node) Ready() bool { return n.ready.Load() }

// Leaving reports whether this node is handing off its leaderships to
// leave or stop (HandOff).
func (n *Node) Leaving() bool { return n.leaving.Load() }

// leaderWatch counts the leaders this replica sees elected, from a Raft
// observer, until the group closes, and records each in the node's
// events. An observation dropped because the channel was full is not
// counted (raft does not block on observers).
func (g *Group) leaderWatch() {
	watchLeaders(g.ctx, g.raft, func(leader string) {
		g.stores.metrics.leaderChanges.Add(1)
		g.node.noteLeader(g.id, leader, g.raft.CurrentTerm())
	})
}

// watchLeaders calls seen with the leader r knows at once (if any; it was
// elected before the observer was there) and with every leader r observes
// from then on, until ctx ends.
func watchLeaders(ctx context.Context, r *raft.Raft, seen func(leader string)) {
	ch := make(chan raft.Observation, 16)
	ob := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		lo, ok := o.Data.(raft.LeaderObservation)
		return ok && lo.LeaderID != ""
	})
	r.RegisterObserver(ob)
	defer r.DeregisterObserver(ob)
	if _, lid := r.LeaderWithID(); lid != "" {
		seen(string(lid))
	}
	for {
		select {
		case <-ctx.Done():
			return
		case o := <-ch:
			seen(string(o.Data.(raft.LeaderObservation).LeaderID))
		}
	}
}

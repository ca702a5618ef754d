package server

import (
	"fmt"

	"github.com/slotraft/slotraft/cluster"
)

// Readiness (/readyz): a node is ready to take clients when it knows the
// cluster map, is not leaving, and every group it hosts has a leader it
// is in touch with and is caught up with it. Each check that fails is
// one readyFailure; the checks read local state only (GroupStats), so a
// load balancer may poll every second.

// readyMaxLag is how many committed entries a follower may have yet to
// apply and still count as caught up: a follower under load trails its
// leader's commit by a few batches, one that restores a snapshot or
// replays a log by far more.
const readyMaxLag = 1024

// readyFailure is one failing readiness check: Group is 0 for a check of
// the node itself.
type readyFailure struct {
	Group  uint32
	Reason string
}

func (f readyFailure) String() string {
	if f.Group == 0 {
		return f.Reason
	}
	return fmt.Sprintf("group %d: %s", f.Group, f.Reason)
}

// nodeHealth is what readiness is decided from.
type nodeHealth struct {
	Ready   bool // the map is known and the hosted groups are open
	Leaving bool
	Groups  []cluster.GroupStats
}

// readiness lists the failing checks of h (none: ready).
func readiness(h nodeHealth) []readyFailure {
	var out []readyFailure
	if !h.Ready {
		out = append(out, readyFailure{Reason: "the cluster map is not known yet, or the groups hosted here are not open"})
	}
	if h.Leaving {
		out = append(out, readyFailure{Reason: "the node is leaving (handing off its leaderships)"})
	}
	for _, gs := range h.Groups {
		if reason := groupUnready(gs); reason != "" {
			out = append(out, readyFailure{Group: gs.Group, Reason: reason})
		}
	}
	return out
}

// groupUnready is why one hosted replica is not ready ("" if it is): a
// leader is; a follower must know its leader, have heard from it within
// a heartbeat timeout (after which Raft itself calls an election), and
// have applied within readyMaxLag of the commit index it learnt from it.
func groupUnready(gs cluster.GroupStats) string {
	switch gs.State {
	case "Leader":
		return ""
	case "Follower":
	case "Candidate":
		return "no leader: an election is running"
	default:
		return "the replica is " + gs.State
	}
	if gs.Leader == "" {
		return "no known leader"
	}
	if gs.LastContact < 0 || gs.LastContact > gs.HeartbeatTimeout {
		return fmt.Sprintf("leader %s not heard from within %v", gs.Leader, gs.HeartbeatTimeout)
	}
	if lag := applyLag(gs); lag > readyMaxLag {
		return fmt.Sprintf("%d committed entries not applied yet (at most %d)", lag, readyMaxLag)
	}
	return ""
}

// health reads what readiness needs from the node.
func (s *Server) health() nodeHealth {
	return nodeHealth{Ready: s.n.Ready(), Leaving: s.n.Leaving(), Groups: s.n.GroupStats()}
}

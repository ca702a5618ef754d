package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// HandOff moves every leadership this node holds to another replica of
// the group, so that the node can stop without making its groups wait for
// an election: SIGTERM calls it before Close, and a rolling restart loses
// no request. From then on the node does not take leaderships back (peers
// stop seeing it as a healthy preferred leader). It returns once no group
// is led here, or with an error naming the groups still led when ctx ends.
func (n *Node) HandOff(ctx context.Context) error {
	n.leaving.Store(true)
	hb := n.cfg.raftConfig().HeartbeatTimeout
	if n.meta.isLeader() {
		// The meta group elects a new leader by itself too, but without an
		// election pause for the map and the placement controller.
		err := n.meta.raft.LeadershipTransfer().Error()
		n.log.Info("meta group leadership hand-off", "err", err)
	}
	for {
		led := n.ledGroups()
		if len(led) == 0 {
			return nil
		}
		var failed []error
		for _, g := range led {
			// hashicorp/raft picks the most up-to-date follower.
			if err := g.transferLeadership(nil); err != nil {
				g.log.Warn("leadership hand-off", "err", err)
				failed = append(failed, fmt.Errorf("group %d: %w", g.id, err))
			} else {
				g.log.Info("leadership handed off")
			}
		}
		if len(failed) == len(led) {
			// No replica could take any of them (a one-node group, or every
			// peer down): waiting longer would only delay the stop.
			return fmt.Errorf("hand off leaderships: %w", errors.Join(failed...))
		}
		select {
		case <-ctx.Done():
			if led = n.ledGroups(); len(led) == 0 {
				return nil
			}
			ids := make([]uint32, len(led))
			for i, g := range led {
				ids[i] = g.id
			}
			return fmt.Errorf("hand off leaderships: groups %v still led here: %w", ids, ctx.Err())
		case <-time.After(hb):
		}
	}
}

// ledGroups are the hosted groups this node leads now.
func (n *Node) ledGroups() []*Group {
	var led []*Group
	for _, g := range n.Groups() {
		if g.IsLeader() {
			led = append(led, g)
		}
	}
	return led
}

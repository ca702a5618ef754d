package server

import (
	"context"
	"slices"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/resp"
)

// SENTINEL FAILOVER: in the Sentinel shape it is what it means — the
// master's role moves to its best replica at once — done as Raft does
// it: a leadership transfer of the group to the most up-to-date replica
// gossip sees alive (recorded as the group's preferred leader, so leader
// spreading keeps it there). The reply comes at once, as Sentinel's; the
// facade shows failover_in_progress until the new leader is elected,
// then +switch-master. A proxy (several groups) has nothing to fail over.

// sentinelFailoverState is a SENTINEL FAILOVER in progress.
type sentinelFailoverState struct {
	to string // the replica given the leadership
}

var (
	errFailoverInProgress = resp.NewError("INPROG Failover already in progress")
	errNoGoodReplica      = resp.NewError("NOGOODSLAVE No suitable replica to promote")
)

func cmdSentinelFailover(f *Sentinel, _ *client, args [][]byte) resp.Value {
	progress := f.replicaProgress()
	g := f.theGroup()
	var v resp.Value
	f.mon.refresh(func(o *sentinelObservation) {
		ms := f.mon.master(args[2])
		switch {
		case ms == nil:
			v = resp.Err(errNoSuchMaster)
		case !o.oneGroup() || g == nil || o.group.ID() != g.ID():
			v = resp.Err(resp.Errorf("ERR slotraft's Sentinel facade: master '%s' is a proxy of a cluster of %d slot groups: there is no single master to fail over (docs/sentinel.md)", ms.name, o.groups))
		case ms.failover != nil:
			v = resp.Err(errFailoverInProgress)
		case o.leader == "":
			v = resp.Err(resp.Errorf("ERR slotraft's Sentinel facade: master '%s' is down and its group is electing a new leader: the failover is under way (docs/sentinel.md)", ms.name))
		default:
			to := bestReplica(o, progress)
			if to == "" {
				v = resp.Err(errNoGoodReplica)
				return
			}
			fo := &sentinelFailoverState{to: to}
			if !f.goRun(func() { f.transfer(ms, fo, g.ID()) }) {
				v = resp.Err(errSentinelFailoverClosing)
				return
			}
			ms.failover = fo
			f.log.Info("executing user requested FAILOVER", "master", ms.name, "to", to)
			v = resp.OK()
		}
	})
	return v
}

var errSentinelFailoverClosing = resp.NewError("ERR slotraft's Sentinel facade is closing")

// bestReplica is the follower of the group's leader that gossip sees
// alive, answered the progress query, and applied the most (the smallest
// id on a tie); "" if none.
func bestReplica(o *sentinelObservation, progress map[string]replicaProgress) string {
	best, bestApplied := "", uint64(0)
	ids := slices.Clone(o.members)
	slices.Sort(ids)
	for _, id := range ids {
		p, ok := progress[id]
		if id == o.leader || !ok || !p.ok || !o.alive(id) {
			continue
		}
		if best == "" || p.applied > bestApplied {
			best, bestApplied = id, p.applied
		}
	}
	return best
}

// transfer moves group gid's leadership to fo.to, then ends the failover
// state of ms (whether it succeeded or not: a failed one may be asked
// again).
func (f *Sentinel) transfer(ms *sentinelMaster, fo *sentinelFailoverState, gid uint32) {
	ctx, cancel := context.WithTimeout(f.ctx, 2*cluster.TransferWait)
	defer cancel()
	err := f.s.n.TransferLeader(ctx, gid, fo.to)
	if err != nil {
		f.log.Warn("sentinel FAILOVER: leadership not transferred", "master", ms.name, "to", fo.to, "err", err)
	}
	f.mon.refresh(func(*sentinelObservation) {
		if ms.failover == fo {
			ms.failover = nil
		}
	})
}

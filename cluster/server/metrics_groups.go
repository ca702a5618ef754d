package server

import (
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/slotraft/slotraft/cluster"
)

// Per-group metrics: one series per slot group hosted here (label group),
// from cluster.Node.GroupStats, which reads the local Raft and the
// timings the node records (cluster/raftmetrics.go). A leader also asks
// its followers how far they applied (the bus's control query, the one
// ROLE and WAIT use), for the lag per follower.
var (
	mGroupRole        = metricDesc("group_role", "1 for this replica's current Raft role (leader, follower, candidate, shutdown).", "group", "role")
	mGroupTerm        = metricDesc("group_term", "Current Raft term of this replica.", "group")
	mGroupLastIndex   = metricDesc("group_last_index", "Last index in this replica's Raft log.", "group")
	mGroupCommitIndex = metricDesc("group_commit_index", "Commit index as this replica knows it.", "group")
	mGroupApplied     = metricDesc("group_applied_index", "Last index this replica applied to its state.", "group")
	mGroupApplyLag    = metricDesc("group_apply_lag_entries", "Committed entries this replica has yet to apply.", "group")
	mGroupContact     = metricDesc("group_leader_last_contact_seconds", "A follower: time since it last heard from its leader (-1: never).", "group")
	mGroupLeaderChg   = metricDesc("group_leader_changes_total", "New leaders this replica observed since it opened.", "group")
	mGroupApplyDur    = metricDesc("group_apply_duration_seconds", "Time to apply one log entry to the state machine.", "group")
	mGroupAppendDur   = metricDesc("group_log_append_duration_seconds", "Time to append a batch of entries to the Raft log, fsync included.", "group")
	mGroupSnapDur     = metricDesc("group_snapshot_duration_seconds", "Time to persist a snapshot.", "group")
	mGroupSnapBytes   = metricDesc("group_snapshot_size_bytes", "Size of the last snapshot persisted here (0: none yet).", "group")
	mFollowerLag      = metricDesc("group_follower_lag_entries", "A leader's view: entries of its log a follower has yet to apply.", "group", "follower")
	mFollowerUp       = metricDesc("group_follower_reachable", "A leader's view: 1 when the follower answered how far it applied.", "group", "follower")
)

func groupDescs() []*prometheus.Desc {
	return []*prometheus.Desc{mGroupRole, mGroupTerm, mGroupLastIndex, mGroupCommitIndex, mGroupApplied,
		mGroupApplyLag, mGroupContact, mGroupLeaderChg, mGroupApplyDur, mGroupAppendDur, mGroupSnapDur,
		mGroupSnapBytes, mFollowerLag, mFollowerUp}
}

// collectGroups reports every hosted group, then the followers of those
// led here.
func (s *Server) collectGroups(ch chan<- prometheus.Metric) {
	stats := s.n.GroupStats()
	for _, gs := range stats {
		collectGroup(ch, gs)
	}
	s.collectFollowers(ch, stats)
}

func collectGroup(ch chan<- prometheus.Metric, gs cluster.GroupStats) {
	g := strconv.FormatUint(uint64(gs.Group), 10)
	gauge(ch, mGroupRole, 1, g, strings.ToLower(gs.State))
	gauge(ch, mGroupTerm, float64(gs.Term), g)
	gauge(ch, mGroupLastIndex, float64(gs.LastIndex), g)
	gauge(ch, mGroupCommitIndex, float64(gs.CommitIndex), g)
	gauge(ch, mGroupApplied, float64(gs.AppliedIndex), g)
	gauge(ch, mGroupApplyLag, float64(applyLag(gs)), g)
	contact := gs.LastContact.Seconds()
	if gs.LastContact < 0 {
		contact = -1
	}
	gauge(ch, mGroupContact, contact, g)
	counter(ch, mGroupLeaderChg, float64(gs.LeaderChanges), g)
	histogram(ch, mGroupApplyDur, gs.Apply, g)
	histogram(ch, mGroupAppendDur, gs.LogStore, g)
	histogram(ch, mGroupSnapDur, gs.Snapshot, g)
	gauge(ch, mGroupSnapBytes, float64(gs.SnapshotBytes), g)
}

func histogram(ch chan<- prometheus.Metric, d *prometheus.Desc, h cluster.HistogramSnapshot, labels ...string) {
	ch <- prometheus.MustNewConstHistogram(d, h.Count, h.Sum, h.Buckets, labels...)
}

// applyLag is how many committed entries a replica has yet to apply.
func applyLag(gs cluster.GroupStats) uint64 {
	if gs.CommitIndex > gs.AppliedIndex {
		return gs.CommitIndex - gs.AppliedIndex
	}
	return 0
}

// collectFollowers asks, for every group led here, each follower how far
// it applied (in parallel; a follower that does not answer within the
// bus's query timeout is reported unreachable, with no lag).
func (s *Server) collectFollowers(ch chan<- prometheus.Metric, stats []cluster.GroupStats) {
	var wg sync.WaitGroup
	for _, gs := range stats {
		g, ok := s.n.Group(gs.Group)
		if !ok || !g.IsLeader() {
			continue
		}
		wg.Go(func() {
			collectProgress(ch, gs, g.Followers(s.ctx))
		})
	}
	wg.Wait()
}

func collectProgress(ch chan<- prometheus.Metric, gs cluster.GroupStats, progress []cluster.FollowerProgress) {
	g := strconv.FormatUint(uint64(gs.Group), 10)
	for _, fp := range progress {
		gauge(ch, mFollowerUp, boolValue(fp.Err == nil), g, fp.Peer.ID)
		if fp.Err == nil {
			gauge(ch, mFollowerLag, float64(gs.LastIndex-min(fp.Applied, gs.LastIndex)), g, fp.Peer.ID)
		}
	}
}

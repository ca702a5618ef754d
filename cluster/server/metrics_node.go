package server

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/slotraft/slotraft/cluster"
)

// collectNode reports the node-wide metrics of metrics.go.
func (s *Server) collectNode(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	clients := len(s.clients)
	s.mu.Unlock()
	gauge(ch, mClients, float64(clients))
	counter(ch, mConnections, float64(s.stats.connections.Load()))
	counter(ch, mRejectedConns, float64(s.stats.rejected.Load()))
	counter(ch, mKeyspaceHits, float64(s.cstats.hits.Load()))
	counter(ch, mKeyspaceMisses, float64(s.cstats.misses.Load()))
	counter(ch, mNetIn, float64(s.stats.netIn.Load()))
	counter(ch, mNetOut, float64(s.stats.netOut.Load()))
	mh := s.memOverhead()
	gauge(ch, mMemUsed, float64(mh.total))
	gauge(ch, mMemRSS, float64(mh.rss))
	gauge(ch, mMemDataset, float64(max(s.n.DataBytes(), 0)))
	gauge(ch, mMaxMemory, float64(s.n.Eviction().MaxMemory))
	gauge(ch, mKeys, float64(mh.keys))
	counter(ch, mEvicted, float64(s.n.EvictionStats().EvictedKeys))
	counter(ch, mExpired, float64(s.n.ExpiryStats().ExpiredKeys))
	s.collectCluster(ch)
}

// collectCluster reports the node's view of the cluster: its map, the
// meta group, the bus and gossip, migrations.
func (s *Server) collectCluster(ch chan<- prometheus.Metric) {
	m := s.n.Map()
	gauge(ch, mReady, boolValue(s.n.Ready()))
	gauge(ch, mMapEpoch, float64(m.Epoch))
	gauge(ch, mMetaLeader, boolValue(s.n.MetaLeader() == s.n.Self().ID))
	gauge(ch, mBusConns, float64(s.n.BusConnections()))
	var in, out int
	for _, l := range s.n.BusLinks() {
		if l.Inbound {
			in++
		} else {
			out++
		}
	}
	gauge(ch, mBusLinks, float64(in), "inbound")
	gauge(ch, mBusLinks, float64(out), "outbound")
	counter(ch, mBusAuthRefused, float64(s.n.BusAuthFailures()))
	byState := map[cluster.GossipState]int{}
	for _, st := range s.n.GossipStates() {
		byState[st]++
	}
	for _, st := range []cluster.GossipState{cluster.GossipAlive, cluster.GossipSuspect, cluster.GossipDead, cluster.GossipLeft, cluster.GossipUnknown} {
		gauge(ch, mGossipMembers, float64(byState[st]), string(st))
	}
	gauge(ch, mMigrations, float64(len(m.Migrations)))
	counter(ch, mMigrationsDone, float64(m.Moved))
	gauge(ch, mRebalancing, boolValue(m.Rebalance))
}

// collectCommands reports the per-command counters and latency
// histograms of cmdstats.go, and the error replies by code.
func (s *Server) collectCommands(ch chan<- prometheus.Metric) {
	for _, st := range s.cstats.all {
		calls, rejected, failed := st.calls.Load(), st.rejected.Load(), st.failed.Load()
		if calls == 0 && rejected == 0 && failed == 0 {
			continue
		}
		counter(ch, mCommands, float64(calls), st.name)
		counter(ch, mCommandsFailed, float64(failed), st.name)
		counter(ch, mCommandsRefused, float64(rejected), st.name)
		if h := st.hist.Load(); h != nil {
			count, sum, buckets := h.promBuckets()
			ch <- prometheus.MustNewConstHistogram(mCommandLatency, count, sum, buckets, st.name)
		}
	}
	for _, e := range s.cstats.errorsByCode() {
		counter(ch, mErrors, float64(e.n), e.code)
	}
}

// commandBounds are the upper bounds (seconds) of the command latency
// histograms Prometheus sees: 10 µs (a read served from memory) to 10 s.
var commandBounds = []float64{
	0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
	0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// promBuckets folds h into commandBounds: per bound, how many values are
// at or below it (a fine bucket counts below a bound when its highest
// value is). count is every value recorded; sum, in seconds, is taken
// from the fine buckets' highest values (within about 3% above the true
// sum), so that sum/count is the mean of the same calls even when
// latency-tracking was off for a while (the calls' usec kept counting).
func (h *latencyHist) promBuckets() (count uint64, sum float64, buckets map[float64]uint64) {
	buckets = make(map[float64]uint64, len(commandBounds))
	var sumNs float64
	add := func(i int) {
		n := h.buckets[i].Load()
		count += n
		sumNs += float64(n) * float64(histHighest(i))
	}
	i := 0
	for _, b := range commandBounds {
		ns := uint64(b * 1e9)
		for ; i < histBuckets && histHighest(i) <= ns; i++ {
			add(i)
		}
		buckets[b] = count
	}
	for ; i < histBuckets; i++ {
		add(i)
	}
	return count, sumNs / 1e9, buckets
}

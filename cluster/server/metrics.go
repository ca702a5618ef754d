package server

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// The operator's Prometheus metrics (/metrics, http_ops.go). A collector
// reads, at scrape time, the counters the server and the node already
// keep for INFO, commandstats, errorstats, LATENCY HISTOGRAM, ROLE and
// SLOTRAFT STATUS: serving a command does no work for Prometheus. Every
// metric is built fresh per scrape (prometheus.MustNewConstMetric), so a
// command never called, or a group no longer hosted, has no series.
// Labels are bounded: command names (the table's), error codes (at most
// maxErrorCodes), group ids, node ids, gossip states; never keys or
// client addresses.

// metricDesc is one metric's name, help and variable labels.
func metricDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("slotraft_"+name, help, labels, nil)
}

// Node-wide metrics (metrics_node.go collects them).
var (
	mClients         = metricDesc("connected_clients", "Client connections open now.")
	mConnections     = metricDesc("connections_received_total", "Client connections accepted.")
	mRejectedConns   = metricDesc("rejected_connections_total", "Client connections refused at maxclients.")
	mCommands        = metricDesc("commands_total", "Calls of each command (subcommands apart, e.g. config|get), as INFO commandstats.", "cmd")
	mCommandsFailed  = metricDesc("commands_failed_total", "Calls of each command that answered an error.", "cmd")
	mCommandsRefused = metricDesc("commands_rejected_total", "Calls of each command refused before running (arity, CROSSSLOT, MOVED…).", "cmd")
	mCommandLatency  = metricDesc("command_duration_seconds", "Time to serve each command, from the LATENCY HISTOGRAM histograms (while latency-tracking is yes; the sum from their buckets, within 3%).", "cmd")
	mErrors          = metricDesc("error_replies_total", "Error replies by error code (the reply's first word), as INFO errorstats.", "code")
	mKeyspaceHits    = metricDesc("keyspace_hits_total", "Key lookups by reads that found the key.")
	mKeyspaceMisses  = metricDesc("keyspace_misses_total", "Key lookups by reads that did not find the key.")
	mNetIn           = metricDesc("net_input_bytes_total", "Bytes read from clients.")
	mNetOut          = metricDesc("net_output_bytes_total", "Bytes written to clients.")
	mMemUsed         = metricDesc("memory_used_bytes", "Go heap bytes in objects (INFO used_memory).")
	mMemRSS          = metricDesc("memory_rss_bytes", "Resident set size of the process (INFO used_memory_rss).")
	mMemDataset      = metricDesc("memory_dataset_bytes", "Estimated size of the data of every group hosted here, what maxmemory limits.")
	mMaxMemory       = metricDesc("maxmemory_bytes", "The maxmemory setting (0: no limit).")
	mKeys            = metricDesc("keys", "Keys held by the groups hosted here (replicas included).")
	mEvicted         = metricDesc("evicted_keys_total", "Keys evicted by maxmemory (proposed by the groups led here).")
	mExpired         = metricDesc("expired_keys_total", "Keys deleted by expiry (proposed by the groups led here).")
	mReady           = metricDesc("node_ready", "1 when the node knows the cluster map and has opened its groups.")
	mMapEpoch        = metricDesc("cluster_map_epoch", "Epoch of the cluster map this node has applied.")
	mMetaLeader      = metricDesc("meta_leader", "1 when this node leads the meta group (the cluster map's Raft group).")
	mBusConns        = metricDesc("bus_connections", "Cluster bus connections open now (Raft, gossip, RPC).")
	mBusLinks        = metricDesc("bus_links", "Other nodes of the map this node has a live bus link with, by direction.", "direction")
	mBusAuthRefused  = metricDesc("bus_auth_refused_total", "Bus connections refused by the cluster-secret or certificate check (docs/security.md).")
	mGossipMembers   = metricDesc("gossip_members", "Nodes of the map by their gossip state as seen from here.", "state")
	mMigrations      = metricDesc("migrations_in_flight", "Slot migrations recorded in the cluster map and not finished.")
	mMigrationsDone  = metricDesc("migrations_completed_total", "Slot migrations finished, ever (from the cluster map).")
	mRebalancing     = metricDesc("rebalance_in_progress", "1 while a rebalance is in progress.")
)

// collector is a Server's prometheus.Collector.
type collector struct{ s *Server }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range append(nodeDescs(), groupDescs()...) {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	c.s.collectNode(ch)
	c.s.collectCommands(ch)
	c.s.collectGroups(ch)
}

func nodeDescs() []*prometheus.Desc {
	return []*prometheus.Desc{mClients, mConnections, mRejectedConns, mCommands, mCommandsFailed, mCommandsRefused,
		mCommandLatency, mErrors, mKeyspaceHits, mKeyspaceMisses, mNetIn, mNetOut, mMemUsed, mMemRSS, mMemDataset,
		mMaxMemory, mKeys, mEvicted, mExpired, mReady, mMapEpoch, mMetaLeader, mBusConns, mBusLinks, mBusAuthRefused,
		mGossipMembers, mMigrations, mMigrationsDone, mRebalancing}
}

// registry is the server's own registry (several servers may share a
// process in tests): its collector plus Go's runtime and the process's.
func (s *Server) registry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{s},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

func counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

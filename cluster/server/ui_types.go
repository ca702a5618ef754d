package server

import (
	"time"

	"github.com/slotraft/slotraft/cluster"
)

// The dashboard's JSON (ui.go): what /ui/api/cluster and /ui/api/node
// answer. Every list is bounded: slot ranges and migrations by the 16384
// slots, events by uiMaxEvents, nodes and groups by the cluster's size.

// UICluster is /ui/api/cluster: the cluster as the serving node sees it,
// with every node's figures gathered from its /ui/api/node.
type UICluster struct {
	Self       string    `json:"self"`
	At         time.Time `json:"at"`
	Epoch      uint64    `json:"epoch"`       // the cluster map's
	MetaLeader string    `json:"meta_leader"` // "" if none is known
	Ready      bool      `json:"ready"`       // the serving node knows the map
	// Slots are the owned slots as ranges of one group each, in slot
	// order; a slot in no range has no group (the map is not made yet).
	Slots      []UISlotRange   `json:"slots"`
	Migrations []UIMigration   `json:"migrations"`
	Nodes      []UINode        `json:"nodes"`
	Groups     []UIGroup       `json:"groups"`
	Events     []UIEvent       `json:"events"` // newest first
	Errors     []string        `json:"errors,omitempty"`
	Version    string          `json:"version,omitempty"`
	Gathered   UIGatherTimings `json:"gathered"`
}

// UISlotRange is slots S to E (inclusive) owned by group G.
type UISlotRange struct {
	S uint16 `json:"s"`
	E uint16 `json:"e"`
	G uint32 `json:"g"`
}

// UIMigration is the slots in flight from group From to group To.
type UIMigration struct {
	From   uint32        `json:"from"`
	To     uint32        `json:"to"`
	Count  int           `json:"count"`
	Ranges []UISlotRange `json:"ranges"` // G is To
}

// Node health, as the dashboard colours it: what gossip says, whether a
// status call over the bus is answered, whether the node is ready.
const (
	HealthOK          = "ok"
	HealthSuspect     = "suspect"     // gossip missed probes
	HealthUnreachable = "unreachable" // the status call over the bus failed
	HealthDead        = "dead"        // gossip declared it dead
	HealthLeft        = "left"        // it left on purpose
	HealthNotReady    = "not-ready"   // it answers, but does not know the map or its groups yet
)

// UINode is one node of the map.
type UINode struct {
	ID     string `json:"id"`
	Client string `json:"client"`
	Bus    string `json:"bus"`
	HTTP   string `json:"http,omitempty"` // as it announced it in gossip
	Health string `json:"health"`
	Gossip string `json:"gossip"` // alive, suspect, dead, left, unknown
	// Reachable: it answered the serving node's status call over the bus.
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	Leaving   bool   `json:"leaving,omitempty"`
	Leaders   int    `json:"leaders"`
	Replicas  int    `json:"replicas"`
	// Stats are its own figures (nil when they could not be fetched:
	// StatsError says why).
	Stats      *UINodeStats `json:"stats,omitempty"`
	StatsError string       `json:"stats_error,omitempty"`
}

// UIGroup is one slot group.
type UIGroup struct {
	ID       uint32      `json:"id"`
	Slots    int         `json:"slots"`
	Ranges   []string    `json:"ranges"`
	Leader   string      `json:"leader"` // "" while none is known
	Term     uint64      `json:"term"`   // the highest a replica reported
	Replicas []UIReplica `json:"replicas"`
}

// UIReplica is one replica of a group.
type UIReplica struct {
	Node    string `json:"node"`
	State   string `json:"state"` // Leader, Follower, Candidate, unreachable, missing
	Term    uint64 `json:"term,omitempty"`
	Applied uint64 `json:"applied,omitempty"`
	Lag     uint64 `json:"lag"`
}

// UIEvent is an event one or more nodes observed (the same fact seen by
// several nodes is listed once, with each observer).
type UIEvent struct {
	cluster.Event
	SeenBy []string `json:"seen_by"`
}

// UIGatherTimings say how long the serving node took to gather the view.
type UIGatherTimings struct {
	StatusMS int64 `json:"status_ms"`
	StatsMS  int64 `json:"stats_ms"`
}

// UINodeStats is /ui/api/node: one node's own figures. Rates are over
// the last WindowMS milliseconds (0: not known yet, the first call).
type UINodeStats struct {
	ID        string    `json:"id"`
	At        time.Time `json:"at"`
	Version   string    `json:"version,omitempty"`
	Ready     bool      `json:"ready"`
	Clients   int       `json:"clients"`
	Keys      uint64    `json:"keys"`
	UsedBytes uint64    `json:"used_bytes"`
	// OpsPerSec is INFO's instantaneous_ops_per_sec (the mean rate of
	// the last 1.6 s); NetIn/OutKBps its instantaneous_input/output_kbps.
	OpsPerSec  float64 `json:"ops_per_sec"`
	NetInKBps  float64 `json:"net_in_kbps"`
	NetOutKBps float64 `json:"net_out_kbps"`
	// Latency of the commands that ran here over the window (all
	// commands together), in microseconds; Calls is how many that is.
	WindowMS int64            `json:"window_ms"`
	Calls    uint64           `json:"calls"`
	P50us    float64          `json:"p50_us"`
	P99us    float64          `json:"p99_us"`
	MaxUs    float64          `json:"max_us"`
	Groups   []UIGroupReplica `json:"groups"`
	Events   []cluster.Event  `json:"events"` // oldest first, at most cluster's ring size
}

// UIGroupReplica is one group this node hosts, as its replica sees it.
type UIGroupReplica struct {
	Group   uint32 `json:"group"`
	State   string `json:"state"`
	Leader  string `json:"leader"`
	Term    uint64 `json:"term"`
	Applied uint64 `json:"applied"`
	Commit  uint64 `json:"commit"`
}

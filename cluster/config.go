package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	"github.com/slotraft/slotraft/cluster/transport"
)

// Peer is one node of the cluster as every node knows it.
type Peer struct {
	ID         string // stable node id (Raft server id)
	ClientAddr string // advertised client host:port (MOVED, CLUSTER SLOTS)
	BusAddr    string // advertised bus host:port (Raft server address)
}

// Config configures a Node. Zero values take the documented defaults.
type Config struct {
	ID              string
	ClientBind      string // used by the front; also the default bus port base
	ClientAdvertise string
	BusBind         string // default: ClientBind's port + 10000
	BusAdvertise    string // default: this node's Peers entry, else BusBind
	DataDir         string
	// LogStore is where groups created from now on keep their Raft log:
	// LogStorePebble (default), LogStoreBolt or LogStoreWAL. A group's
	// directory records its choice (logchoice.go), so existing groups
	// keep theirs whatever this says.
	LogStore string

	// Peers lists every node, self included, in the same order on every node:
	// a static start where every node bootstraps the meta group with them.
	// Empty (and no Join, no BootstrapExpect) means a single-node cluster of
	// this node, which others may join later.
	Peers []Peer
	// Join lists seed bus addresses (host:port, DNS names resolved at each
	// try) of a running cluster; this node waits to be added to the map.
	Join []string
	// BootstrapExpect, if set, waits until gossip sees that many nodes; the
	// one with the smallest id then bootstraps the meta group with them.
	BootstrapExpect int
	// Bootstrap makes this node create a new cluster of itself even when
	// Join is set (the first pod of a StatefulSet). Never repeated: a node
	// with Raft state on disk does not bootstrap.
	Bootstrap bool
	// Meet starts the node as a Redis Cluster node starts: alone, without
	// slots and without a cluster, until CLUSTER MEET joins it to another
	// node (meet.go). Excludes the other start modes.
	Meet     bool
	Groups   int // slot groups created at bootstrap, default 3
	Replicas int // replicas per group, default 3
	// GroupsPerNode makes the placement controller create slot groups as
	// nodes join, up to this many per active node, and spread the slots
	// over them; 0 keeps the number of groups the cluster started with.
	GroupsPerNode int
	// MoveParallel is how many slots a source group's leader moves at
	// once (default 16): their entries share the group's commits; more
	// moves faster but slows clients down (docs/benchmarks.md).
	MoveParallel int
	// DeadAfter is how long a node may be unreachable before the placement
	// controller replaces its replicas; default 30 s.
	DeadAfter time.Duration
	Logger    *slog.Logger
	// ClusterSecret, if set (at least transport.MinSecretLen bytes), is
	// proven by both ends of every bus connection, which then runs
	// encrypted: a process without it cannot join, gossip, vote, propose
	// or import (docs/security.md). Nil leaves the bus open to anyone who
	// reaches its port.
	ClusterSecret transport.Secret
	// BusTLS, if set, makes every bus connection TLS 1.3 between
	// certificates of the operator's CA that name the nodes' ids
	// (docs/security.md); with ClusterSecret too, the secret is proven
	// first.
	BusTLS *transport.BusTLS

	// Raft timing; zero takes hashicorp/raft's production defaults.
	RaftHeartbeat, RaftElection, RaftLeaderLease, RaftCommit time.Duration

	// Snapshots: zero takes hashicorp/raft's defaults (8192 entries, 120 s,
	// 10240 trailing logs). Tests lower them.
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64

	// BusListener, if set, is used instead of listening on BusBind (tests
	// listen on 127.0.0.1:0 first to learn the addresses they put in Peers).
	BusListener net.Listener
	// Faults injects link faults between in-process nodes (tests only).
	Faults *transport.Faults
	// GossipFast shortens gossip's probe intervals (tests): a dead node is
	// noticed in about a second instead of memberlist's LAN defaults.
	GossipFast bool
	// FrontEnds are announced in gossip from the start (frontends.go), so
	// a restarted node never shows the others a moment without them.
	FrontEnds FrontEnds
}

const busPortOffset = 10000

// withDefaults validates c and fills in defaults; it returns this node's Peer.
func (c Config) withDefaults() (Config, Peer, error) {
	if c.ID == "" {
		return c, Peer{}, errors.New("cluster: config: empty node id")
	}
	if c.DataDir == "" {
		return c, Peer{}, errors.New("cluster: config: empty data dir")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Groups <= 0 {
		c.Groups = 3
	}
	switch c.LogStore {
	case "":
		c.LogStore = LogStorePebble
	case LogStorePebble, LogStoreBolt, LogStoreWAL:
	default:
		return c, Peer{}, fmt.Errorf("cluster: config: log store %q: want %s, %s or %s", c.LogStore, LogStorePebble, LogStoreBolt, LogStoreWAL)
	}
	if c.ClusterSecret != nil && len(c.ClusterSecret) < transport.MinSecretLen {
		return c, Peer{}, fmt.Errorf("cluster: config: cluster secret of %d bytes: want at least %d", len(c.ClusterSecret), transport.MinSecretLen)
	}
	if c.Groups > 1024 {
		return c, Peer{}, fmt.Errorf("cluster: config: %d groups is too many", c.Groups)
	}
	if c.BusBind == "" && c.BusListener == nil {
		b, err := busFor(c.ClientBind)
		if err != nil {
			return c, Peer{}, fmt.Errorf("cluster: config: bus bind: %w", err)
		}
		c.BusBind = b
	}
	self, err := c.selfPeer()
	if err != nil {
		return c, Peer{}, err
	}
	if c.Bootstrap && len(c.Peers) > 1 {
		return c, Peer{}, errors.New("cluster: config: bootstrap creates a cluster of this node alone: it excludes a peer list")
	}
	if c.BootstrapExpect < 0 || (c.BootstrapExpect > 0 && (c.Bootstrap || len(c.Peers) > 1)) {
		return c, Peer{}, errors.New("cluster: config: bootstrap-expect excludes bootstrap and a peer list")
	}
	if c.Meet && (c.Bootstrap || c.BootstrapExpect > 0 || len(c.Peers) > 1 || len(c.Join) > 0) {
		return c, Peer{}, errors.New("cluster: config: meet excludes the other start modes (bootstrap, bootstrap-expect, peers, join)")
	}
	if len(c.Peers) == 0 {
		c.Peers = []Peer{self}
	}
	if c.Replicas <= 0 {
		c.Replicas = 3
	}
	if c.MoveParallel <= 0 {
		c.MoveParallel = 16
	}
	if c.DeadAfter <= 0 {
		c.DeadAfter = 30 * time.Second
	}
	return c, self, nil
}

// selfPeer finds this node in Peers (checking ids are unique) or builds it.
func (c Config) selfPeer() (Peer, error) {
	seen := make(map[string]bool, len(c.Peers))
	var self Peer
	found := false
	for _, p := range c.Peers {
		if p.ID == "" || p.BusAddr == "" || seen[p.ID] {
			return Peer{}, fmt.Errorf("cluster: config: bad or duplicate peer %+v", p)
		}
		seen[p.ID] = true
		if p.ID == c.ID {
			self, found = p, true
		}
	}
	if len(c.Peers) > 0 && !found {
		return Peer{}, fmt.Errorf("cluster: config: node %q is not in Peers", c.ID)
	}
	if found {
		if c.BusAdvertise != "" && c.BusAdvertise != self.BusAddr {
			return Peer{}, fmt.Errorf("cluster: config: BusAdvertise %s differs from Peers entry %s", c.BusAdvertise, self.BusAddr)
		}
		return self, nil
	}
	self = Peer{ID: c.ID, ClientAddr: c.ClientAdvertise, BusAddr: c.BusAdvertise}
	if self.ClientAddr == "" {
		self.ClientAddr = c.ClientBind
	}
	if self.BusAddr == "" {
		self.BusAddr = c.BusBind
		if c.BusListener != nil {
			self.BusAddr = c.BusListener.Addr().String()
		}
	}
	return self, nil
}

// busFor is the default bus address for a client address: port + 10000.
func busFor(client string) (string, error) {
	host, port, err := net.SplitHostPort(client)
	if err != nil {
		return "", err
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p+busPortOffset > 65535 {
		return "", fmt.Errorf("client port %q leaves no room for the bus port", port)
	}
	return net.JoinHostPort(host, strconv.Itoa(p+busPortOffset)), nil
}

// raftConfig builds the hashicorp/raft configuration for one group.
func (c Config) raftConfig() *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.ID)
	setIf(&rc.HeartbeatTimeout, c.RaftHeartbeat)
	setIf(&rc.ElectionTimeout, c.RaftElection)
	setIf(&rc.LeaderLeaseTimeout, c.RaftLeaderLease)
	setIf(&rc.CommitTimeout, c.RaftCommit)
	setIf(&rc.SnapshotThreshold, c.SnapshotThreshold)
	setIf(&rc.SnapshotInterval, c.SnapshotInterval)
	setIf(&rc.TrailingLogs, c.TrailingLogs)
	return rc
}

func setIf[T comparable](dst *T, v T) {
	var zero T
	if v != zero {
		*dst = v
	}
}

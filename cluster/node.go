package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
	"github.com/slotraft/slotraft/cluster/transport"
	"github.com/slotraft/slotraft/slots"
)

// ErrNotLeader means this node cannot serve the request for the group, and
// nothing was proposed: the caller may redirect to the leader.
var ErrNotLeader = errors.New("not the leader")

// Node is one slotraft node: the groups it hosts and the bus they share.
type Node struct {
	cfg    Config
	log    *slog.Logger
	self   Peer
	peers  []Peer
	byID   map[string]Peer
	groups []*Group
	mux    *transport.Mux
	rpc    rpcTable // node-to-node services (rpc.go)
	gossip *gossip  // liveness of the other nodes (gossip.go)
	ready  atomic.Bool
	// leaving is set by HandOff: this node no longer offers itself as a
	// leader (it answers control queries as if it hosted nothing, so no
	// peer hands a leadership back to it).
	leaving atomic.Bool
	// leaveReq is closed by RequestLeave (SLOTRAFT LEAVE): the process
	// running the node leaves as on SIGTERM (leave.go).
	leaveReq  chan struct{}
	leaveOnce sync.Once

	ctx       context.Context // cancelled by Close
	cancel    context.CancelFunc
	bgMu      sync.Mutex // guards wg.Add against Close's Wait
	closing   bool
	wg        sync.WaitGroup // background goroutines
	closeOnce sync.Once
	closeErr  error

	keyspace keyspaceEvents // notify-keyspace-events and where events go (notify.go)
}

// NewNode opens (or bootstraps) the groups this node replicates and starts
// the bus listener.
func NewNode(cfg Config) (*Node, error) {
	cfg, self, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	n := &Node{
		cfg:   cfg,
		log:   cfg.Logger.With("node", cfg.ID),
		self:  self,
		peers: append([]Peer(nil), cfg.Peers...),
		byID:  make(map[string]Peer, len(cfg.Peers)),

		leaveReq: make(chan struct{}),
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.rpc.handle(svcStatus, n.serveStatus)
	n.rpc.handle(svcSetting, n.serveSetting)
	for _, p := range n.peers {
		n.byID[p.ID] = p
	}
	n.groups = placeGroups(n, cfg.Groups, cfg.Replicas)
	ln := cfg.BusListener
	if ln == nil {
		if ln, err = net.Listen("tcp", cfg.BusBind); err != nil {
			n.cancel()
			return nil, fmt.Errorf("cluster: bus listen: %w", err)
		}
	}
	n.mux, err = transport.New(transport.Config{
		Listener: ln, LocalID: self.ID, Advertise: self.BusAddr,
		Faults: cfg.Faults, Logger: n.log, Control: n.control, Handler: n.rpc.serve,
	})
	if err != nil {
		_ = ln.Close()
		n.cancel()
		return nil, err
	}
	for _, g := range n.groups {
		if !g.local {
			continue
		}
		if err := g.open(); err != nil {
			_ = n.Close()
			return nil, fmt.Errorf("cluster: group %d: %w", g.id, err)
		}
	}
	n.ready.Store(true)
	for _, g := range n.groups {
		if g.local {
			g.start()
		}
	}
	if err := n.startGossip(); err != nil {
		_ = n.Close()
		return nil, err
	}
	return n, nil
}

// placeGroups builds the static cluster map: group i (id i+1) owns
// slots.Split(count)[i] and is replicated on replicas consecutive peers
// starting at peer i mod N.
func placeGroups(n *Node, count, replicas int) []*Group {
	ranges := slots.Split(count)
	groups := make([]*Group, count)
	for i := range groups {
		g := &Group{node: n, id: uint32(i + 1), ranges: []slots.Range{ranges[i]}}
		for k := range replicas {
			p := n.peers[(i+k)%len(n.peers)]
			g.replicas = append(g.replicas, p)
			g.local = g.local || p.ID == n.self.ID
		}
		groups[i] = g
	}
	return groups
}

// Close stops the node's loops, then shuts down every Raft group, then the
// bus. Requests in flight get ErrNotLeader (never proposed) or an outcome
// from Raft. The loops stop while Raft still runs because hashicorp/raft
// never answers some futures (VerifyLeader, LeadershipTransfer) that are
// still queued when it shuts down.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		n.bgMu.Lock()
		n.closing = true
		n.bgMu.Unlock()
		n.cancel()
		if n.gossip != nil {
			n.gossip.stop(gossipLeaveTimeout)
		}
		n.wg.Wait()
		var errs []error
		for _, g := range n.groups {
			if err := g.shutdown(); err != nil {
				errs = append(errs, fmt.Errorf("group %d: %w", g.id, err))
			}
		}
		for _, g := range n.groups {
			if err := g.closeStores(); err != nil {
				errs = append(errs, fmt.Errorf("group %d: %w", g.id, err))
			}
		}
		if n.mux != nil {
			if err := n.mux.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, err)
			}
		}
		n.closeErr = errors.Join(errs...)
	})
	return n.closeErr
}

// Self is this node.
func (n *Node) Self() Peer { return n.self }

// Peers is every node, in configuration order.
func (n *Node) Peers() []Peer { return append([]Peer(nil), n.peers...) }

// Groups is every slot group of the cluster, hosted here or not, by id.
func (n *Node) Groups() []*Group { return append([]*Group(nil), n.groups...) }

// GroupOf is the group that owns slot.
func (n *Node) GroupOf(slot uint16) *Group {
	for _, g := range n.groups {
		for _, r := range g.ranges {
			if r.Contains(slot) {
				return g
			}
		}
	}
	return nil
}

// BusAddr is the bus listener's bound address.
func (n *Node) BusAddr() string { return n.mux.Addr().String() }

// Leader is g's current leader as known here: from the local Raft for a
// hosted group, else from a control query to one of its replicas (cached
// for leaderTTL, refreshed in the background when stale).
func (n *Node) Leader(g *Group) (Peer, bool) {
	if g.local {
		_, id := g.raft.LeaderWithID()
		p, ok := n.byID[string(id)]
		return p, ok
	}
	return g.remoteLeader()
}

// control answers the bus's control queries about hosted groups.
func (n *Node) control(id uint32) (transport.Status, bool) {
	if !n.ready.Load() || n.leaving.Load() || id == 0 || int(id) > len(n.groups) {
		return transport.Status{}, false
	}
	g := n.groups[id-1]
	if !g.local {
		return transport.Status{}, false
	}
	addr, lid := g.raft.LeaderWithID()
	return transport.Status{
		LeaderID: string(lid), LeaderAddr: string(addr),
		Term: g.raft.CurrentTerm(), LastIndex: g.raft.LastIndex(), AppliedIndex: g.raft.AppliedIndex(),
	}, true
}

// goBackground runs fn as a node goroutine that Close waits for; false
// (fn not run) once the node is closing.
func (n *Node) goBackground(fn func()) bool {
	n.bgMu.Lock()
	defer n.bgMu.Unlock()
	if n.closing {
		return false
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		fn()
	}()
	return true
}

// raftServers is the Raft configuration of a group's replicas.
func raftServers(peers []Peer) raft.Configuration {
	var c raft.Configuration
	for _, p := range peers {
		c.Servers = append(c.Servers, raft.Server{
			Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.BusAddr),
		})
	}
	return c
}

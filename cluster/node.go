package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/slotraft/slotraft/cluster/logstore"
	"github.com/slotraft/slotraft/cluster/transport"
)

// ErrNotLeader means this node cannot serve the request for the group, and
// nothing was proposed: the caller may redirect to the leader.
var ErrNotLeader = errors.New("not the leader")

// requestTimeout bounds how long the node's own proposals and calls for a
// group wait (the front end has its own for clients' commands).
const requestTimeout = 10 * time.Second

// Node is one slotraft node: the groups it hosts and the bus they share.
type Node struct {
	cfg    Config
	log    *slog.Logger
	self   Peer
	ms     atomic.Pointer[mapState] // the cluster map as used here (mapstate.go)
	meta   *metaGroup               // the meta group's replica here (metagroup.go)
	mux    *transport.Mux
	rpc    rpcTable   // node-to-node services (rpc.go)
	gossip *gossip    // liveness of the other nodes (gossip.go)
	fwd    *forwarder // published messages to the other nodes (forward.go)
	// expiryPausedUntil: until this Unix time in ns, no group led here
	// proposes active expiry (CLIENT PAUSE, expiry.go).
	expiryPausedUntil atomic.Int64
	expiryCfg         atomic.Pointer[ExpiryConfig] // hz and effort (expiry_config.go)
	// ready: the map is known and the hosted groups are open.
	ready atomic.Bool
	uid   string // the data directory's id (identity.go)
	// tlsPort is the client TLS port this node announces in gossip (0:
	// none), which other nodes name in redirects for TLS clients.
	tlsPort atomic.Int64
	// frontEnds: the Sentinel facade and proxy addresses announced in
	// gossip (frontends.go); nil until set.
	frontEnds   atomic.Pointer[FrontEnds]
	frontEndsMu sync.Mutex    // serialises changes of frontEnds
	reports     reportHandler // what this node reports on itself (report.go)
	// stateMu serialises map reconciliation against Close's shutdown.
	stateMu     sync.Mutex
	removedSeen uint64 // incarnation whose removal was logged (reconcile.go)
	// leaving is set by HandOff: this node no longer offers itself as a
	// leader (it answers control queries as if it hosted nothing, so no
	// peer hands a leadership back to it).
	leaving atomic.Bool
	// leaveReq is closed by RequestLeave (SLOTRAFT LEAVE): the process
	// running the node leaves as on SIGTERM (leave.go).
	leaveReq  chan struct{}
	finishc   chan finishReq // slot flips for finishLoop (mover.go)
	leaveOnce sync.Once

	ctx       context.Context // cancelled by Close
	cancel    context.CancelFunc
	bgMu      sync.Mutex // guards wg.Add against Close's Wait
	closing   bool
	wg        sync.WaitGroup // background goroutines
	closeOnce sync.Once
	closeErr  error

	keyspace keyspaceEvents // notify-keyspace-events and where events go (notify.go)
	tracking keyTracking    // client-side caching's touched keys (tracking.go)
	evict    *evictor       // maxmemory and eviction (eviction.go)
	expiry   expiryStats    // INFO's expired_* counters (expiry.go)
	lazyfree lazyFreeStats  // INFO's lazyfreed_objects (lazyfree.go)
	saves    saveState      // SAVE / BGSAVE: snapshots of every hosted group (save.go)
	scripts  busyScripts    // the scripts running here (busy_scripts.go)
	meeting  meetState      // CLUSTER MEET and an unmet node's claimed slots (meet.go)
	settings groupSettings  // the CONFIG values the groups led here take (group_settings.go)
	// monitoring: the front end has MONITOR clients (notify.go).
	monitoring atomic.Bool
	events     eventRing              // what this node observed recently (events.go)
	httpAddr   atomic.Pointer[string] // operator HTTP address announced in gossip (gossip.go)

	// raftlog is the node-wide Raft log store (raftstore.go); nil when no
	// group uses it.
	raftlog *logstore.DB
}

// NewNode starts the bus, opens the node-wide Raft log store (dropping the
// logs of group directories that were deleted), gossip and the meta group;
// the slot groups this node replicates are opened as the cluster map arrives (reconcile.go), so
// NewNode does not wait for the other nodes.
func NewNode(cfg Config) (*Node, error) {
	cfg, self, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	n := &Node{
		cfg:  cfg,
		log:  cfg.Logger.With("node", cfg.ID),
		self: self,

		leaveReq: make(chan struct{}),
		finishc:  make(chan finishReq),
		evict:    newEvictor(),
		settings: groupSettings{wake: make(chan struct{}, 1)},
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.frontEnds.Store(&cfg.FrontEnds)
	n.saves.last = time.Now()
	n.ms.Store(emptyState(self))
	n.rpc.handle(svcStatus, n.serveStatus)
	n.rpc.handle(svcEntry, n.serveGroupEntry)
	n.rpc.handle(svcFunction, n.serveFunctionRPC) // FUNCTION changes for groups led here (function_fanout.go)
	n.fwd = newForwarder(n)
	n.rpc.handle(svcPublish, n.fwd.serveRPC) // messages published on other nodes (forward.go)
	n.rpc.handle(svcReport, n.serveReport)   // the front end's report on itself (report.go)
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
		Secret: cfg.ClusterSecret, TLS: cfg.BusTLS, PeerID: n.busPeerID,
	})
	if err != nil {
		_ = ln.Close()
		n.cancel()
		return nil, err
	}
	if err := n.openRaftLog(); err != nil {
		_ = n.Close()
		return nil, fmt.Errorf("cluster: raft log store: %w", err)
	}
	if n.uid, err = loadUID(cfg.DataDir); err != nil {
		_ = n.Close()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if err := n.openMeta(); err != nil {
		_ = n.Close()
		return nil, fmt.Errorf("cluster: meta group: %w", err)
	}
	n.rpc.handle(svcMeta, n.serveMeta) // only now: it reads n.meta
	n.rpc.handle(svcMetaEpoch, n.serveMetaEpoch)
	if cfg.Meet {
		if err := n.loadClaims(); err != nil {
			_ = n.Close()
			return nil, fmt.Errorf("cluster: %w", err)
		}
	}
	n.rpc.handle(svcMeet, n.serveMeet)
	if err := n.startGossip(); err != nil {
		_ = n.Close()
		return nil, err
	}
	if !n.meta.existing && n.cfg.BootstrapExpect > 0 {
		n.goBackground(n.bootstrapExpectLoop)
	}
	n.reconcile() // from the map on disk, so a restarted node serves at once
	n.goBackground(n.reconcileLoop)
	n.goBackground(func() { // meta leader changes, for the events (events.go)
		watchLeaders(n.ctx, n.meta.raft, func(leader string) { n.noteLeader(MetaGroupID, leader, n.meta.raft.CurrentTerm()) })
	})
	n.goBackground(n.controlLoop)
	n.goBackground(n.finishLoop)
	n.goBackground(n.evictLoop)
	n.goBackground(n.settingsLoop)
	return n, nil
}

// Close stops the node's loops, then shuts down every Raft group, then the
// bus, then the node-wide log store the groups wrote to. Requests in flight get ErrNotLeader (never proposed) or an outcome
// from Raft. The loops stop while Raft still runs because hashicorp/raft
// never answers some futures (VerifyLeader, LeadershipTransfer) that are
// still queued when it shuts down.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		n.bgMu.Lock()
		n.closing = true
		n.bgMu.Unlock()
		n.cancel()
		n.StopScripts() // read-only scripts would hold their groups' Apply (busy_scripts.go)
		if n.gossip != nil {
			n.gossip.stop(gossipLeaveTimeout)
		}
		n.wg.Wait()
		n.stateMu.Lock()
		defer n.stateMu.Unlock()
		var errs []error
		groups := n.state().groups
		for _, g := range groups {
			if err := g.shutdown(); err != nil {
				errs = append(errs, fmt.Errorf("group %d: %w", g.id, err))
			}
		}
		for _, g := range groups {
			if err := g.closeStores(); err != nil {
				errs = append(errs, fmt.Errorf("group %d: %w", g.id, err))
			}
		}
		if n.meta != nil {
			if err := n.meta.close(); err != nil {
				errs = append(errs, fmt.Errorf("meta group: %w", err))
			}
		}
		if n.mux != nil {
			if err := n.mux.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, err)
			}
		}
		// Last: every group that wrote to it is shut down.
		if n.raftlog != nil {
			if err := n.raftlog.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		n.closeErr = errors.Join(errs...)
	})
	return n.closeErr
}

// Self is this node.
func (n *Node) Self() Peer { return n.self }

// BusAddr is the bus listener's bound address.
func (n *Node) BusAddr() string { return n.mux.Addr().String() }

// BusConnections is how many cluster bus connections this node has open
// (INFO's cluster_connections).
func (n *Node) BusConnections() int { return n.mux.Conns() }

// Leader is g's current leader as known here: from the local Raft for a
// hosted group, else from a control query to one of its replicas (cached
// for leaderTTL, refreshed in the background when stale).
func (n *Node) Leader(g *Group) (Peer, bool) {
	if g == nil {
		return Peer{}, false
	}
	if g.local {
		_, id := g.raft.LeaderWithID()
		return n.peer(string(id))
	}
	return g.remoteLeader()
}

// control answers the bus's control queries about hosted groups.
func (n *Node) control(id uint32) (transport.Status, bool) {
	if n.leaving.Load() {
		return transport.Status{}, false
	}
	if id == MetaGroupID && n.meta != nil {
		return raftStatus(n.meta.raft), true
	}
	g, ok := n.Group(id)
	if !n.ready.Load() || !ok || !g.local {
		return transport.Status{}, false
	}
	return raftStatus(g.raft), true
}

func raftStatus(r *raft.Raft) transport.Status {
	addr, lid := r.LeaderWithID()
	return transport.Status{
		LeaderID: string(lid), LeaderAddr: string(addr),
		Term: r.CurrentTerm(), LastIndex: r.LastIndex(), AppliedIndex: r.AppliedIndex(),
	}
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

package cluster

import (
	"context"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/slots"
)

// Group is one slot group: a Raft group replicated on a few nodes. A Group
// not hosted here (Local false) only knows its slots, replicas and leader.
type Group struct {
	node  *Node
	id    uint32
	lay   atomic.Pointer[layout] // slots and replicas, from the cluster map
	local bool                   // fixed for the object's life (reconcile.go swaps objects)

	// ctx ends when the node closes or stops hosting the group; the
	// group's goroutines (wg) watch it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// Hosted groups only.
	log  *slog.Logger
	raft *raft.Raft
	// raftReady is raft once open has set it: the FSM's hooks, which Raft
	// may call while it replays its log inside NewRaft, read this one.
	raftReady atomic.Pointer[raft.Raft]
	fsm       *fsm.FSM
	stores    *raftHandle // the Raft's stores (raftstore.go)
	propc     chan *proposal
	inflight  chan inflight
	// applyMu orders raft.Apply against the start of a leadership
	// transfer (transfer.go); inflightN counts handed, unanswered entries.
	applyMu      sync.Mutex
	transferring bool
	inflightN    atomic.Int64
	readc        chan *readWaiter
	lastNow      int64          // proposer goroutine only
	barrier      atomic.Uint64  // term of the last successful barrier (readindex.go)
	readRounds   atomic.Uint64  // read-index rounds run (readindex.go)
	blocks       *blockRegistry // blocked clients' waiters (blocking.go)
	// moveSeq numbers this leader's imports into other groups (mover.go):
	// with the term, the fence that refuses a delayed, older copy.
	moveSeq atomic.Uint64
	// fnCopied is, per target group, the FUNCTION DUMP payload the mover
	// last gave it (mover.go).
	fnMu     sync.Mutex
	fnCopied map[uint32]string
	// origins are the tagged proposals' origins of the entries in flight
	// (tracking.go).
	origins entryOrigins

	// Not-hosted groups: leader learned from a replica.
	lmu        sync.Mutex
	leader     Peer
	leaderOK   bool
	leaderAt   time.Time
	refreshing bool
}

const (
	logCacheSize   = 512
	snapshotRetain = 2
	leaderTTL      = time.Second
	queryTimeout   = 300 * time.Millisecond
)

// layout is where a group lives: the slots it owns and its replicas as
// the cluster map says, preferred leader first. Never modified; a map
// change stores a new one.
type layout struct {
	ranges   []slots.Range
	replicas []Peer
}

// newGroup is a group object of node n; hosted ones are opened by open.
func newGroup(n *Node, id uint32, lay *layout, local bool) *Group {
	g := &Group{node: n, id: id, local: local}
	g.lay.Store(lay)
	g.ctx, g.cancel = context.WithCancel(n.ctx)
	return g
}

func (g *Group) layout() *layout { return g.lay.Load() }

// ID is the group id (1-based).
func (g *Group) ID() uint32 { return g.id }

// Ranges are the slots the group owns.
func (g *Group) Ranges() []slots.Range { return append([]slots.Range(nil), g.layout().ranges...) }

// Replicas are the ids of the nodes that host the group, preferred leader first.
func (g *Group) Replicas() []string {
	reps := g.layout().replicas
	ids := make([]string, len(reps))
	for i, p := range reps {
		ids[i] = p.ID
	}
	return ids
}

// Local reports whether this node hosts a replica of the group.
func (g *Group) Local() bool { return g != nil && g.local }

// IsLeader reports whether this node's replica is the group's Raft leader.
func (g *Group) IsLeader() bool { return g != nil && g.local && g.raft.State() == raft.Leader }

// Term is the local replica's current Raft term (0 if not hosted here).
func (g *Group) Term() uint64 {
	if !g.Local() {
		return 0
	}
	return g.raft.CurrentTerm()
}

// AppliedIndex is the last log index the local replica applied (0 if not
// hosted here).
func (g *Group) AppliedIndex() uint64 {
	if !g.Local() {
		return 0
	}
	return g.raft.AppliedIndex()
}

// TransferLeadership hands the leadership of a group led here to its most
// up-to-date follower.
func (g *Group) TransferLeadership() error {
	if !g.IsLeader() {
		return ErrNotLeader
	}
	return g.transferLeadership(nil)
}

// State is the local replica's state, read-only, with no leadership
// check: for state that needs no linearizable read (migration marks);
// nil if the group is not hosted here.
func (g *Group) State() fsm.Reader {
	if !g.Local() {
		return nil
	}
	return g.fsm.State()
}

// ReadStale runs fn on the local replica's state, with no leadership check
// (READONLY connections): ErrNotLeader if the group is not hosted here.
func (g *Group) ReadStale(fn func(st fsm.Reader)) error {
	if !g.Local() {
		return ErrNotLeader
	}
	fn(g.fsm.State())
	return nil
}

// groupDir is where group id keeps its Raft state.
func (n *Node) groupDir(id uint32) string {
	return filepath.Join(n.cfg.DataDir, "groups", strconv.FormatUint(uint64(id), 10))
}

// open creates or reopens the group's Raft under DataDir/groups/<id>/.
// With boot set and no existing state, it bootstraps that replica set
// (only the replicas a group is created with do; replicas added later
// receive the group from its leader).
func (g *Group) open(boot []Peer) error {
	n := g.node
	g.log = n.log.With("group", g.id)
	g.fsm = fsm.New(g.id, g.log)
	g.blocks = newBlockRegistry(g)
	g.fsm.SetBlockingHook(g.blocks.onEvent)
	g.fsm.SetNotifyHook(g.notifyClasses, g.publishEvents) // keyspace notifications (notify.go)
	g.fsm.SetCountHook(n.countApplied)                    // expired_keys, rdb_changes_since_last_save
	g.fsm.SetTrackHook(g.trackingOn, g.trackKeys)         // client-side caching (tracking.go)
	g.fsm.SetAccessHook(n.accessSettings)                 // access metadata (eviction.go)
	g.fsm.SetUserParser(n.parseScriptUser)                // scripts' calls checked as their caller (script_user.go)
	// the node's record of running scripts (busy_scripts.go)
	g.fsm.SetScriptHook(func(r fsm.ScriptRun) func() { return n.scripts.start(g.id, r) })
	var bootFn func(*raft.Raft) error
	if len(boot) > 0 {
		bootFn = func(r *raft.Raft) error { return r.BootstrapCluster(raftServers(boot)).Error() }
	}
	h, err := n.openRaft(n.groupDir(g.id), g.id, g.fsm, g.log, bootFn)
	if err != nil {
		return err
	}
	g.raft, g.stores = h.raft, h
	g.raftReady.Store(h.raft)
	g.propc = make(chan *proposal, 1024)
	g.inflight = make(chan inflight, maxInflight)
	g.readc = make(chan *readWaiter, 1024)
	return nil
}

// start runs the hosted group's goroutines.
func (g *Group) start() {
	for _, fn := range []func(){g.proposeLoop, g.respondLoop, g.readLoop, g.expiryLoop, g.spreadLoop, g.blockLoop, g.memberLoop, g.moveLoop, g.leaderWatch} {
		g.wg.Add(1)
		if !g.node.goBackground(func() { defer g.wg.Done(); fn() }) {
			g.wg.Done()
		}
	}
}

// shutdown stops the group's Raft (and with it its transport).
func (g *Group) shutdown() error {
	if g.raft == nil {
		return nil
	}
	return g.raft.Shutdown().Error()
}

func (g *Group) closeStores() error {
	if g.stores == nil {
		return nil
	}
	return g.stores.closeStores()
}

// remoteLeader is the leader of a group not hosted here, from the cache or
// from a control query to its replicas.
func (g *Group) remoteLeader() (Peer, bool) {
	g.lmu.Lock()
	if !g.leaderAt.IsZero() {
		p, ok := g.leader, g.leaderOK
		if time.Since(g.leaderAt) >= leaderTTL && !g.refreshing {
			g.refreshing = true
			if !g.node.goBackground(func() { g.refreshLeader() }) {
				g.refreshing = false
			}
		}
		g.lmu.Unlock()
		return p, ok
	}
	g.lmu.Unlock()
	return g.refreshLeader()
}

// refreshLeader asks the replicas (last known leader first) who leads.
func (g *Group) refreshLeader() (Peer, bool) {
	n := g.node
	g.lmu.Lock()
	reps := g.layout().replicas
	order := make([]Peer, 0, len(reps)+1)
	if g.leaderOK {
		order = append(order, g.leader)
	}
	g.lmu.Unlock()
	order = append(order, reps...)
	var p Peer
	ok := false
	for _, r := range order {
		ctx, cancel := context.WithTimeout(g.ctx, queryTimeout)
		st, err := n.mux.Query(ctx, r.BusAddr, g.id)
		cancel()
		if err != nil || st.LeaderID == "" {
			continue
		}
		if p, ok = n.peer(st.LeaderID); ok {
			break
		}
	}
	g.lmu.Lock()
	g.leader, g.leaderOK, g.leaderAt, g.refreshing = p, ok, time.Now(), false
	g.lmu.Unlock()
	return p, ok
}

// Leader spreading: a group led by a node other than its preferred replica
// hands leadership to the preferred one once it is healthy, with backoff.
// The preferred replica is the group's preferred-leader setting when an
// operator set one (transfer.go), else the static placement's first.
const (
	spreadMaxLag   = 256
	spreadMaxDelay = 30 * time.Second
	spreadReset    = 2 * time.Minute
)

func (g *Group) spreadLoop() {
	n := g.node
	hb := n.cfg.raftConfig().HeartbeatTimeout
	tick := time.NewTicker(2 * hb)
	defer tick.Stop()
	var attempts int
	var next, last time.Time
	var lastPref string
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-g.raft.LeaderCh():
		case <-tick.C:
		}
		now := time.Now()
		pref := g.preferred()
		if pref.ID != lastPref { // an operator's new preference is tried at once
			lastPref, attempts, next = pref.ID, 0, time.Time{}
		}
		if pref.ID == n.self.ID || g.raft.State() != raft.Leader || now.Before(next) || !g.preferredHealthy(pref, hb) {
			continue
		}
		if now.Sub(last) > spreadReset {
			attempts = 0
		}
		attempts++
		last = now
		next = now.Add(min(hb<<min(attempts, 16), spreadMaxDelay))
		err := g.transferLeadership(&pref)
		g.log.Info("leadership transfer to preferred replica", "to", pref.ID, "attempt", attempts, "err", err)
	}
}

// preferredHealthy: pref is a voter of the group, follows this leader in
// the current term and has applied about as much as this node.
func (g *Group) preferredHealthy(pref Peer, timeout time.Duration) bool {
	cf := g.raft.GetConfiguration()
	if cf.Error() != nil {
		return false
	}
	voter := false
	for _, s := range cf.Configuration().Servers {
		voter = voter || (s.ID == raft.ServerID(pref.ID) && s.Suffrage == raft.Voter)
	}
	if !voter {
		return false
	}
	ctx, cancel := context.WithTimeout(g.ctx, timeout)
	defer cancel()
	st, err := g.node.mux.Query(ctx, pref.BusAddr, g.id)
	if err != nil {
		return false
	}
	return st.LeaderID == g.node.self.ID && st.Term == g.raft.CurrentTerm() &&
		st.AppliedIndex+spreadMaxLag >= g.raft.AppliedIndex()
}

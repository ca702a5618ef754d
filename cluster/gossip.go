package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// Gossip: hashicorp/memberlist over the bus port (transport.GossipTransport)
// tells every node which nodes are alive, suspected or dead, independently
// of the Raft groups they share. CLUSTER NODES flags and `admin status`
// show it; the placement controller of the meta group (issue #3) will use
// it to replace dead nodes.

// GossipState is a node's liveness as gossip sees it.
type GossipState string

const (
	GossipAlive   GossipState = "alive"
	GossipSuspect GossipState = "suspect" // missed probes; not yet declared dead
	GossipDead    GossipState = "dead"
	GossipLeft    GossipState = "left"    // left on purpose
	GossipUnknown GossipState = "unknown" // never heard of (not joined yet)
)

// gossipMeta is what a node tells others about itself in gossip.
type gossipMeta struct {
	Client string `json:"c"`
	Bus    string `json:"b"`
	// Member: the node has cluster state (a meta group log). A node that
	// starts with an empty data dir and sees one never bootstraps a
	// cluster of its own beside it (bootstrap.go). Nodes of earlier
	// releases do not send it.
	Member bool `json:"m,omitempty"`
	// TLS is the node's client TLS port (tls-port), 0 without one.
	TLS int `json:"t,omitempty"`
	// UID is the node's data directory id (identity.go).
	UID string `json:"u,omitempty"`
	// Sentinel and Proxy are the node's front ends' addresses
	// (frontends.go), omitted without them.
	Sentinel string `json:"s,omitempty"`
	Proxy    string `json:"p,omitempty"`
	// HTTP is the node's operator HTTP address (--http: metrics, the
	// dashboard), "" without one; the dashboard of any node gathers every
	// node's figures from it. Nodes of earlier releases ignore it.
	HTTP string `json:"h,omitempty"`
}

// gossip is this node's memberlist and what it learnt.
type gossip struct {
	n  *Node
	ml *memberlist.Memberlist

	mu    sync.Mutex
	state map[string]GossipState
	since map[string]time.Time  // when the state last changed
	meta  map[string]gossipMeta // what each node announced (copied in the events)

	// announcing serialises announce: memberlist's UpdateNode reads the
	// metadata, then takes the next incarnation, so two at once could give
	// the older metadata the newer incarnation, which every node then
	// keeps (a proxy set right after the facade was never heard of).
	announcing sync.Mutex
}

// gossipLeaveTimeout bounds how long a closing node tells others it leaves.
const gossipLeaveTimeout = 500 * time.Millisecond

// gossipJoinRetry is how often a node retries joining the peers it does
// not see.
const gossipJoinRetry = time.Second

func (n *Node) startGossip() error {
	tr, err := n.mux.Gossip()
	if err != nil {
		return err
	}
	gs := &gossip{n: n, state: map[string]GossipState{}, since: map[string]time.Time{}, meta: map[string]gossipMeta{}}
	conf := memberlist.DefaultLANConfig()
	if n.cfg.GossipFast {
		conf = memberlist.DefaultLocalConfig()
		conf.ProbeInterval, conf.ProbeTimeout = 200*time.Millisecond, 100*time.Millisecond
		conf.GossipInterval, conf.SuspicionMult = 50*time.Millisecond, 2
	}
	// Gossip messages are a few hundred bytes between nodes of one
	// network; memberlist's LZW compression allocated a 72 KB writer per
	// message, a steady stream of garbage under load (issue #16's
	// allocation profile). Receivers decode both forms, so nodes with and
	// without it mix.
	conf.EnableCompression = false
	conf.Name = n.self.ID
	conf.Transport = tr
	conf.Events = gs
	conf.Delegate = gs
	conf.Logger = newHCLog(n.log, "memberlist", slog.LevelInfo).StandardLogger(nil)
	ml, err := memberlist.Create(conf)
	if err != nil {
		_ = tr.Shutdown()
		return fmt.Errorf("gossip: %w", err)
	}
	gs.ml = ml
	n.gossip = gs
	n.goBackground(gs.joinLoop)
	return nil
}

// joinLoop keeps joining the peers gossip does not see alive: at start
// (peers may start later than this node) and after a partition long enough
// for memberlist to forget the other side.
func (gs *gossip) joinLoop() {
	for {
		if seeds := gs.missing(); len(seeds) > 0 {
			if joined, err := gs.ml.Join(seeds); joined == 0 {
				gs.n.log.Debug("gossip join failed, retrying", "seeds", seeds, "err", err)
			}
		}
		select {
		case <-gs.n.ctx.Done():
			return
		case <-time.After(gossipJoinRetry):
		}
	}
}

// missing is the bus addresses of the map's (or, before the map, the
// configured) peers that memberlist does not list, and the --join seeds
// while this node is alone in gossip.
func (gs *gossip) missing() []string {
	listed := map[string]bool{}
	for _, m := range gs.ml.Members() {
		listed[m.Name] = true
	}
	var seeds []string
	peers := gs.n.Peers()
	if !gs.n.Map().Initialized() {
		peers = gs.n.cfg.Peers
	}
	for _, p := range peers {
		if p.ID != gs.n.self.ID && !listed[p.ID] {
			seeds = append(seeds, p.BusAddr)
		}
	}
	if len(listed) <= 1 || !gs.n.Map().IsActive(gs.n.self.ID) {
		seeds = append(seeds, resolveSeeds(gs.n.ctx, append(gs.n.meetSeeds(), gs.n.cfg.Join...))...)
	}
	return seeds
}

// resolveSeeds resolves each host:port seed again at every try, so a DNS
// name (a Kubernetes headless Service) follows the pods behind it.
func resolveSeeds(ctx context.Context, seeds []string) []string {
	var out []string
	for _, s := range seeds {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		addrs, err := net.DefaultResolver.LookupHost(ctx, host)
		cancel()
		if err != nil {
			out = append(out, s) // let the dial report it
			continue
		}
		for _, a := range addrs {
			out = append(out, net.JoinHostPort(a, port))
		}
	}
	return out
}

// alivePeers are the nodes gossip sees alive, this one included, with the
// addresses they advertise, in id order. It reads what the event callbacks
// recorded: the fields of memberlist's nodes change under its own lock.
func (gs *gossip) alivePeers() []Peer {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	var out []Peer
	for _, id := range slices.Sorted(maps.Keys(gs.state)) {
		if gm, ok := gs.meta[id]; ok && gs.state[id] == GossipAlive && gm.Bus != "" {
			out = append(out, Peer{ID: id, ClientAddr: gm.Client, BusAddr: gm.Bus})
		}
	}
	return out
}

// stop leaves the gossip (so peers mark this node left, not dead) and
// shuts memberlist down.
func (gs *gossip) stop(timeout time.Duration) {
	if err := gs.ml.Leave(timeout); err != nil {
		gs.n.log.Debug("gossip leave", "err", err)
	}
	if err := gs.ml.Shutdown(); err != nil {
		gs.n.log.Debug("gossip shutdown", "err", err)
	}
}

// GossipStates is every node's liveness as gossip sees it from here.
func (n *Node) GossipStates() map[string]GossipState {
	if n.gossip == nil {
		out := map[string]GossipState{}
		for _, p := range n.Peers() {
			out[p.ID] = GossipUnknown
		}
		return out
	}
	return n.gossip.States()
}

// States is every peer's gossip state; this node is always alive.
func (gs *gossip) States() map[string]GossipState {
	out := map[string]GossipState{}
	for _, p := range gs.n.Peers() {
		out[p.ID] = GossipUnknown
	}
	gs.mu.Lock()
	for id, st := range gs.state {
		out[id] = st
	}
	gs.mu.Unlock()
	for _, m := range gs.ml.Members() {
		if m.State == memberlist.StateSuspect {
			out[m.Name] = GossipSuspect
		}
	}
	out[gs.n.self.ID] = GossipAlive
	return out
}

func (gs *gossip) set(name string, st GossipState) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if gs.state[name] != st {
		gs.state[name], gs.since[name] = st, time.Now()
		gs.n.log.Info("gossip: node state", "peer", name, "state", string(st))
		if name != gs.n.self.ID {
			gs.n.noteGossip(name, st)
		}
	}
}

// NotifyJoin, NotifyLeave and NotifyUpdate make gossip a memberlist.EventDelegate.
// memberlist calls them under its lock, so m's fields may be read here.
func (gs *gossip) NotifyJoin(m *memberlist.Node)   { gs.alive(m) }
func (gs *gossip) NotifyUpdate(m *memberlist.Node) { gs.alive(m) }

// alive records m alive with the addresses it announces.
func (gs *gossip) alive(m *memberlist.Node) {
	var gm gossipMeta
	if json.Unmarshal(m.Meta, &gm) == nil {
		gs.mu.Lock()
		gs.meta[m.Name] = gm
		gs.mu.Unlock()
	}
	gs.set(m.Name, GossipAlive)
}
func (gs *gossip) NotifyLeave(m *memberlist.Node) {
	if m.State == memberlist.StateLeft {
		gs.set(m.Name, GossipLeft)
		return
	}
	gs.set(m.Name, GossipDead)
}

// NodeMeta makes gossip a memberlist.Delegate: it carries the addresses.
// Metadata over memberlist's limit (512 bytes) would be dropped whole, so
// the front ends' addresses, which only the Sentinel facade reads, go
// first (long host names).
func (gs *gossip) NodeMeta(limit int) []byte {
	fe := gs.n.ownFrontEnds()
	gm := gossipMeta{Client: gs.n.self.ClientAddr, Bus: gs.n.self.BusAddr, Member: gs.n.hasClusterState(),
		TLS: int(gs.n.tlsPort.Load()), UID: gs.n.uid, Sentinel: fe.Sentinel, Proxy: fe.Proxy,
		HTTP: gs.n.HTTPAddr(gs.n.self.ID)}
	b, _ := json.Marshal(gm)
	if len(b) > limit && (fe.Sentinel != "" || fe.Proxy != "") {
		gs.n.log.Warn("gossip: front-end addresses left out of the node's metadata: over memberlist's size limit",
			"sentinel", fe.Sentinel, "proxy", fe.Proxy, "limit", limit)
		gm.Sentinel, gm.Proxy = "", ""
		b, _ = json.Marshal(gm)
	}
	if len(b) > limit {
		return nil
	}
	return b
}

// announce sends this node's gossip metadata again (it became a member).
func (gs *gossip) announce() {
	gs.announcing.Lock()
	defer gs.announcing.Unlock()
	if err := gs.ml.UpdateNode(gossipLeaveTimeout); err != nil {
		gs.n.log.Debug("gossip: announcing membership", "err", err)
	}
}

// SetTLSPort announces this node's client TLS port (0: none) to the
// others, which name it in the redirects they send TLS clients.
func (n *Node) SetTLSPort(port int) {
	if n.tlsPort.Swap(int64(port)) != int64(port) && n.gossip != nil {
		n.goBackground(n.gossip.announce)
	}
}

// TLSPort is node id's client TLS port as it announced it, 0 if none.
func (n *Node) TLSPort(id string) int {
	if id == n.self.ID {
		return int(n.tlsPort.Load())
	}
	if n.gossip == nil {
		return 0
	}
	n.gossip.mu.Lock()
	defer n.gossip.mu.Unlock()
	return n.gossip.meta[id].TLS
}

// SetHTTPAddr announces this node's operator HTTP address (host:port
// that the other nodes can dial; "" for none) in gossip.
func (n *Node) SetHTTPAddr(addr string) {
	if old := n.httpAddr.Swap(&addr); (old == nil || *old != addr) && n.gossip != nil {
		n.goBackground(n.gossip.announce)
	}
}

// HTTPAddr is node id's operator HTTP address as it announced it, "" if
// none (or not heard of).
func (n *Node) HTTPAddr(id string) string {
	if id == n.self.ID {
		if p := n.httpAddr.Load(); p != nil {
			return *p
		}
		return ""
	}
	if n.gossip == nil {
		return ""
	}
	n.gossip.mu.Lock()
	defer n.gossip.mu.Unlock()
	return n.gossip.meta[id].HTTP
}

// uids are the data directory ids the alive nodes announce, this
// node's included.
func (gs *gossip) uids() map[string]string {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	out := map[string]string{gs.n.self.ID: gs.n.uid}
	for id, st := range gs.state {
		if st == GossipAlive && gs.meta[id].UID != "" {
			out[id] = gs.meta[id].UID
		}
	}
	return out
}

// memberSeen is an alive peer that says it has cluster state, if any.
func (gs *gossip) memberSeen() (string, bool) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	for _, id := range slices.Sorted(maps.Keys(gs.state)) {
		if gs.state[id] == GossipAlive && gs.meta[id].Member && id != gs.n.self.ID {
			return id, true
		}
	}
	return "", false
}

// hasClusterState reports whether this node's meta group has a log: it was
// bootstrapped or has received the cluster's.
func (n *Node) hasClusterState() bool {
	mg := n.meta
	return mg != nil && mg.raft != nil && mg.raft.LastIndex() > 0
}

func (gs *gossip) NotifyMsg([]byte)                           {}
func (gs *gossip) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (gs *gossip) LocalState(join bool) []byte                { return nil }
func (gs *gossip) MergeRemoteState(buf []byte, join bool)     {}

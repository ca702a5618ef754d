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
}

// gossip is this node's memberlist and what it learnt.
type gossip struct {
	n  *Node
	ml *memberlist.Memberlist

	mu    sync.Mutex
	state map[string]GossipState
	since map[string]time.Time  // when the state last changed
	meta  map[string]gossipMeta // what each node announced (copied in the events)
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
		seeds = append(seeds, resolveSeeds(gs.n.ctx, gs.n.cfg.Join)...)
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
func (gs *gossip) NodeMeta(limit int) []byte {
	b, _ := json.Marshal(gossipMeta{Client: gs.n.self.ClientAddr, Bus: gs.n.self.BusAddr})
	if len(b) > limit {
		return nil
	}
	return b
}

func (gs *gossip) NotifyMsg([]byte)                           {}
func (gs *gossip) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (gs *gossip) LocalState(join bool) []byte                { return nil }
func (gs *gossip) MergeRemoteState(buf []byte, join bool)     {}

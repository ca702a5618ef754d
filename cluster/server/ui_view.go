package server

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/cluster/meta"
)

const (
	// uiMaxEvents bounds the events /ui/api/cluster lists.
	uiMaxEvents = 200
	// uiMaxNodeEvents bounds the events read from one node.
	uiMaxNodeEvents = 256
	// uiSameEvent: the same event text from several nodes within this
	// long is one event seen by each of them.
	uiSameEvent = 5 * time.Second
	// uiViewFresh: a view this young is served again rather than
	// gathered anew (several pages, or a page and a test, polling).
	uiViewFresh = 300 * time.Millisecond
	// uiGatherTimeout bounds a gathering (each status call and fetch has
	// its own, shorter, timeout).
	uiGatherTimeout = 3 * time.Second
)

// uiState is the dashboard's state on one HTTP handler: the latency
// window and the last view gathered.
type uiState struct {
	s   *Server
	lat latWindow

	mu     sync.Mutex // one gathering at a time; the others wait for it
	viewAt time.Time
	view   *UICluster
}

// clusterView is the last view if it is fresh, else a new one.
func (u *uiState) clusterView(ctx context.Context) *UICluster {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.view != nil && time.Since(u.viewAt) < uiViewFresh {
		return u.view
	}
	// Not the request's context: others may be served this view, and a
	// page that went away must not leave them a cancelled one.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), uiGatherTimeout)
	defer cancel()
	v := u.gather(ctx)
	u.view, u.viewAt = v, time.Now()
	return v
}

// gather asks every node for its status over the bus and its figures
// over HTTP, both in parallel, and joins them with the map.
func (u *uiState) gather(ctx context.Context) *UICluster {
	n := u.s.n
	m := n.Map()
	peers := n.Peers()
	ids := make([]string, len(peers))
	for i, p := range peers {
		ids[i] = p.ID
	}
	var cs cluster.ClusterStatus
	var statusTook time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		start := time.Now()
		cs = n.Status(ctx)
		statusTook = time.Since(start)
	}()
	start := time.Now()
	stats := u.gatherStats(ctx, ids)
	statsTook := time.Since(start)
	<-done
	v := &UICluster{
		Self: n.Self().ID, At: time.Now().UTC(), Epoch: m.Epoch, MetaLeader: cs.MetaLeader, Ready: n.Ready(),
		Slots: slotRanges(m), Migrations: migrations(m), Version: u.s.version,
		Gathered: UIGatherTimings{StatusMS: statusTook.Milliseconds(), StatsMS: statsTook.Milliseconds()},
	}
	for _, ns := range cs.Nodes {
		v.Nodes = append(v.Nodes, uiNode(ns, n.HTTPAddr(ns.ID), stats[ns.ID]))
	}
	for _, gs := range cs.Groups {
		v.Groups = append(v.Groups, uiGroup(gs, m))
	}
	v.Events = mergeEvents(stats)
	return v
}

// uiNode joins a node's status and its figures.
func uiNode(ns cluster.NodeStatus, http string, f nodeFetch) UINode {
	un := UINode{ID: ns.ID, Client: ns.ClientAddr, Bus: ns.BusAddr, HTTP: http, Gossip: ns.Gossip,
		Reachable: ns.Reachable, Error: ns.Error, Leaving: ns.Leaving, Leaders: ns.Leaders, Replicas: ns.Replicas,
		Stats: f.stats}
	if f.err != nil {
		un.StatsError = f.err.Error()
	}
	un.Health = health(ns, f)
	return un
}

// health is a node's colour: gossip's verdict first, then whether it
// answers the status call over the bus, then whether it is ready. A
// fetch of its figures that failed (its HTTP port filtered, say) only
// leaves the figures out: it is said in StatsError.
func health(ns cluster.NodeStatus, f nodeFetch) string {
	switch cluster.GossipState(ns.Gossip) {
	case cluster.GossipDead:
		return HealthDead
	case cluster.GossipLeft:
		return HealthLeft
	}
	if !ns.Reachable {
		return HealthUnreachable
	}
	if cluster.GossipState(ns.Gossip) == cluster.GossipSuspect {
		return HealthSuspect
	}
	if f.stats != nil && !f.stats.Ready {
		return HealthNotReady
	}
	return HealthOK
}

// uiGroup is a group's status with its slot count and term.
func uiGroup(gs cluster.GroupStatus, m *meta.Map) UIGroup {
	ug := UIGroup{ID: gs.ID, Ranges: gs.Slots, Leader: gs.Leader, Slots: m.SlotCount(gs.ID)}
	for _, r := range gs.Replicas {
		ug.Replicas = append(ug.Replicas, UIReplica{Node: r.Node, State: r.State, Term: r.Term, Applied: r.AppliedIndex, Lag: r.Lag})
		ug.Term = max(ug.Term, r.Term)
	}
	return ug
}

// slotRanges are the map's owned slots, in slot order.
func slotRanges(m *meta.Map) []UISlotRange {
	var out []UISlotRange
	for _, g := range m.Groups {
		for _, r := range g.Ranges {
			out = append(out, UISlotRange{S: r.Start, E: r.End, G: g.ID})
		}
	}
	slices.SortFunc(out, func(a, b UISlotRange) int { return cmp.Compare(a.S, b.S) })
	return out
}

// migrations are the map's slot moves in flight, one entry per pair of
// groups, their slots as ranges.
func migrations(m *meta.Map) []UIMigration {
	var out []UIMigration
	for _, mg := range m.Migrations { // sorted by slot
		i := slices.IndexFunc(out, func(u UIMigration) bool { return u.From == mg.From && u.To == mg.To })
		if i < 0 {
			out = append(out, UIMigration{From: mg.From, To: mg.To})
			i = len(out) - 1
		}
		u := &out[i]
		u.Count++
		if k := len(u.Ranges) - 1; k >= 0 && u.Ranges[k].E+1 == mg.Slot {
			u.Ranges[k].E = mg.Slot
		} else {
			u.Ranges = append(u.Ranges, UISlotRange{S: mg.Slot, E: mg.Slot, G: mg.To})
		}
	}
	return out
}

// mergeEvents lists every node's events, newest first: one entry for
// the same kind and text seen by several nodes within uiSameEvent.
func mergeEvents(stats map[string]nodeFetch) []UIEvent {
	var all []UIEvent
	for id, f := range stats {
		if f.stats == nil {
			continue
		}
		for _, e := range f.stats.Events {
			all = append(all, UIEvent{Event: e, SeenBy: []string{id}})
		}
	}
	slices.SortStableFunc(all, func(a, b UIEvent) int { return a.At.Compare(b.At) })
	var out []UIEvent
	for _, e := range all {
		j := slices.IndexFunc(out, func(o UIEvent) bool {
			return o.Kind == e.Kind && o.Text == e.Text && e.At.Sub(o.At) <= uiSameEvent
		})
		if j < 0 {
			out = append(out, e)
			continue
		}
		if !slices.Contains(out[j].SeenBy, e.SeenBy[0]) {
			out[j].SeenBy = append(out[j].SeenBy, e.SeenBy[0])
			slices.Sort(out[j].SeenBy)
		}
	}
	slices.Reverse(out)
	return out[:min(len(out), uiMaxEvents)]
}

// nodeStats are this node's own figures now.
func (u *uiState) nodeStats(now time.Time) UINodeStats {
	s := u.s
	s.mu.Lock()
	clients := len(s.clients)
	s.mu.Unlock()
	mh := s.memOverhead()
	lat := u.lat.observe(s.cstats, now)
	st := UINodeStats{
		ID: s.n.Self().ID, At: now.UTC(), Version: s.version, Ready: s.n.Ready(), Clients: clients,
		Keys: mh.keys, UsedBytes: mh.total,
		OpsPerSec: s.inst.rate(instOps), NetInKBps: s.inst.rate(instNetIn) / 1024, NetOutKBps: s.inst.rate(instNetOut) / 1024,
		WindowMS: lat.window.Milliseconds(), Calls: lat.calls,
		P50us: float64(lat.p50) / 1e3, P99us: float64(lat.p99) / 1e3, MaxUs: float64(lat.most) / 1e3,
		Events: s.n.Events(),
	}
	for _, g := range s.n.GroupStats() {
		st.Groups = append(st.Groups, UIGroupReplica{Group: g.Group, State: g.State, Leader: g.Leader, Term: g.Term,
			Applied: g.AppliedIndex, Commit: g.CommitIndex})
	}
	return st
}

package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/slotraft/slotraft/cluster/meta"
	"github.com/slotraft/slotraft/cluster/transport"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
)

// MetaGroupID is the bus group id of the meta group, the Raft group that
// holds the cluster map (cluster/meta). Slot group ids stay below it.
const MetaGroupID uint32 = 0xFFFFFF00

// metaVoters is how many nodes vote in the meta group; the others follow
// it as non-voters, so every node has the map locally.
const metaVoters = 5

// metaApplyTimeout bounds one proposal to the meta group.
const metaApplyTimeout = 5 * time.Second

// metaGroup is this node's replica of the meta group.
type metaGroup struct {
	*raftHandle
	fsm *meta.FSM
	// init is the map this node proposes when it leads a meta group whose
	// map is not created yet: set by a bootstrapping node only.
	init atomic.Pointer[meta.Init]
	// barrier is the term of the last Barrier applied as leader
	// (confirmLeader, readindex.go).
	barrier atomic.Uint64
}

// ErrMetaNoLeader means the meta group has no known leader right now.
var ErrMetaNoLeader = errors.New("meta group has no leader")

// openMeta opens the meta group under DataDir/meta. A node with no state
// there bootstraps it when its configuration says so (bootstrap.go); a
// node restarted on its data dir never bootstraps again.
func (n *Node) openMeta() error {
	log := n.log.With("group", "meta")
	mg := &metaGroup{fsm: meta.NewFSM(log)}
	servers, init := n.bootPlan()
	var boot func(*raft.Raft) error
	if conf := metaServers(servers); votes(conf, n.self.ID) {
		// Only voters bootstrap: Raft refuses a bootstrap by a non-voter
		// (a static cluster of more than metaVoters nodes), which gets the
		// configuration from the leader like a joining node.
		boot = func(r *raft.Raft) error { return r.BootstrapCluster(conf).Error() }
	}
	h, err := n.openRaft(filepath.Join(n.cfg.DataDir, "meta"), MetaGroupID, mg.fsm, log, boot)
	if err != nil {
		return err
	}
	mg.raftHandle = h
	if !h.existing && init != nil {
		mg.init.Store(init)
	}
	n.meta = mg
	return nil
}

// metaServers is the meta group's Raft configuration for nodes: the first
// metaVoters vote, the rest follow.
func metaServers(nodes []Peer) raft.Configuration {
	var c raft.Configuration
	for i, p := range nodes {
		s := raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.BusAddr)}
		if i >= metaVoters {
			s.Suffrage = raft.Nonvoter
		}
		c.Servers = append(c.Servers, s)
	}
	return c
}

// votes reports whether id is a voter of conf.
func votes(conf raft.Configuration, id string) bool {
	return slices.ContainsFunc(conf.Servers, func(s raft.Server) bool {
		return s.ID == raft.ServerID(id) && s.Suffrage == raft.Voter
	})
}

// staticInit is the map a cluster starts with: groups slot groups (ids 1…),
// group i owning slots.Split(groups)[i] and replicated on `replicas`
// consecutive nodes starting at node i mod N, in the given node order.
func staticInit(nodes []Peer, groups, replicas int) *meta.Init {
	replicas = min(replicas, len(nodes))
	init := &meta.Init{}
	for _, p := range nodes {
		init.Nodes = append(init.Nodes, meta.Node{ID: p.ID, Client: p.ClientAddr, Bus: p.BusAddr})
	}
	slices.SortFunc(init.Nodes, func(a, b meta.Node) int { return strings.Compare(a.ID, b.ID) })
	for i, r := range slots.Split(groups) {
		g := meta.Group{ID: uint32(i + 1), Ranges: []slots.Range{r}}
		for k := range replicas {
			g.Replicas = append(g.Replicas, nodes[(i+k)%len(nodes)].ID)
		}
		init.Groups = append(init.Groups, g)
	}
	return init
}

func (mg *metaGroup) isLeader() bool { return mg.raft.State() == raft.Leader }

// propose applies cmd through the local meta replica, which must lead.
// Its errors follow Group.Propose's rule (applyError): ErrNotLeader only
// for what Raft refuses before the entry has a log index (never proposed);
// leadership lost after that, or any other failure, wraps
// resp.ErrOutcomeUnknown: the change may yet apply. A change the map
// refuses (a stale Expect…) is that error.
func (mg *metaGroup) propose(cmd meta.Command) error {
	_, err := mg.proposeAt(cmd)
	return err
}

// proposeAt is propose, also reporting the entry's log index.
func (mg *metaGroup) proposeAt(cmd meta.Command) (uint64, error) {
	f := mg.raft.Apply(meta.Encode(cmd), metaApplyTimeout)
	if err := f.Error(); err != nil {
		return 0, applyError(err)
	}
	if err, ok := f.Response().(error); ok {
		return f.Index(), err
	}
	return f.Index(), nil
}

// ProposeMeta applies cmd to the cluster map through the meta group's
// leader, wherever it runs. While the meta group has no leader, or the node
// asked says it no longer leads (nothing was proposed), it asks again until
// ctx ends. Nothing else is retried: an error wrapping
// resp.ErrOutcomeUnknown (the leader was deposed after appending the
// change, or a forwarded call failed on the way) means the change may have
// applied, and only the caller knows whether proposing it again is
// harmless. (Every meta command is: a repeat changes nothing or is refused
// — Expect, a group id that exists —, never applied twice; but its error
// then reports as a failure what may have succeeded.) An error the meta
// leader answered a forwarded change with comes back as its text.
func (n *Node) ProposeMeta(ctx context.Context, cmd meta.Command) error {
	_, err := n.proposeMetaAt(ctx, cmd)
	return err
}

// proposeMetaAt is ProposeMeta, also reporting the entry's log index (0
// when a node of the previous release led and did not say).
func (n *Node) proposeMetaAt(ctx context.Context, cmd meta.Command) (uint64, error) {
	for {
		index, err := n.proposeMetaOnce(ctx, cmd)
		if !errors.Is(err, errMetaRetry) {
			return index, err
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%w (%w)", ctx.Err(), err)
		case <-time.After(metaRetry):
		}
	}
}

// metaRetry is the pause before asking the meta group's leader again.
const metaRetry = 50 * time.Millisecond

// errMetaRetry wraps the errors after which nothing was proposed.
var errMetaRetry = errors.New("meta leader changing")

// metaNotLeader is svcMeta's answer from a node that does not lead (a
// one-byte payload; success is an empty one).
const metaNotLeader = 1

func (n *Node) proposeMetaOnce(ctx context.Context, cmd meta.Command) (uint64, error) {
	if n.meta.isLeader() {
		index, err := n.meta.proposeAt(cmd)
		if errors.Is(err, ErrNotLeader) {
			return 0, fmt.Errorf("%w: %w", errMetaRetry, err)
		}
		return index, err
	}
	addr, _ := n.meta.raft.LeaderWithID()
	if addr == "" {
		return 0, fmt.Errorf("%w: %w", errMetaRetry, ErrMetaNoLeader)
	}
	out, err := n.mux.Call(ctx, string(addr), svcMeta, meta.Encode(cmd))
	if err = forwardedMetaOutcome(string(addr), out, err); err != nil || len(out) != 8 {
		return 0, err
	}
	return binary.BigEndian.Uint64(out), nil
}

// forwardedMetaOutcome is how a change forwarded to the meta leader at addr
// ended: applied (nil), never proposed there (errMetaRetry), refused or
// failed as the leader answered (its *transport.RemoteError), or, when the
// call got no answer, an outcome-unknown error: it may have been delivered
// and applied.
func forwardedMetaOutcome(addr string, out []byte, err error) error {
	var answered *transport.RemoteError
	switch {
	case err != nil && !errors.As(err, &answered):
		return fmt.Errorf("%w: forwarded to the meta leader %s: %w", resp.ErrOutcomeUnknown, addr, err)
	case err == nil && len(out) == 1 && out[0] == metaNotLeader:
		return fmt.Errorf("%w: %s no longer leads the meta group", errMetaRetry, addr)
	}
	return err
}

// serveMeta is the svcMeta service: a proposal forwarded by another node.
func (n *Node) serveMeta(_ context.Context, _ string, payload []byte) ([]byte, error) {
	cmd, err := meta.Decode(payload)
	if err != nil {
		return nil, err
	}
	if !n.meta.isLeader() {
		return []byte{metaNotLeader}, nil
	}
	index, err := n.meta.proposeAt(cmd)
	switch {
	case errors.Is(err, ErrNotLeader): // never proposed: the caller asks again
		return []byte{metaNotLeader}, nil
	case err != nil:
		return nil, err
	}
	// Success answers the entry's index (the previous release answered
	// nothing), so the caller can wait until its own replica applied it.
	return binary.BigEndian.AppendUint64(nil, index), nil
}

// metaReadTimeout bounds asking the meta leader for the current epoch.
const metaReadTimeout = 2 * time.Second

// metaCurrent reports whether m is the current cluster map: at least as
// new as the meta leader's map once that leader has applied an entry of its
// own term and confirmed that a majority follows it (confirmLeader). What
// this replica knows locally proves nothing: a new leader has not applied
// what its predecessor committed until its own term's entry is applied,
// and a follower (a restarted one above all) knows the leader before it
// has the leader's entries, and counts as applied what it has only handed
// to its state machine.
func (n *Node) metaCurrent(m *meta.Map) bool {
	ctx, cancel := context.WithTimeout(n.ctx, metaReadTimeout)
	defer cancel()
	epoch, err := n.metaEpoch(ctx)
	if err != nil {
		n.log.Debug("meta: current epoch unknown", "err", err)
		return false
	}
	return m.Epoch >= epoch
}

// metaEpoch is the epoch of the current map: read on the meta leader once
// confirmLeader passed, asked of it (svcMetaEpoch) from any other node.
func (n *Node) metaEpoch(ctx context.Context) (uint64, error) {
	if n.meta.isLeader() {
		return n.leaderMetaEpoch()
	}
	addr, _ := n.meta.raft.LeaderWithID()
	if addr == "" {
		return 0, ErrMetaNoLeader
	}
	out, err := n.mux.Call(ctx, string(addr), svcMetaEpoch, nil)
	switch {
	case err != nil:
		return 0, err
	case len(out) != 8:
		return 0, fmt.Errorf("%w: %s no longer leads the meta group", ErrMetaNoLeader, addr)
	}
	return binary.BigEndian.Uint64(out), nil
}

func (n *Node) leaderMetaEpoch() (uint64, error) {
	if err := confirmLeader(n.meta.raft, &n.meta.barrier); err != nil {
		return 0, err
	}
	return n.meta.fsm.Map().Epoch, nil
}

// serveMetaEpoch is the svcMetaEpoch service: the current epoch (8 bytes,
// big-endian), or metaNotLeader from a node that does not lead.
func (n *Node) serveMetaEpoch(context.Context, string, []byte) ([]byte, error) {
	if !n.meta.isLeader() {
		return []byte{metaNotLeader}, nil
	}
	epoch, err := n.leaderMetaEpoch()
	if err != nil {
		return nil, err
	}
	return binary.BigEndian.AppendUint64(nil, epoch), nil
}

// MetaLeader is the id of the meta group's leader as known here ("" if none).
func (n *Node) MetaLeader() string {
	_, id := n.meta.raft.LeaderWithID()
	return string(id)
}

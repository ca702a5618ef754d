package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/slotraft/slotraft/cluster/meta"
	"github.com/slotraft/slotraft/cluster/transport"
	"github.com/slotraft/slotraft/slots"
)

// Forming a cluster as Redis Cluster's operators do (Config.Meet): nodes
// start alone and unmet; CLUSTER ADDSLOTS on an unmet node records slots it
// claims (kept in <data-dir>/claims.json); CLUSTER MEET joins two nodes.
// slotraft cannot merge two Raft clusters, so a meeting has one cluster
// at most:
//   - one of the two is a member of a cluster: the other, unmet, joins it
//     (a meta.Meet entry adds it with its claimed slots, then it finds the
//     cluster by gossip and is given the map);
//   - both are unmet: one of them creates a cluster of itself around its
//     claimed slots (a map marked Manual), the one named by MEET when it
//     claims slots, and the other joins it;
//   - both are members of different clusters: refused.

// meetTimeout bounds one meeting: the other node's answer, a new cluster's
// first leader and map, and the proposal that adds a node.
const meetTimeout = 10 * time.Second

// Errors of Meet, compared with errors.Is.
var (
	// ErrMeetOtherCluster: both nodes are members of different clusters.
	ErrMeetOtherCluster = errors.New("the node belongs to another cluster: slotraft cannot merge two clusters")
	// ErrMeetNoSlots: neither node is a member nor claims slots, so there
	// is no cluster to form yet.
	ErrMeetNoSlots = errors.New("neither node claims slots: assign slots with CLUSTER ADDSLOTS on one of them first")
	// ErrMeetJoining: the node is joining a cluster already.
	ErrMeetJoining = errors.New("the node is joining a cluster: try again once it has")
	// ErrMeetUnreachable: the other node did not answer; MeetLater keeps
	// trying.
	ErrMeetUnreachable = errors.New("the node does not answer")
	// ErrNotUnmet: claims are edited only on a node that has not met a
	// cluster.
	ErrNotUnmet = errors.New("the node has met a cluster")
)

// meetState is what an unmet node holds: the slots it claims and the bus
// addresses gossip joins once a meeting began.
type meetState struct {
	mu      sync.Mutex
	claims  []slots.Range // merged
	seeds   []string
	started bool // a meeting made this node join or create a cluster
}

// meetHello is a node's answer to op "hello": who it is and where it stands.
type meetHello struct {
	Node    meta.Node     `json:"node"`
	Member  bool          `json:"member"`  // an active member of an initialized map
	Joining bool          `json:"joining"` // met, not a member yet
	Claims  []slots.Range `json:"claims,omitempty"`
}

// meetReq is one svcMeet request.
type meetReq struct {
	Op string `json:"op"` // "hello", "add" or "join"
	// add: the node to add to the callee's cluster with its claims;
	// Create lets an unmet callee create a cluster around its own claims
	// first.
	Node   meta.Node     `json:"node"`
	Ranges []slots.Range `json:"ranges,omitempty"`
	Create bool          `json:"create,omitempty"`
	// join: bus addresses of the cluster the callee was added to.
	Seeds []string `json:"seeds,omitempty"`
}

func (n *Node) claimsPath() string { return filepath.Join(n.cfg.DataDir, "claims.json") }

// loadClaims reads the claims an unmet node recorded before a restart.
func (n *Node) loadClaims() error {
	b, err := os.ReadFile(n.claimsPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var rs []slots.Range
	if err := json.Unmarshal(b, &rs); err != nil {
		return fmt.Errorf("%s: %w", n.claimsPath(), err)
	}
	if err := checkClaims(rs); err != nil {
		return fmt.Errorf("%s: %w", n.claimsPath(), err)
	}
	n.meeting.claims = slots.Merge(rs)
	return nil
}

func checkClaims(rs []slots.Range) error {
	for _, r := range rs {
		if r.Start > r.End || r.End >= slots.Count {
			return fmt.Errorf("bad slot range %d-%d", r.Start, r.End)
		}
	}
	return nil
}

// Unmet reports whether this node waits for CLUSTER MEET: started with
// Config.Meet, it neither belongs to a cluster nor began joining one.
func (n *Node) Unmet() bool {
	n.meeting.mu.Lock()
	defer n.meeting.mu.Unlock()
	return n.unmetLocked()
}

func (n *Node) unmetLocked() bool {
	return n.cfg.Meet && !n.meeting.started && n.meta.raft.LastIndex() == 0
}

// Claims are the slots an unmet node claims (CLUSTER ADDSLOTS before MEET).
func (n *Node) Claims() []slots.Range {
	n.meeting.mu.Lock()
	defer n.meeting.mu.Unlock()
	return slices.Clone(n.meeting.claims)
}

// UpdateClaims replaces an unmet node's claims with what fn makes of them,
// durably; fn's error leaves them as they were. ErrNotUnmet once the node
// met a cluster.
func (n *Node) UpdateClaims(fn func([]slots.Range) ([]slots.Range, error)) error {
	n.meeting.mu.Lock()
	defer n.meeting.mu.Unlock()
	if !n.unmetLocked() {
		return ErrNotUnmet
	}
	next, err := fn(slices.Clone(n.meeting.claims))
	if err != nil {
		return err
	}
	next = slots.Merge(next)
	b, err := json.Marshal(next)
	if err == nil {
		err = WriteFileAtomic(n.claimsPath(), b, 0o600)
	}
	if err != nil {
		return fmt.Errorf("cluster: recording claimed slots: %w", err)
	}
	n.meeting.claims = next
	return nil
}

// meetSeeds are the bus addresses gossip joins after a meeting.
func (n *Node) meetSeeds() []string {
	n.meeting.mu.Lock()
	defer n.meeting.mu.Unlock()
	return slices.Clone(n.meeting.seeds)
}

// startJoining marks the meeting begun: the claims now travel in a
// meta.Meet, and gossip joins seeds.
func (n *Node) startJoining(seeds []string) {
	n.meeting.mu.Lock()
	defer n.meeting.mu.Unlock()
	n.meeting.started = true
	n.meeting.seeds = append(n.meeting.seeds, seeds...)
	n.meeting.claims = nil
	if err := os.Remove(n.claimsPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		n.log.Warn("meet: removing the claims file", "err", err)
	}
}

// hello is this node's meetHello.
func (n *Node) hello() meetHello {
	m := n.Map()
	member := m.Initialized() && m.IsActive(n.self.ID)
	n.meeting.mu.Lock()
	defer n.meeting.mu.Unlock()
	return meetHello{
		Node:   meta.Node{ID: n.self.ID, Client: n.self.ClientAddr, Bus: n.self.BusAddr},
		Member: member, Joining: !member && !n.unmetLocked(),
		Claims: slices.Clone(n.meeting.claims),
	}
}

// Meet is CLUSTER MEET: this node and the node whose bus listens at bus end
// up in one cluster (see the top of this file).
func (n *Node) Meet(ctx context.Context, bus string) error {
	ctx, cancel := context.WithTimeout(ctx, meetTimeout)
	defer cancel()
	var them meetHello
	if err := n.meetCall(ctx, bus, meetReq{Op: "hello"}, &them); err != nil {
		var answered *transport.RemoteError
		if !errors.As(err, &answered) {
			return fmt.Errorf("%w: %w", ErrMeetUnreachable, err)
		}
		return err
	}
	me := n.hello()
	switch {
	case them.Node.ID == n.self.ID:
		return nil
	case me.Member && them.Member:
		if n.Map().IsActive(them.Node.ID) {
			return nil
		}
		return ErrMeetOtherCluster
	case me.Joining || them.Joining:
		return ErrMeetJoining
	case me.Member:
		return n.admit(ctx, them)
	case them.Member || len(them.Claims) > 0:
		return n.joinThrough(ctx, bus, me, !them.Member)
	case len(me.Claims) > 0:
		if err := n.createCluster(ctx); err != nil {
			return err
		}
		return n.admit(ctx, them)
	}
	return ErrMeetNoSlots
}

// meetRetry and meetRetryFor: MeetLater tries every meetRetry for up to
// meetRetryFor, about as long as Redis Cluster keeps a handshake.
const (
	meetRetry    = time.Second
	meetRetryFor = time.Minute
)

// MeetLater keeps trying Meet in the background while the other node does
// not answer, as Redis Cluster retries a handshake; the outcome is logged.
func (n *Node) MeetLater(bus string) {
	n.goBackground(func() {
		deadline := time.Now().Add(meetRetryFor)
		for time.Now().Before(deadline) {
			select {
			case <-n.ctx.Done():
				return
			case <-time.After(meetRetry):
			}
			err := n.Meet(n.ctx, bus)
			if errors.Is(err, ErrMeetUnreachable) {
				continue
			}
			n.log.Info("meet: met a node that answered late", "bus", bus, "err", err)
			return
		}
		n.log.Warn("meet: gave up, the node never answered", "bus", bus)
	})
}

// admit adds an unmet node to this node's cluster with its claims, then
// tells it where the cluster is.
func (n *Node) admit(ctx context.Context, them meetHello) error {
	if err := n.ProposeMeta(ctx, meta.Meet{Node: them.Node, Ranges: them.Claims}); err != nil {
		return fmt.Errorf("adding node %s: %w", them.Node.ID, err)
	}
	seeds := []string{n.self.BusAddr}
	for _, p := range n.Peers() {
		if p.ID != n.self.ID && p.ID != them.Node.ID {
			seeds = append(seeds, p.BusAddr)
		}
	}
	return n.meetCall(ctx, them.Node.Bus, meetReq{Op: "join", Seeds: seeds}, nil)
}

// joinThrough asks the node at bus to add this one to its cluster (to
// create one first when create is set), then joins it.
func (n *Node) joinThrough(ctx context.Context, bus string, me meetHello, create bool) error {
	req := meetReq{Op: "add", Node: me.Node, Ranges: me.Claims, Create: create}
	if err := n.meetCall(ctx, bus, req, nil); err != nil {
		return err
	}
	n.startJoining([]string{bus})
	return nil
}

// createCluster makes this unmet node a cluster of itself around its
// claims, and waits until the map exists.
func (n *Node) createCluster(ctx context.Context) error {
	n.meeting.mu.Lock()
	if n.unmetLocked() {
		if len(n.meeting.claims) == 0 {
			n.meeting.mu.Unlock()
			return ErrMeetNoSlots
		}
		init := &meta.Init{Manual: true,
			Nodes:  []meta.Node{{ID: n.self.ID, Client: n.self.ClientAddr, Bus: n.self.BusAddr}},
			Groups: []meta.Group{{ID: 1, Ranges: slices.Clone(n.meeting.claims), Replicas: []string{n.self.ID}}},
		}
		if err := n.meta.raft.BootstrapCluster(metaServers([]Peer{n.self})).Error(); err != nil {
			n.meeting.mu.Unlock()
			return fmt.Errorf("meet: creating the cluster: %w", err)
		}
		n.meta.init.Store(init)
		n.log.Info("meet: created a cluster of this node", "slots", init.Groups[0].Ranges)
	}
	n.meeting.mu.Unlock()
	n.startJoining(nil)
	return n.waitMember(ctx)
}

// waitMember waits until the map exists and lists this node.
func (n *Node) waitMember(ctx context.Context) error {
	for {
		if m := n.Map(); m.Initialized() && m.IsActive(n.self.ID) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("meet: waiting for the cluster map: %w", ctx.Err())
		case <-time.After(metaRetry):
		}
	}
}

// meetCall runs one svcMeet request on the node at bus, decoding its
// answer into out unless out is nil.
func (n *Node) meetCall(ctx context.Context, bus string, req meetReq, out any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	res, err := n.mux.Call(ctx, bus, svcMeet, b)
	if err != nil {
		return fmt.Errorf("meet %s: %w", bus, err)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(res, out); err != nil {
		return fmt.Errorf("meet %s: bad answer: %w", bus, err)
	}
	return nil
}

// serveMeet is the svcMeet service.
func (n *Node) serveMeet(ctx context.Context, _ string, payload []byte) ([]byte, error) {
	var req meetReq
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, fmt.Errorf("meet: bad request: %w", err)
	}
	switch req.Op {
	case "hello":
		return json.Marshal(n.hello())
	case "add":
		return nil, n.serveMeetAdd(ctx, req)
	case "join":
		if !n.Unmet() {
			return nil, ErrMeetJoining
		}
		n.startJoining(req.Seeds)
		n.log.Info("meet: joining a cluster", "seeds", req.Seeds)
		return nil, nil
	}
	return nil, fmt.Errorf("meet: unknown op %q", req.Op)
}

// serveMeetAdd adds the caller to this node's cluster, created first when
// this node is unmet and the caller allows it.
func (n *Node) serveMeetAdd(ctx context.Context, req meetReq) error {
	if req.Node.ID == "" || req.Node.Bus == "" || checkClaims(req.Ranges) != nil {
		return fmt.Errorf("meet: bad node %q", req.Node.ID)
	}
	ctx, cancel := context.WithTimeout(ctx, meetTimeout)
	defer cancel()
	if m := n.Map(); !m.Initialized() || !m.IsActive(n.self.ID) {
		if !req.Create || !n.Unmet() {
			return ErrMeetJoining
		}
		if err := n.createCluster(ctx); err != nil {
			return err
		}
	}
	if err := n.ProposeMeta(ctx, meta.Meet{Node: req.Node, Ranges: req.Ranges}); err != nil {
		return fmt.Errorf("adding node %s: %w", req.Node.ID, err)
	}
	n.log.Info("meet: added a node", "node", req.Node.ID, "slots", req.Ranges)
	return nil
}

// ClaimSlots is CLUSTER ADDSLOTS on a member of a cluster placed by hand:
// the unassigned slots go to the group this node leads (meta.ClaimSlots).
func (n *Node) ClaimSlots(ctx context.Context, ranges []slots.Range) error {
	return n.ProposeMeta(ctx, meta.ClaimSlots{Node: n.self.ID, Ranges: ranges})
}

// Replicate is CLUSTER REPLICATE: this node replicates the groups master
// leads (meta.Replicate).
func (n *Node) Replicate(ctx context.Context, master string) error {
	return n.ProposeMeta(ctx, meta.Replicate{Node: n.self.ID, Master: master, Want: n.cfg.Replicas})
}

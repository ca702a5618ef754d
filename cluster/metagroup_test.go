package cluster

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/slotraft/slotraft/cluster/meta"
	"github.com/slotraft/slotraft/cluster/transport"
	"github.com/slotraft/slotraft/resp"
)

// metaLeader polls until a node leads the meta group and returns its index.
func (c *TestCluster) metaLeader() int {
	c.t.Helper()
	li := -1
	PollUntil(c.t, "a meta leader", func() bool {
		for i, n := range c.Nodes {
			if n != nil && n.meta.isLeader() {
				li = i
				return true
			}
		}
		return false
	})
	return li
}

// TestMetaLeadershipLostIsOutcomeUnknown: a map change that the meta leader
// appended and its followers stored, but whose commit it never saw before
// it was deposed, may yet apply (the next leader commits it): its proposer
// must get an outcome-unknown error, never ErrNotLeader, which says the
// change was never proposed and may be retried.
func TestMetaLeadershipLostIsOutcomeUnknown(t *testing.T) {
	c := NewTestCluster(t, 3, 3)
	li := c.metaLeader()
	leader := c.Nodes[li]
	_, err := c.appendThenCut(li, func(n *Node) *raft.Raft { return n.meta.raft }, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return leader.ProposeMeta(ctx, meta.SetRebalance{On: !leader.meta.fsm.Map().Rebalance})
	})
	if errors.Is(err, ErrNotLeader) || !errors.Is(err, resp.ErrOutcomeUnknown) {
		t.Fatalf("a map change appended by a deposed meta leader: %v; want an outcome-unknown error", err)
	}
}

// TestForwardedMetaOutcome: how a change forwarded to the meta leader
// (svcMeta) ended, as the forwarding node sees it.
func TestForwardedMetaOutcome(t *testing.T) {
	refused := &transport.RemoteError{Msg: "meta: stale"}
	cases := []struct {
		name           string
		out            []byte
		err            error
		retry, unknown bool
	}{
		{"applied", nil, nil, false, false},
		{"not the leader: never proposed", []byte{metaNotLeader}, nil, true, false},
		{"answered with an error", nil, refused, false, false},
		{"call failed on the way", nil, io.ErrUnexpectedEOF, false, true},
		{"caller gave up", nil, context.DeadlineExceeded, false, true},
	}
	for _, tc := range cases {
		err := forwardedMetaOutcome("leader:1", tc.out, tc.err)
		if tc.err == nil && tc.out == nil && err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if errors.Is(err, errMetaRetry) != tc.retry || errors.Is(err, resp.ErrOutcomeUnknown) != tc.unknown {
			t.Errorf("%s: %v (retry %v, unknown %v)", tc.name, err, tc.retry, tc.unknown)
		}
		if tc.err != nil && !errors.Is(err, tc.err) {
			t.Errorf("%s: %v does not wrap %v", tc.name, err, tc.err)
		}
	}
}

// TestStaticBeyondMetaVoters: a static cluster of more nodes than the meta
// group has voters starts on every node: the nodes past metaVoters do not
// bootstrap (Raft refuses a non-voter's bootstrap: they failed to start
// with "node is not a voter") but follow the meta group as non-voters.
func TestStaticBeyondMetaVoters(t *testing.T) {
	c := NewTestCluster(t, metaVoters+1, 3) // NewTestCluster waits for every node's map
	last := c.Nodes[metaVoters]
	cf := last.meta.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		t.Fatal(err)
	}
	voters := 0
	for _, s := range cf.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			voters++
		}
		if s.ID == raft.ServerID(last.self.ID) && s.Suffrage != raft.Nonvoter {
			t.Errorf("%s is a %v of the meta group, want a non-voter", s.ID, s.Suffrage)
		}
	}
	if voters != metaVoters {
		t.Errorf("%d meta voters, want %d", voters, metaVoters)
	}
}

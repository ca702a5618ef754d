package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
)

func TestBlockRegistry(t *testing.T) {
	b := newBlockRegistry(nil)
	id := fsm.WaiterID{Index: 5}
	b.onEvent(fsm.BlockEvent{Index: 5, Blocked: []fsm.Blocked{{ID: id, Deadline: 1}}})
	// Served before its connection claims it: the claim finds the reply.
	b.onEvent(fsm.BlockEvent{Index: 6, Deferred: []fsm.Deferred{{ID: id, Outcome: fsm.Replied(resp.Int(7))}}})
	s := b.claim(id)
	if s == nil || (<-s.done).Outcome.Reply.Int != 7 || len(b.slots) != 0 || len(b.byDeadline) != 0 {
		t.Fatalf("claim after reply: %v, %d slots", s, len(b.slots))
	}
	if b.claim(fsm.WaiterID{Index: 9}) != nil {
		t.Fatal("claimed an unknown waiter")
	}
	// Abandoned: the leader unblocks it, then forgets it.
	id2 := fsm.WaiterID{Index: 10}
	b.onEvent(fsm.BlockEvent{Blocked: []fsm.Blocked{{ID: id2}}})
	s2 := b.claim(id2)
	b.abandon(s2)
	if ids, _ := b.due(time.Now(), true); len(ids) != 1 || ids[0] != id2 {
		t.Fatalf("due = %v", ids)
	}
	if ids, _ := b.due(time.Now(), true); len(ids) != 0 {
		t.Fatalf("proposed again at once: %v", ids)
	}
	b.onEvent(fsm.BlockEvent{Deferred: []fsm.Deferred{{ID: id2, Outcome: fsm.Replied(resp.NullArray())}}})
	if len(b.slots) != 0 {
		t.Fatal("abandoned slot kept")
	}
	// Reset: a claimed waiter the restored state lacks was served or
	// dropped, which is unknown; one it still has goes on waiting.
	id3, kept := fsm.WaiterID{Index: 11}, fsm.WaiterID{Index: 12}
	b.onEvent(fsm.BlockEvent{Blocked: []fsm.Blocked{{ID: id3}, {ID: kept}}})
	s3, sk := b.claim(id3), b.claim(kept)
	b.onEvent(fsm.BlockEvent{Reset: true, Blocked: []fsm.Blocked{{ID: kept}, {ID: fsm.WaiterID{Index: 13}, Deadline: 99}}})
	if v := (<-s3.done).Outcome.Reply; string(v.Str) != resp.ErrOutcomeUnknown.Error() || len(b.slots) != 2 || len(b.byDeadline) != 1 {
		t.Fatalf("reset: %q, %d slots", v.Str, len(b.slots))
	}
	if len(sk.done) != 0 {
		t.Fatal("reset answered a waiter the restored state still has")
	}

	// A node that stops leading answers its claimed waiters only when it
	// cannot learn their end: after blockLostWait, or once it stops hosting
	// the group; until then an entry it applies ends them.
	start := time.Now()
	b.failClaimed(start, false, false)
	b.failClaimed(start.Add(blockLostWait-time.Millisecond), false, false)
	if len(sk.done) != 0 {
		t.Fatal("a deposed leader's blocked client answered before its end was known")
	}
	b.onEvent(fsm.BlockEvent{Deferred: []fsm.Deferred{{ID: kept, Outcome: fsm.Replied(resp.Int(3))}}})
	if v := (<-sk.done).Outcome.Reply; v.Int != 3 {
		t.Fatalf("deposed leader's waiter served with %v", v)
	}
	for _, final := range []bool{false, true} {
		id := fsm.WaiterID{Index: 20}
		b.onEvent(fsm.BlockEvent{Blocked: []fsm.Blocked{{ID: id}}})
		s := b.claim(id)
		b.failClaimed(start, true, false) // still leading: nothing to answer
		b.failClaimed(start, false, final)
		if !final {
			b.failClaimed(start.Add(blockLostWait), false, false)
		}
		if v := (<-s.done).Outcome.Reply; string(v.Str) != resp.ErrOutcomeUnknown.Error() {
			t.Fatalf("final=%v: %q", final, v.Str)
		}
	}
}

// TestBlockedClientOfDeposedLeader: a leader appends an RPUSH that its
// followers store but whose commit it never sees, and is deposed while a
// BLPOP of its client is blocked on that key. The next leader commits the
// old term's RPUSH, which serves the old term's waiter: the element is the
// BLPOP's, so its client must get it (this node applies the same log as a
// follower) or, if it cannot know, an outcome-unknown error — never a
// redirect or UNBLOCKED, which say that nothing was popped.
func TestBlockedClientOfDeposedLeader(t *testing.T) {
	c := NewTestCluster(t, 3, 3)
	const gid = 1
	c.LeadersSpread()
	li := c.Leader(gid)
	g := grp(c.Nodes[li], gid)
	key := KeyIn(gid, 3, "deposed")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	outs, err := g.Propose(ctx, [][][]byte{Argv("BLPOP", key, "0")})
	if err != nil || outs[0].Kind != fsm.OutcomeBlocked {
		t.Fatalf("BLPOP: %v, %v", outs, err)
	}
	w := g.ClaimWaiter(outs[0].Waiter)
	if w == nil {
		t.Fatal("cannot claim the BLPOP's waiter")
	}

	before := g.raft.LastIndex()
	others, _ := c.appendThenCut(li, func(n *Node) *raft.Raft { return grp(n, gid).raft }, func() error {
		_, err := g.Propose(context.Background(), [][][]byte{Argv("RPUSH", key, "x")})
		return err
	})
	nl := c.Leader(gid, others...)
	PollUntil(t, "the new leader to apply the old term's RPUSH", func() bool {
		return grp(c.Nodes[nl], gid).AppliedIndex() > before
	})
	// Cut off, the old leader cannot know how its waiter ended: its client
	// must not be told anything yet.
	var end BlockEnd
	answered := false
	select {
	case end = <-w.Done():
		answered = true
	case <-time.After(2 * time.Second):
	}
	c.Faults.HealAll()
	if !answered {
		select {
		case end = <-w.Done():
		case <-time.After(TestWait):
			t.Fatal("the blocked client was never answered")
		}
	}
	// After the heal, leader spreading may move the leadership: a read
	// refused as not-leader is asked again.
	var n resp.Value
	PollUntil(t, "LLEN on the group's leader", func() bool {
		var err error
		n, err = ReadOn(c.Nodes[c.Leader(gid)], gid, "LLEN", key)
		if err != nil && !errors.Is(err, ErrNotLeader) {
			t.Fatal(err)
		}
		return err == nil
	})
	got := fmt.Sprintf("%q", end.Outcome.Reply.Append(nil, resp.RESP2))
	t.Logf("blocked client: %s; LLEN %s = %d", got, key, n.Int)
	if end.Outcome.Reply.IsError() && !strings.HasPrefix(string(end.Outcome.Reply.Str), "ERR write outcome unknown") {
		t.Fatalf("blocked client of the deposed leader got %s while LLEN %s = %d: the element is gone", got, key, n.Int)
	}
	if !end.Outcome.Reply.IsError() && n.Int != 0 {
		t.Fatalf("element both served and kept: %s, LLEN %d", got, n.Int)
	}
}

// appendThenCut has node li, a leader of the Raft that raftOf picks, append
// what propose proposes without ever seeing it commit: the followers store
// it but their answers are held back; once every follower's log has it, li
// is cut off from them. propose must then fail (li was deposed): its error
// is returned with the other nodes, which commit the entry under their next
// leader.
func (c *TestCluster) appendThenCut(li int, raftOf func(*Node) *raft.Raft, propose func() error) (others []int, err error) {
	c.t.Helper()
	for i := range c.Nodes {
		if i != li {
			others = append(others, i)
			c.Faults.Delay(c.Peers[i].ID, c.Peers[li].ID, 2*time.Second)
		}
	}
	leader := raftOf(c.Nodes[li])
	before := leader.LastIndex()
	proposed := make(chan error, 1)
	go func() { proposed <- propose() }()
	PollUntil(c.t, "the entry in every follower's log", func() bool {
		last := leader.LastIndex()
		for _, o := range others {
			if raftOf(c.Nodes[o]).LastIndex() < last {
				return false
			}
		}
		return last > before
	})
	c.Faults.Isolate(c.Peers[li].ID)
	for _, o := range others {
		c.Faults.Delay(c.Peers[o].ID, c.Peers[li].ID, 0)
	}
	if err = <-proposed; err == nil {
		c.t.Fatal("the deposed leader acknowledged its entry")
	}
	return others, err
}

package cluster

import (
	"testing"
	"time"

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
	// Reset answers claimed waiters and mirrors the restored ones.
	id3 := fsm.WaiterID{Index: 11}
	b.onEvent(fsm.BlockEvent{Blocked: []fsm.Blocked{{ID: id3}}})
	s3 := b.claim(id3)
	b.onEvent(fsm.BlockEvent{Reset: true, Blocked: []fsm.Blocked{{ID: fsm.WaiterID{Index: 12}, Deadline: 99}}})
	if v := (<-s3.done).Outcome.Reply; !v.IsError() || len(b.slots) != 1 || len(b.byDeadline) != 1 {
		t.Fatalf("reset: %v, %d slots", v, len(b.slots))
	}
}

package chaos

import (
	"slices"
	"testing"

	"github.com/slotraft/slotraft/slots"
)

// TestChooseMembership: only changes that keep the member count within
// one of --nodes and above --replicas, with a spare for a new node.
func TestChooseMembership(t *testing.T) {
	tests := []struct {
		members, base, replicas, spares int
		want                            []string // over picks 0, 1, 2, …
	}{
		{members: 5, base: 5, replicas: 3, spares: 2, want: []string{actJoin, actDrain, actReplace}},
		{members: 6, base: 5, replicas: 3, spares: 2, want: []string{actDrain, actReplace}},
		{members: 4, base: 5, replicas: 3, spares: 2, want: []string{actJoin, actReplace}},
		{members: 5, base: 5, replicas: 3, spares: 0, want: []string{actDrain}},
		{members: 3, base: 3, replicas: 3, spares: 1, want: []string{actJoin}},
		{members: 3, base: 3, replicas: 3, spares: 0, want: []string{""}},
		{members: 4, base: 3, replicas: 3, spares: 0, want: []string{actDrain}},
	}
	for _, tt := range tests {
		for pick, want := range slices.Concat(tt.want, tt.want) {
			if got := chooseMembership(uint64(pick), tt.members, tt.base, tt.replicas, tt.spares); got != want {
				t.Errorf("chooseMembership(%d, %d members, base %d, %d replicas, %d spares) = %q, want %q",
					pick, tt.members, tt.base, tt.replicas, tt.spares, got, want)
			}
		}
	}
}

func TestSparesFor(t *testing.T) {
	plan := []step{{Kind: "membership"}, {Kind: "kill"}, {Kind: "membership"}, {Kind: "migrate"}}
	if got := sparesFor(plan, 5); got != 2 {
		t.Errorf("sparesFor = %d, want 2", got)
	}
	if got := sparesFor(plan, 252); got != 1 {
		t.Errorf("sparesFor with 252 nodes = %d, want 1 (node i binds 127.0.0.(i+2))", got)
	}
}

// TestChooseMove: the moved range is owned by the source, the target is
// another group, the choice is a function of pick, and most picks hit a
// workload key's slot.
func TestChooseMove(t *testing.T) {
	groups := []shard{
		{id: 1, ranges: []slots.Range{{Start: 0, End: 99}, {Start: 500, End: 5460}}},
		{id: 2, ranges: []slots.Range{{Start: 100, End: 499}, {Start: 5461, End: 16383}}},
		{id: 3},
	}
	keySlots := []uint16{42, 7000, 12000}
	withKeys := 0
	for pick := range uint64(300) {
		mv, ok := chooseMove(pick, groups, keySlots)
		if !ok {
			t.Fatalf("pick %d: no move", pick)
		}
		if again, _ := chooseMove(pick, groups, keySlots); again != mv {
			t.Fatalf("pick %d: %+v then %+v", pick, mv, again)
		}
		src := groups[slices.IndexFunc(groups, func(g shard) bool { return g.id == mv.from })]
		if mv.to == mv.from || !ownsAll(src, mv.slots) || mv.slots.Len() > maxMove {
			t.Fatalf("pick %d: %+v: target is the source, or slots not all the source's, or too many", pick, mv)
		}
		if mv.keyed > 0 {
			withKeys++
		}
	}
	if withKeys < 100 {
		t.Errorf("%d of 300 moves hold a workload key, want most of two thirds", withKeys)
	}
	if _, ok := chooseMove(1, groups[:1], keySlots); ok {
		t.Error("a move with one group")
	}
	if _, ok := chooseMove(1, []shard{{id: 1}, {id: 2}}, keySlots); ok {
		t.Error("a move with no group owning slots")
	}
}

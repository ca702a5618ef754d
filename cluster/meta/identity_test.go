package meta

import (
	"errors"
	"testing"
)

// TestApplySetUID: a member's uid is recorded once; a node added again
// after its removal (a new member) takes the uid its AddNode carries.
func TestApplySetUID(t *testing.T) {
	m := fixture(t) // n1..n4 active, n5 removed
	runApply(t, []applyCase{
		{name: "first time", start: m, cmd: SetUID{ID: "n2", UID: "u2"}, want: func(m *Map) { m.Nodes[1].UID = "u2" }},
		{name: "removed node", start: m, cmd: SetUID{ID: "n5", UID: "u5"}, err: ErrNodeRemoved},
		{name: "empty", start: m, cmd: SetUID{ID: "n2"}, err: ErrInvalid},
		{name: "unknown node", start: m, cmd: SetUID{ID: "n9", UID: "u"}, err: ErrUnknownNode},
	})
	withUID := applyAll(t, m, SetUID{ID: "n2", UID: "u2"})
	if _, err := Apply(withUID, SetUID{ID: "n2", UID: "other"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a second uid: %v, want ErrInvalid", err)
	}
	if got, _ := Apply(withUID, SetUID{ID: "n2", UID: "u2"}); got != withUID {
		t.Error("the same uid again changed the map")
	}
	removed := applyAll(t, withUID, RemoveNode{ID: "n2"})
	back := applyAll(t, removed, AddNode{Node: Node{ID: "n2", Bus: "n2:16379", UID: "new"}})
	if nd, _ := back.Node("n2"); nd.UID != "new" || nd.Incarnation != 2 || nd.State != Active {
		t.Errorf("n2 added again: %+v, want a new incarnation with uid new", nd)
	}
	fresh := applyAll(t, m, AddNode{Node: Node{ID: "n6", Bus: "n6:16379", UID: "u6"}})
	if nd, _ := fresh.Node("n6"); nd.UID != "u6" {
		t.Errorf("n6 added: %+v", nd)
	}
}

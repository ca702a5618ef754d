package server

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/cluster/meta"
)

func TestSetSlotParse(t *testing.T) {
	tests := []struct {
		args    string
		want    setSlotCmd
		wantErr string
	}{
		{"cluster setslot 7 importing abc", setSlotCmd{slot: 7, action: slotImporting, node: "abc"}, ""},
		{"CLUSTER SETSLOT 16383 MIGRATING abc", setSlotCmd{slot: 16383, action: slotMigrating, node: "abc"}, ""},
		{"cluster setslot 0 NoDe abc", setSlotCmd{slot: 0, action: slotNode, node: "abc"}, ""},
		{"cluster setslot 5 stable", setSlotCmd{slot: 5, action: slotStable}, ""},
		{"cluster setslot 16384 stable", setSlotCmd{}, "ERR Invalid or out of range slot"},
		{"cluster setslot -1 stable", setSlotCmd{}, "ERR Invalid or out of range slot"},
		{"cluster setslot x stable", setSlotCmd{}, "ERR Invalid or out of range slot"},
		{"cluster setslot 5 stable abc", setSlotCmd{}, "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP"},
		{"cluster setslot 5 node", setSlotCmd{}, "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP"},
		{"cluster setslot 5 importing a b", setSlotCmd{}, "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP"},
		{"cluster setslot 5 move abc", setSlotCmd{}, "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP"},
		// The slot is checked before the action, as getSlotOrReply runs first.
		{"cluster setslot 99999 move", setSlotCmd{}, "ERR Invalid or out of range slot"},
	}
	for _, tt := range tests {
		got, err := parseSetSlot(cluster.Argv(strings.Fields(tt.args)...))
		if errText(err) != tt.wantErr || got != tt.want {
			t.Errorf("%s: %+v, %q; want %+v, %q", tt.args, got, errText(err), tt.want, tt.wantErr)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// setSlotFixture: groups 1-3 led by n1-n3, every node a replica of every
// group, n4 a replica of group 3 only that leads nothing; slot 100 belongs
// to group 1.
func setSlotFixture(self string) slotState {
	st := slotState{self: self, selfMaster: self != "n4", nodes: map[string]string{}, owner: 1}
	for _, id := range []string{"n1", "n2", "n3", "n4"} {
		st.nodes[NodeID(id)] = id
	}
	all := []string{"n1", "n2", "n3"}
	st.groups = []groupHosts{
		{id: 1, leader: "n1", replicas: all},
		{id: 2, leader: "n2", replicas: all},
		{id: 3, leader: "n3", replicas: append(all, "n4")},
	}
	return st
}

func withMigration(st slotState, mig meta.Migration) slotState {
	st.mig, st.migrating = mig, true
	return st
}

func TestSetSlotDecide(t *testing.T) {
	id := NodeID
	unknown := strings.Repeat("f", 40)
	// n1 leads groups 1 and 4 in this one, so it can send slot 100 (of
	// group 1) to itself, to group 4.
	twoGroups := setSlotFixture("n1")
	twoGroups.groups = append(twoGroups.groups, groupHosts{id: 4, leader: "n1", replicas: []string{"n1"}})
	tests := []struct {
		name    string
		cmd     setSlotCmd
		st      slotState
		want    setSlotPlan
		wantErr string
	}{
		{"importing on the target", setSlotCmd{100, slotImporting, id("n1")}, setSlotFixture("n2"),
			setSlotPlan{start: true, to: 2}, ""},
		{"importing on the owner", setSlotCmd{100, slotImporting, id("n2")}, setSlotFixture("n1"),
			setSlotPlan{}, "ERR I'm already the owner of hash slot 100"},
		{"importing from an unknown node", setSlotCmd{100, slotImporting, unknown}, setSlotFixture("n2"),
			setSlotPlan{}, "ERR I don't know about node " + unknown},
		{"importing on a node leading nothing", setSlotCmd{100, slotImporting, id("n1")}, setSlotFixture("n4"),
			setSlotPlan{}, "ERR I lead no slot group to import hash slot 100 into"},
		{"importing again after migrating", setSlotCmd{100, slotImporting, id("n1")},
			withMigration(setSlotFixture("n2"), meta.Migration{Slot: 100, From: 1, To: 2, Hold: true}), setSlotPlan{}, ""},
		{"migrating on the owner", setSlotCmd{100, slotMigrating, id("n3")}, setSlotFixture("n1"),
			setSlotPlan{start: true, to: 3}, ""},
		{"migrating after importing", setSlotCmd{100, slotMigrating, id("n2")},
			withMigration(setSlotFixture("n1"), meta.Migration{Slot: 100, From: 1, To: 2, Hold: true}), setSlotPlan{}, ""},
		{"migrating on another node", setSlotCmd{100, slotMigrating, id("n3")}, setSlotFixture("n2"),
			setSlotPlan{}, "ERR I'm not the owner of hash slot 100"},
		{"migrating to an unknown node", setSlotCmd{100, slotMigrating, unknown}, setSlotFixture("n1"),
			setSlotPlan{}, "ERR I don't know about node " + unknown},
		{"migrating to a node leading nothing", setSlotCmd{100, slotMigrating, id("n4")}, setSlotFixture("n1"),
			setSlotPlan{}, "ERR Target node is not a master"},
		{"migrating to myself, leading only the owner", setSlotCmd{100, slotMigrating, id("n1")}, setSlotFixture("n1"),
			setSlotPlan{}, "ERR Target node is already the owner of hash slot 100"},
		{"migrating to myself, leading another group", setSlotCmd{100, slotMigrating, id("n1")}, twoGroups,
			setSlotPlan{start: true, to: 4}, ""},
		{"migrating elsewhere than recorded", setSlotCmd{100, slotMigrating, id("n3")},
			withMigration(setSlotFixture("n1"), meta.Migration{Slot: 100, From: 1, To: 2, Hold: true}),
			setSlotPlan{start: true, to: 3}, ""},
		{"node completes the migration", setSlotCmd{100, slotNode, id("n2")},
			withMigration(setSlotFixture("n3"), meta.Migration{Slot: 100, From: 1, To: 2, Hold: true}),
			setSlotPlan{complete: true, to: 2}, ""},
		{"node names a node outside the target", setSlotCmd{100, slotNode, id("n4")},
			withMigration(setSlotFixture("n1"), meta.Migration{Slot: 100, From: 1, To: 2, Hold: true}),
			setSlotPlan{}, "ERR hash slot 100 is migrating from slot group 1 to 2, which node " + id("n4") + " does not replicate; a migration cannot be redirected or cancelled"},
		{"node confirms the owner's leader", setSlotCmd{100, slotNode, id("n1")}, setSlotFixture("n2"), setSlotPlan{}, ""},
		{"node confirms a replica of the owner", setSlotCmd{100, slotNode, id("n3")}, setSlotFixture("n2"), setSlotPlan{}, ""},
		{"node would reassign without moving keys", setSlotCmd{100, slotNode, id("n4")}, setSlotFixture("n1"), setSlotPlan{},
			"ERR hash slot 100 is served by slot group 1, which node " + id("n4") + " does not replicate; slotraft moves a slot with its keys: use CLUSTER SETSLOT 100 MIGRATING/IMPORTING (then NODE) or slotraft admin move-slots"},
		{"node unknown", setSlotCmd{100, slotNode, unknown}, setSlotFixture("n1"), setSlotPlan{}, "ERR Unknown node " + unknown},
		{"stable without a migration", setSlotCmd{100, slotStable, ""}, setSlotFixture("n1"), setSlotPlan{}, ""},
		{"stable during a held migration", setSlotCmd{100, slotStable, ""},
			withMigration(setSlotFixture("n1"), meta.Migration{Slot: 100, From: 1, To: 2, Hold: true}), setSlotPlan{},
			"ERR hash slot 100 is migrating from slot group 1 to 2 and cannot be cancelled safely once keys may have moved; complete it with CLUSTER SETSLOT 100 NODE and the target's node id"},
		{"stable during a migration", setSlotCmd{100, slotStable, ""},
			withMigration(setSlotFixture("n1"), meta.Migration{Slot: 100, From: 1, To: 2}), setSlotPlan{},
			"ERR hash slot 100 is migrating from slot group 1 to 2 and cannot be cancelled safely once keys may have moved; it completes on its own"},
	}
	for _, tt := range tests {
		got, err := decideSetSlot(tt.cmd, tt.st)
		if errText(err) != tt.wantErr || got != tt.want {
			t.Errorf("%s: %+v, %q; want %+v, %q", tt.name, got, errText(err), tt.want, tt.wantErr)
		}
	}
}

func TestSetSlotMigrationMarks(t *testing.T) {
	leaders := map[uint32]string{1: "n1", 2: "n2", 3: ""}
	migs := []meta.Migration{{Slot: 5, From: 1, To: 2}, {Slot: 9, From: 2, To: 1}, {Slot: 12, From: 1, To: 3}, {Slot: 20, From: 2, To: 3}}
	tests := []struct {
		self, want string
	}{
		{"n1", " [5->-" + NodeID("n2") + "] [9-<-" + NodeID("n2") + "]"},
		{"n2", " [5-<-" + NodeID("n1") + "] [9->-" + NodeID("n1") + "]"},
		{"n3", ""},
	}
	for _, tt := range tests {
		if got := migrationMarks(tt.self, leaders, migs); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.self, got, tt.want)
		}
	}
	if got := migrationMarks("n1", leaders, nil); got != "" {
		t.Errorf("no migration: %q", got)
	}
}

// TestSetSlotReshardFlow runs redis-cli --cluster reshard's sequence for
// one slot on in-process nodes, each the only replica of one group: slot
// group g on node ng (three nodes keep the meta group's quorum under load).
func TestSetSlotReshardFlow(t *testing.T) {
	c := cluster.NewTestCluster(t, 3, 1)
	for gid := uint32(1); gid <= 3; gid++ {
		c.Leader(gid)
	}
	waitMetaLeader(t, c)
	_, addr1 := serveNode(t, c.Nodes[0])
	_, addr2 := serveNode(t, c.Nodes[1])
	src, dst := dialBlk(t, addr1), dialBlk(t, addr2)
	do := func(b *blkConn, args ...string) string {
		t.Helper()
		b.send(args...)
		return b.read(20 * time.Second)
	}
	key := cluster.KeyIn(1, 3, "reshard")
	slot := strconv.Itoa(int(cluster.KeySlot(key)))
	if got := do(src, "SET", key, "v"); got != "+OK" {
		t.Fatalf("SET = %s", got)
	}
	// The mover starts as soon as the migration is recorded: the key may be
	// gone from the source before redis-cli's GETKEYSINSLOT and MIGRATE.
	const either = "|"
	steps := []struct {
		on   *blkConn
		args []string
		want string // alternatives separated by either
	}{
		{dst, []string{"CLUSTER", "SETSLOT", slot, "IMPORTING", NodeID("n1")}, "+OK"},
		{src, []string{"CLUSTER", "SETSLOT", slot, "MIGRATING", NodeID("n2")}, "+OK"},
		{src, []string{"CLUSTER", "GETKEYSINSLOT", slot, "10"}, "[" + key + "]" + either + "[]"},
		{src, []string{"MIGRATE", "127.0.0.1", "7001", "", "0", "10000", "KEYS", key}, "+OK" + either + "+NOKEY"},
		{src, []string{"MIGRATE", "127.0.0.1", "7001", "", "0", "10000", "KEYS", key}, "+NOKEY"},
		{src, []string{"CLUSTER", "GETKEYSINSLOT", slot, "10"}, "[]"},
		{src, []string{"CLUSTER", "SETSLOT", slot, "STABLE"}, "-ERR hash slot " + slot + " is migrating from slot group 1 to 2 and cannot be cancelled safely once keys may have moved; complete it with CLUSTER SETSLOT " + slot + " NODE and the target's node id"},
		{dst, []string{"CLUSTER", "SETSLOT", slot, "NODE", NodeID("n2")}, "+OK"},
		{src, []string{"CLUSTER", "SETSLOT", slot, "NODE", NodeID("n2")}, "+OK"},
		{dst, []string{"GET", key}, "v"},
		{src, []string{"CLUSTER", "SETSLOT", slot, "STABLE"}, "+OK"},
	}
	for i, st := range steps {
		if i == 2 { // the markers, once both nodes know the other's leadership
			waitNodesLine(t, src, " ["+slot+"->-"+NodeID("n2")+"]")
			waitNodesLine(t, dst, " ["+slot+"-<-"+NodeID("n1")+"]")
		}
		if got := do(st.on, st.args...); !slices.Contains(strings.Split(st.want, either), got) {
			t.Fatalf("step %d %q = %s, want %s", i, st.args, got, st.want)
		}
	}
	if v, err := cluster.ReadOn(c.Nodes[1], 2, "GET", key); err != nil || cluster.ValueText(v) != "v" {
		t.Fatalf("GET on group 2 = %v, %v", v, err)
	}
	waitNodesLine(t, src, "")
}

// waitMetaLeader waits until c's three nodes know the same meta group
// leader: SETSLOT records migrations in the meta group.
func waitMetaLeader(t *testing.T, c *cluster.TestCluster) {
	t.Helper()
	cluster.PollUntil(t, "one meta leader known everywhere", func() bool {
		l := c.Nodes[0].MetaLeader()
		return l != "" && c.Nodes[1].MetaLeader() == l && c.Nodes[2].MetaLeader() == l
	})
}

// waitNodesLine polls CLUSTER NODES on b until the line of myself ends with
// marks after its slot ranges ("": no marker).
func waitNodesLine(t *testing.T, b *blkConn, marks string) {
	t.Helper()
	var line string
	cluster.PollUntil(t, "CLUSTER NODES marks "+marks, func() bool {
		b.send("CLUSTER", "NODES")
		for _, l := range strings.Split(b.read(5*time.Second), "\n") {
			if strings.Contains(l, "myself") {
				line = l
			}
		}
		i := strings.Index(line, " [")
		return (marks == "" && i < 0) || (marks != "" && i >= 0 && line[i:] == marks)
	})
}

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/cluster/testcluster"
)

func adminRun(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"admin"}, args...), &out, &errb)
	return out.String() + errb.String(), code
}

func adminJSON(t *testing.T, addr string) cluster.ClusterStatus {
	t.Helper()
	st, _, err := adminStatusJSON(addr, "30s")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// adminStatusJSON runs `slotraft admin --addr addr status --json` and
// decodes its output, which it also returns.
func adminStatusJSON(addr, timeout string) (cluster.ClusterStatus, string, error) {
	var out, errb bytes.Buffer
	var st cluster.ClusterStatus
	if code := run([]string{"admin", "--addr", addr, "--timeout", timeout, "status", "--json"}, &out, &errb); code != 0 {
		return st, out.String(), fmt.Errorf("admin status --json against %s: exit %d: %s", addr, code, errb.String())
	}
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		return st, out.String(), fmt.Errorf("admin status --json against %s is not JSON: %w\n%s", addr, err, out.String())
	}
	return st, out.String(), nil
}

func TestAdminStatus(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{Groups: 3, Replicas: 3})
	c.WaitReady(30 * time.Second)
	addr := c.Addrs()[0]

	st := adminJSON(t, addr)
	if st.Self != "node1" || len(st.Nodes) != 3 || len(st.Groups) != 3 {
		t.Fatalf("status: self %q, %d nodes, %d groups; want node1, 3, 3", st.Self, len(st.Nodes), len(st.Groups))
	}
	leaders := 0
	for _, n := range st.Nodes {
		if !n.Reachable || n.Replicas != 3 {
			t.Errorf("node %s: reachable %v, %d replicas; want reachable with 3", n.ID, n.Reachable, n.Replicas)
		}
		leaders += n.Leaders
	}
	if leaders != 3 {
		t.Errorf("%d leaderships over the nodes, want 3", leaders)
	}
	slotsSeen := 0
	for _, g := range st.Groups {
		if g.Leader == "" || len(g.Replicas) != 3 || g.Replicas[0].Node != g.Leader {
			t.Errorf("group %d: leader %q, replicas %+v; want a leader listed first of 3", g.ID, g.Leader, g.Replicas)
		}
		slotsSeen += len(g.Slots)
	}
	if slotsSeen == 0 {
		t.Error("no slot ranges in the status")
	}

	if st.Epoch == 0 || !strings.HasPrefix(st.MetaLeader, "node") {
		t.Errorf("status: epoch %d, meta leader %q; want a map epoch and a meta leader", st.Epoch, st.MetaLeader)
	}

	table, code := adminRun(t, "--addr", addr, "status")
	if code != 0 || !strings.Contains(table, "NODE") || !strings.Contains(table, "GROUP") || strings.Count(table, " up ") != 3 {
		t.Fatalf("admin status table (exit %d):\n%s", code, table)
	}
	if header := regexp.MustCompile(`(?m)^self node1  epoch [1-9][0-9]*  meta leader node[1-3]$`); !header.MatchString(table) {
		t.Fatalf("admin status table has no epoch and meta leader header:\n%s", table)
	}

	// remove-node refuses unknown nodes (live ones are drained: TestDrain).
	for _, tt := range []struct{ id, wantErr string }{
		{id: "node9", wantErr: "no node"},
	} {
		if out, code := adminRun(t, "--addr", addr, "remove-node", tt.id); code != 1 || !strings.Contains(out, "remove-node "+tt.id) || !strings.Contains(out, tt.wantErr) {
			t.Errorf("admin remove-node %s: exit %d, %q; want 1 and an error containing %q", tt.id, code, out, tt.wantErr)
		}
	}

	if out, code := adminRun(t, "--addr", addr, "health", "--ready"); code != 0 || out != "ok\n" {
		t.Errorf("admin health --ready: exit %d, %q", code, out)
	}
	c.StopNode(2)
	if out, code := adminRun(t, "--addr", c.Addrs()[2], "--timeout", "2s", "health"); code != 1 || !strings.HasPrefix(out, "unhealthy: PING: ") {
		t.Errorf("admin health of a stopped node: exit %d, %q; want 1 and why", code, out)
	}
	c.WaitLeaders(30 * time.Second)
	st = adminJSON(t, addr)
	if n := st.Nodes[2]; n.Reachable || n.Error == "" {
		t.Fatalf("stopped node3: %+v, want unreachable with an error", n)
	}
	for _, g := range st.Groups {
		if g.Leader == "" || g.Leader == "node3" {
			t.Errorf("group %d led by %q with node3 stopped", g.ID, g.Leader)
		}
		for _, r := range g.Replicas {
			if r.Node == "node3" && r.State != "unreachable" {
				t.Errorf("group %d: node3's replica is %q, want unreachable", g.ID, r.State)
			}
		}
	}

	// node3 is gone for good: once gossip no longer sees it alive,
	// remove-node takes it out of the map at once (no --dead-after wait).
	removeBy := time.Now().Add(30 * time.Second)
	for {
		out, code := adminRun(t, "--addr", addr, "remove-node", "node3")
		if code == 0 {
			if !strings.Contains(out, "node3 is removed") {
				t.Fatalf("admin remove-node node3: %q", out)
			}
			break
		}
		if time.Now().After(removeBy) {
			t.Fatalf("admin remove-node node3: still failing after 30s: exit %d, %s", code, out)
		}
		time.Sleep(100 * time.Millisecond) // poll interval: gossip must see node3 dead first
	}
	for {
		after := adminJSON(t, addr)
		ids := make([]string, len(after.Nodes))
		for i, n := range after.Nodes {
			ids[i] = n.ID
		}
		if !slices.Contains(ids, "node3") && after.Epoch > st.Epoch {
			break
		}
		if time.Now().After(removeBy) {
			t.Fatalf("after remove-node node3: status nodes %v at epoch %d (was %d); want node3 gone at a later epoch", ids, after.Epoch, st.Epoch)
		}
		time.Sleep(100 * time.Millisecond) // poll interval
	}
}

func TestDefaultAdminAddr(t *testing.T) {
	for bind, want := range map[string]string{
		"": "127.0.0.1:7001", "0.0.0.0:7003": "127.0.0.1:7003", ":7004": "127.0.0.1:7004",
		"[::]:7005": "127.0.0.1:7005", "10.0.0.5:7006": "10.0.0.5:7006", "junk": "junk",
	} {
		if got := defaultAdminAddr(bind); got != want {
			t.Errorf("defaultAdminAddr(%q) = %q, want %q", bind, got, want)
		}
	}
}

func TestPrintStatus(t *testing.T) {
	tests := []struct {
		name string
		st   cluster.ClusterStatus
		want []string // lines the output must contain, in order
	}{
		{
			name: "meta leader known",
			st: cluster.ClusterStatus{Self: "a", Epoch: 7, MetaLeader: "b",
				Nodes: []cluster.NodeStatus{{ID: "a", ClientAddr: "h:1", BusAddr: "h:2", Reachable: true, Gossip: "alive", Leaders: 1, Replicas: 1}},
				Groups: []cluster.GroupStatus{{ID: 1, Slots: []string{"0-16383"}, Leader: "a",
					Replicas: []cluster.ReplicaStatus{{Node: "a", State: "Leader"}}}},
			},
			want: []string{"self a  epoch 7  meta leader b", "NODE", "a     h:1     h:2  up", "GROUP", "1      0-16383  a       a leader 0"},
		},
		{
			name: "no meta leader, no group leader",
			st: cluster.ClusterStatus{Self: "a", Epoch: 0,
				Groups: []cluster.GroupStatus{{ID: 2, Slots: []string{"0-10", "20-30"}}}},
			want: []string{"self a  epoch 0  meta leader -", "2      0-10,20-30  -"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := printStatus(&b, tt.st); err != nil {
				t.Fatal(err)
			}
			out, rest := b.String(), b.String()
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("output lacks %q (in order):\n%s", w, out)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

func TestAdminUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"frobnicate"}, {"remove-node"}, {"remove-node", "a", "b"}, {"transfer-leader", "1"}} {
		if out, code := adminRun(t, args...); code != 2 || !strings.Contains(out, "usage: slotraft admin") {
			t.Errorf("admin %v: exit %d, output %q; want 2 and the usage", args, code, out)
		}
	}
	// Nobody listens on port 1 of loopback: a clear error, exit 1.
	if out, code := adminRun(t, "--addr", "127.0.0.1:1", "--timeout", "2s", "status"); code != 1 || !strings.Contains(out, "status from 127.0.0.1:1") {
		t.Errorf("admin status against nothing: exit %d, %q", code, out)
	}
}

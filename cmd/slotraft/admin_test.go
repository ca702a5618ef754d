package main

import (
	"bytes"
	"encoding/json"
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
	out, code := adminRun(t, "--addr", addr, "status", "--json")
	if code != 0 {
		t.Fatalf("admin status --json: exit %d: %s", code, out)
	}
	var st cluster.ClusterStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("admin status --json is not JSON: %v\n%s", err, out)
	}
	return st
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

	table, code := adminRun(t, "--addr", addr, "status")
	if code != 0 || !strings.Contains(table, "NODE") || !strings.Contains(table, "GROUP") || strings.Count(table, " up ") != 3 {
		t.Fatalf("admin status table (exit %d):\n%s", code, table)
	}

	c.StopNode(2)
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
}

func TestAdminUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"frobnicate"}} {
		if out, code := adminRun(t, args...); code != 2 || !strings.Contains(out, "usage: slotraft admin") {
			t.Errorf("admin %v: exit %d, output %q; want 2 and the usage", args, code, out)
		}
	}
	// Nobody listens on port 1 of loopback: a clear error, exit 1.
	if out, code := adminRun(t, "--addr", "127.0.0.1:1", "--timeout", "2s", "status"); code != 1 || !strings.Contains(out, "status from 127.0.0.1:1") {
		t.Errorf("admin status against nothing: exit %d, %q", code, out)
	}
}

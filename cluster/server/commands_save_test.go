package server

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
)

// TestSaveCommands: SAVE and BGSAVE snapshot the groups this node hosts,
// with Redis's replies and errors; LASTSAVE and INFO persistence follow.
func TestSaveCommands(t *testing.T) {
	c := cluster.NewTestCluster(t, 3, 3)
	const gid = 1
	li, addr := serveLeader(t, c, gid)
	bc := dialBlk(t, addr)
	do := func(args ...string) string {
		bc.send(args...)
		return bc.read(30 * time.Second)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"BGSAVE", "now"}, "-ERR syntax error"},
		{[]string{"BGSAVE", "SCHEDULE", "x"}, "-ERR syntax error"},
		{[]string{"SAVE", "x"}, "-ERR wrong number of arguments for 'save' command"},
		{[]string{"LASTSAVE", "x"}, "-ERR wrong number of arguments for 'lastsave' command"},
	} {
		if got := do(tc.args...); got != tc.want {
			t.Errorf("%q = %q, want %q", tc.args, got, tc.want)
		}
	}

	c.Set(gid, cluster.KeyIn(gid, 3, "save"), "v")
	applied := appliedIndex(t, c.Nodes[li], gid)
	if got := do("SAVE"); got != "+OK" {
		t.Fatalf("SAVE = %q", got)
	}
	if idx := newestSnapshot(t, filepath.Join(c.Dirs[li], "groups", "1", "snapshots")); idx < applied {
		t.Fatalf("after SAVE the newest snapshot of group 1 is at index %d, before the applied %d", idx, applied)
	}
	info := do("INFO", "persistence")
	for _, want := range []string{"rdb_bgsave_in_progress:0", "rdb_last_bgsave_status:ok", "rdb_current_bgsave_time_sec:-1"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO persistence lacks %q:\n%s", want, info)
		}
	}
	last := do("LASTSAVE")
	if n, err := strconv.ParseInt(strings.TrimPrefix(last, ":"), 10, 64); err != nil || time.Since(time.Unix(n, 0)) > time.Minute {
		t.Fatalf("LASTSAVE = %q, want the last minute", last)
	}

	// BGSAVE starts one; a second one at once either finds it running
	// (Redis's error) or, if it is over already, starts another.
	if got := do("BGSAVE"); got != "+Background saving started" {
		t.Fatalf("BGSAVE = %q", got)
	}
	switch got := do("BGSAVE"); got {
	case "-ERR Background save already in progress", "+Background saving started":
	default:
		t.Fatalf("second BGSAVE = %q", got)
	}
	switch got := do("BGSAVE", "schedule"); got {
	case "+Background saving scheduled", "+Background saving started":
	default:
		t.Fatalf("BGSAVE SCHEDULE = %q", got)
	}
	cluster.PollUntil(t, "background saves over", func() bool {
		return !c.Nodes[li].SaveStatus().InProgress
	})
	if st := c.Nodes[li].SaveStatus(); !st.LastOK {
		t.Fatalf("save status after BGSAVE: %+v", st)
	}
	// BGREWRITEAOF is a snapshot too, scheduled behind one in progress.
	before := c.Nodes[li].SaveStatus().LastSave
	if got := do("BGREWRITEAOF"); got != "+Background append only file rewriting started" {
		t.Fatalf("BGREWRITEAOF = %q", got)
	}
	switch got := do("BGREWRITEAOF"); got {
	case "+Background append only file rewriting scheduled", "+Background append only file rewriting started":
	default:
		t.Fatalf("second BGREWRITEAOF = %q", got)
	}
	cluster.PollUntil(t, "the rewrite's snapshot taken", func() bool {
		st := c.Nodes[li].SaveStatus()
		return !st.InProgress && st.LastOK && st.LastSave.After(before)
	})
}

func appliedIndex(t *testing.T, n *cluster.Node, gid uint32) uint64 {
	t.Helper()
	st := n.Status(context.Background())
	for _, g := range st.Groups {
		if g.ID != gid {
			continue
		}
		for _, r := range g.Replicas {
			if r.Node == st.Self {
				return r.AppliedIndex
			}
		}
	}
	t.Fatalf("group %d: no replica on %s in %+v", gid, st.Self, st.Groups)
	return 0
}

// newestSnapshot is the highest index among the snapshots in dir (named
// term-index-time by raft's file snapshot store).
func newestSnapshot(t *testing.T, dir string) uint64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var best uint64
	for _, e := range entries {
		parts := strings.Split(e.Name(), "-")
		if len(parts) < 3 || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		if idx, err := strconv.ParseUint(parts[1], 10, 64); err == nil && idx > best {
			best = idx
		}
	}
	return best
}

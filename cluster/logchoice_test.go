package cluster

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	raftwal "github.com/hashicorp/raft-wal"
	"github.com/slotraft/slotraft/cluster/logstore"
)

func TestParseLogMarker(t *testing.T) {
	tests := []struct {
		in   string
		want logChoice
		err  bool
	}{
		{in: "pebble 42\n", want: logChoice{kind: LogStorePebble, prefix: 42}},
		{in: "pebble 18446744073709551615", want: logChoice{kind: LogStorePebble, prefix: 1<<64 - 1}},
		{in: "bolt\n", want: logChoice{kind: LogStoreBolt}},
		{in: "wal", want: logChoice{kind: LogStoreWAL}},
		{in: "pebble 0", err: true},
		{in: "pebble", err: true},
		{in: "pebble -1", err: true},
		{in: "pebble 1 2", err: true},
		{in: "bolt 1", err: true},
		{in: "rocksdb", err: true},
		{in: "", err: true},
	}
	for _, tt := range tests {
		got, err := parseLogMarker([]byte(tt.in))
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("parseLogMarker(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.err)
		}
		if err == nil {
			if back, err := parseLogMarker([]byte(got.String())); err != nil || back != got {
				t.Errorf("%+v does not survive its String %q: %+v, %v", got, got.String(), back, err)
			}
		}
	}
}

// TestChooseLog: a directory's marker decides, an old bolt directory keeps
// bolt without being touched, and a new one gets the node's choice.
func TestChooseLog(t *testing.T) {
	tests := []struct {
		name   string
		cfg    string
		marker string // written before; "" none
		bolt   bool   // raft.db exists before
		want   string // kind
		wrote  bool   // a marker is there after
		err    bool
	}{
		{name: "new pebble", cfg: LogStorePebble, want: LogStorePebble, wrote: true},
		{name: "new bolt", cfg: LogStoreBolt, want: LogStoreBolt, wrote: true},
		{name: "new wal", cfg: LogStoreWAL, want: LogStoreWAL, wrote: true},
		{name: "old bolt dir", cfg: LogStorePebble, bolt: true, want: LogStoreBolt},
		{name: "marker wins", cfg: LogStoreBolt, marker: "pebble 5\n", bolt: true, want: LogStorePebble, wrote: true},
		{name: "bolt marker under pebble", cfg: LogStorePebble, marker: "bolt\n", bolt: true, want: LogStoreBolt, wrote: true},
		{name: "bad marker", cfg: LogStorePebble, marker: "pebble zero\n", err: true, wrote: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &Node{cfg: Config{LogStore: tt.cfg}}
			db, err := logstore.Open(t.TempDir(), TestLogger())
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			n.raftlog = db
			dir := t.TempDir()
			if tt.marker != "" {
				writeFile(t, filepath.Join(dir, logMarkerName), tt.marker)
			}
			if tt.bolt {
				writeFile(t, filepath.Join(dir, boltFileName), "")
			}
			c, err := n.chooseLog(dir)
			if (err != nil) != tt.err || (err == nil && c.kind != tt.want) {
				t.Fatalf("chooseLog = %+v, %v; want %s, error %v", c, err, tt.want, tt.err)
			}
			if c.kind == LogStorePebble && c.prefix == 0 {
				t.Fatal("pebble log with prefix 0")
			}
			_, statErr := os.Stat(filepath.Join(dir, logMarkerName))
			if (statErr == nil) != tt.wrote {
				t.Fatalf("marker present = %v, want %v", statErr == nil, tt.wrote)
			}
			if again, err := n.chooseLog(dir); !tt.err && (err != nil || again != c) {
				t.Fatalf("second chooseLog = %+v, %v; want %+v", again, err, c)
			}
		})
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
}

func markerOf(t *testing.T, dir string) logChoice {
	t.Helper()
	c, ok, err := readLogMarker(dir)
	if err != nil || !ok {
		t.Fatalf("%s: marker %v, %v", dir, ok, err)
	}
	return c
}

// TestLogStoresRestart: with each log store, a cluster's groups keep their
// log across a restart of every node, and their directories say which
// store they use.
func TestLogStoresRestart(t *testing.T) {
	for _, kind := range []string{LogStorePebble, LogStoreBolt, LogStoreWAL} {
		t.Run(kind, func(t *testing.T) {
			c := newTestClusterLog(t, 3, 3, kind)
			key := KeyIn(1, 3, "restart")
			c.Set(1, key, "v1")
			for i := range c.Nodes {
				for _, dir := range []string{c.Nodes[i].groupDir(1), filepath.Join(c.Dirs[i], "meta")} {
					if got := markerOf(t, dir); got.kind != kind {
						t.Fatalf("%s: marker %v, want %s", dir, got, kind)
					}
				}
				c.Stop(i)
			}
			c.restartAll()
			if got := ValueText(c.Write(1, "GET", key)); got != "v1" {
				t.Fatalf("GET after restarting every node = %q, want v1", got)
			}
			for i, n := range c.Nodes {
				checkLogStore(t, grp(n, 1), kind)
				if last, err := grp(n, 1).stores.log.LastIndex(); err != nil || last == 0 {
					t.Fatalf("node %d: last index %d, %v", i, last, err)
				}
			}
		})
	}
}

// restartAll starts every stopped node, then waits for them: a node alone
// may know its map only once the meta group has a leader again.
func (c *TestCluster) restartAll() {
	c.t.Helper()
	for i, n := range c.Nodes {
		if n == nil {
			c.startAgain(i)
		}
	}
	for i := range c.Nodes {
		c.WaitMap(i)
	}
}

func checkLogStore(t *testing.T, g *Group, kind string) {
	t.Helper()
	var got string
	switch g.stores.log.(type) {
	case *logstore.GroupLog:
		got = LogStorePebble
	case *raftboltdb.BoltStore:
		got = LogStoreBolt
	case *raftwal.WAL:
		got = LogStoreWAL
	}
	if got != kind {
		t.Fatalf("group %d's log is %T, want %s", g.id, g.stores.log, kind)
	}
}

// TestOldBoltDirKeepsBolt: a directory written before log-store markers
// (raft.db holding the log, no marker) reopened by a node whose new groups
// use pebble keeps its log in raft.db, with its data.
func TestOldBoltDirKeepsBolt(t *testing.T) {
	c := newTestClusterLog(t, 3, 3, LogStoreBolt)
	key := KeyIn(1, 3, "old")
	c.Set(1, key, "before")
	const f = 1
	dir := c.Nodes[f].groupDir(1)
	c.Stop(f)
	// Make it a directory of an older slotraft: no marker anywhere.
	for _, d := range []string{dir, filepath.Join(c.Dirs[f], "meta"), c.Dirs[f] + "/groups/2", c.Dirs[f] + "/groups/3"} {
		if err := os.Remove(filepath.Join(d, logMarkerName)); err != nil {
			t.Fatal(err)
		}
	}
	c.LogStore = LogStorePebble
	c.Restart(f)
	PollUntil(t, "the restarted node to reopen group 1", func() bool { return grp(c.Nodes[f], 1).Local() })
	checkLogStore(t, grp(c.Nodes[f], 1), LogStoreBolt)
	PollUntil(t, "the restarted replica to apply its log again", func() bool {
		got, _ := StaleGet(c.Nodes[f], 1, key)
		return got == "before"
	})
	c.Set(1, key, "after")
	PollUntil(t, "a new write to reach the bolt-log replica", func() bool {
		got, _ := StaleGet(c.Nodes[f], 1, key)
		return got == "after"
	})
	if _, ok, _ := readLogMarker(dir); ok {
		t.Fatal("a marker was written into the old directory")
	}
}

// TestRetiredLogKept: a node drained out of the cluster stops its groups
// and moves their directories aside; their pebble logs stay (the sweep at
// the node's start keeps what a marker names) until the directories are
// deleted, after which the next start drops them.
func TestRetiredLogKept(t *testing.T) {
	c := NewTestCluster(t, 4, 3)
	key := KeyIn(1, 3, "retire")
	c.Set(1, key, "v")
	f := (c.metaLeader() + 1) % 4
	hosted := map[uint32]uint64{} // group → its log prefix on f
	for gid := uint32(1); gid <= 3; gid++ {
		if g := grp(c.Nodes[f], gid); g.Local() {
			hosted[gid] = markerOf(t, c.Nodes[f].groupDir(gid)).prefix
		}
	}
	if _, err := c.Nodes[c.metaLeader()].RemoveNode(t.Context(), c.Peers[f].ID); err != nil {
		t.Fatal(err)
	}
	var aside []string
	PollUntil(t, fmt.Sprintf("node %d's %d groups to be moved aside", f, len(hosted)), func() bool {
		aside, _ = filepath.Glob(filepath.Join(c.Dirs[f], "groups", "*.removed-*"))
		return len(aside) == len(hosted)
	})
	for _, d := range aside {
		var gid uint32
		fmt.Sscanf(filepath.Base(d), "%d.", &gid)
		if got := markerOf(t, d).prefix; got != hosted[gid] {
			t.Fatalf("%s names prefix %d, the group used %d", d, got, hosted[gid])
		}
	}
	c.Stop(f)
	c.startAgain(f) // the sweep keeps what the moved-aside directories name
	prefixes := logPrefixes(t, c.Nodes[f])
	for gid, p := range hosted {
		if !slices.Contains(prefixes, p) {
			t.Fatalf("group %d's log %d was dropped while its directory is kept aside", gid, p)
		}
	}
	c.Stop(f)
	for _, d := range aside {
		if err := os.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
	}
	c.startAgain(f)
	prefixes = logPrefixes(t, c.Nodes[f])
	for gid, p := range hosted {
		if slices.Contains(prefixes, p) {
			t.Fatalf("group %d's log %d is kept after its directory was deleted", gid, p)
		}
	}
	if want := markerOf(t, filepath.Join(c.Dirs[f], "meta")).prefix; !slices.Contains(prefixes, want) {
		t.Fatalf("the meta group's log %d was dropped", want)
	}
}

// startAgain restarts node i without waiting for its map: a node removed
// from the cluster never gets it again. NewNode sweeps the log store
// before it returns.
func (c *TestCluster) startAgain(i int) {
	c.t.Helper()
	ln, err := net.Listen("tcp", c.Peers[i].BusAddr)
	if err != nil {
		c.t.Fatal(err)
	}
	c.startWith(i, ln)
}

func logPrefixes(t *testing.T, n *Node) []uint64 {
	t.Helper()
	ps, err := n.raftlog.Prefixes()
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// TestLogStoreConfig: an unknown log store is refused.
func TestLogStoreConfig(t *testing.T) {
	_, _, err := Config{ID: "a", DataDir: t.TempDir(), BusBind: "127.0.0.1:1", LogStore: "rocks"}.withDefaults()
	if err == nil || !strings.Contains(err.Error(), "log store") {
		t.Fatalf("withDefaults with log store rocks = %v", err)
	}
}

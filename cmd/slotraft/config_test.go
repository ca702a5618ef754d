package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
)

func TestParsePeers(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []cluster.Peer
		wantErr string
	}{
		{name: "empty", in: "", want: nil},
		{name: "derived bus", in: "n1=127.0.0.1:7001,n2=127.0.0.1:7002", want: []cluster.Peer{
			{ID: "n1", ClientAddr: "127.0.0.1:7001", BusAddr: "127.0.0.1:17001"},
			{ID: "n2", ClientAddr: "127.0.0.1:7002", BusAddr: "127.0.0.1:17002"},
		}},
		{name: "explicit bus and hostnames", in: " a=node-a:6379@node-a:16400 , b=node-b:6379", want: []cluster.Peer{
			{ID: "a", ClientAddr: "node-a:6379", BusAddr: "node-a:16400"},
			{ID: "b", ClientAddr: "node-b:6379", BusAddr: "node-b:16379"},
		}},
		{name: "ipv6", in: "x=[::1]:7001", want: []cluster.Peer{{ID: "x", ClientAddr: "[::1]:7001", BusAddr: "[::1]:17001"}}},
		{name: "no id", in: "=127.0.0.1:7001", wantErr: "want id="},
		{name: "no equals", in: "127.0.0.1:7001", wantErr: "want id="},
		{name: "duplicate", in: "a=h:1,a=h:2", wantErr: "duplicate id"},
		{name: "no port", in: "a=host", wantErr: "client address"},
		{name: "empty host", in: "a=:7001", wantErr: "missing host"},
		{name: "bad port", in: "a=h:70000", wantErr: "bad port"},
		{name: "bus overflow", in: "a=h:60000", wantErr: "not a valid port"},
		{name: "bad bus", in: "a=h:1@h", wantErr: "bus address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parsePeers(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parsePeers(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parsePeers(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("parsePeers(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestClusterConfig(t *testing.T) {
	threePeers := "node1=127.0.0.1:7001,node2=127.0.0.1:7002,node3=127.0.0.1:7003"
	tests := []struct {
		name    string
		args    []string
		check   func(t *testing.T, c cluster.Config)
		wantErr string
	}{
		{
			name: "single node defaults",
			args: []string{"--id", "n1"},
			check: func(t *testing.T, c cluster.Config) {
				want := cluster.Config{
					ID: "n1", ClientBind: "127.0.0.1:7001", ClientAdvertise: "127.0.0.1:7001",
					BusBind: "127.0.0.1:17001", BusAdvertise: "127.0.0.1:17001", DataDir: "data/n1", LogStore: "pebble",
					Peers:  []cluster.Peer{{ID: "n1", ClientAddr: "127.0.0.1:7001", BusAddr: "127.0.0.1:17001"}},
					Groups: 3, GroupsPerNode: 1, Replicas: 3, DeadAfter: 30 * time.Second,
					RaftHeartbeat: 400 * time.Millisecond, RaftElection: 400 * time.Millisecond,
					RaftLeaderLease: 400 * time.Millisecond,
				}
				if !reflect.DeepEqual(c, want) {
					t.Fatalf("got %+v\nwant %+v", c, want)
				}
			},
		},
		{
			name: "static cluster takes advertise from peers",
			args: []string{"--id", "node2", "--bind", "127.0.0.1:7002", "--peers", threePeers, "--data-dir", "/tmp/x"},
			check: func(t *testing.T, c cluster.Config) {
				if c.ClientAdvertise != "127.0.0.1:7002" || c.BusAdvertise != "127.0.0.1:17002" || c.BusBind != "127.0.0.1:17002" {
					t.Fatalf("addresses: %+v", c)
				}
				if len(c.Peers) != 3 || c.Replicas != 3 || c.DataDir != "/tmp/x" {
					t.Fatalf("config: %+v", c)
				}
			},
		},
		{
			name: "wildcard bind with hostname peers",
			args: []string{"--id", "b", "--bind", "0.0.0.0:7001", "--peers", "a=a:7001,b=b:7001", "--replicas", "5"},
			check: func(t *testing.T, c cluster.Config) {
				if c.ClientAdvertise != "b:7001" || c.BusAdvertise != "b:17001" || c.BusBind != "0.0.0.0:17001" || c.Replicas != 5 {
					t.Fatalf("config: %+v", c)
				}
			},
		},
		{
			name: "explicit bus flags",
			args: []string{"--id", "a", "--bind", ":7001", "--advertise", "h:7001", "--bus-bind", ":9000", "--bus-advertise", "h:9000"},
			check: func(t *testing.T, c cluster.Config) {
				if c.BusBind != ":9000" || c.BusAdvertise != "h:9000" || c.Peers[0].BusAddr != "h:9000" {
					t.Fatalf("config: %+v", c)
				}
			},
		},
		{
			name: "join seeds with own addresses",
			args: []string{"--id", "n4", "--bind", "0.0.0.0:7004", "--advertise", "n4.svc:7004",
				"--join", " n1.svc:17001, 10.0.0.2:17002,n1.svc:17001,", "--dead-after", "3s"},
			check: func(t *testing.T, c cluster.Config) {
				wantJoin := []string{"n1.svc:17001", "10.0.0.2:17002"}
				if !reflect.DeepEqual(c.Join, wantJoin) || c.Bootstrap || c.BootstrapExpect != 0 || c.DeadAfter != 3*time.Second {
					t.Fatalf("config: %+v", c)
				}
				if c.ClientAdvertise != "n4.svc:7004" || c.BusAdvertise != "n4.svc:17004" || c.BusBind != "0.0.0.0:17004" {
					t.Fatalf("addresses: %+v", c)
				}
			},
		},
		{
			name: "log store",
			args: []string{"--id", "n1", "--log-store", "bolt"},
			check: func(t *testing.T, c cluster.Config) {
				if c.LogStore != cluster.LogStoreBolt {
					t.Fatalf("LogStore = %q, want bolt", c.LogStore)
				}
			},
		},
		{
			name: "bootstrap",
			args: []string{"--id", "n1", "--bootstrap", "--replicas", "3"},
			check: func(t *testing.T, c cluster.Config) {
				if !c.Bootstrap || c.Join != nil || c.Replicas != 3 || len(c.Peers) != 1 {
					t.Fatalf("config: %+v", c)
				}
			},
		},
		{
			name: "bootstrap with join",
			args: []string{"--id", "n1", "--bootstrap", "--join", "n2:17001"},
			check: func(t *testing.T, c cluster.Config) {
				if !c.Bootstrap || !reflect.DeepEqual(c.Join, []string{"n2:17001"}) {
					t.Fatalf("config: %+v", c)
				}
			},
		},
		{
			name: "bootstrap-expect with join",
			args: []string{"--id", "n2", "--bootstrap-expect", "3", "--join", "n1:17001,n3:17001"},
			check: func(t *testing.T, c cluster.Config) {
				if c.BootstrapExpect != 3 || c.Bootstrap || len(c.Join) != 2 {
					t.Fatalf("config: %+v", c)
				}
			},
		},
		{name: "bootstrap with peers", args: []string{"--id", "node1", "--peers", threePeers, "--bootstrap"}, wantErr: "--bootstrap creates a cluster of this node alone: it excludes --peers"},
		{name: "bootstrap-expect with peers", args: []string{"--id", "node1", "--peers", threePeers, "--bootstrap-expect", "3"}, wantErr: "--bootstrap-expect excludes --peers"},
		{name: "bootstrap-expect with bootstrap", args: []string{"--id", "a", "--bootstrap", "--bootstrap-expect", "3"}, wantErr: "--bootstrap-expect excludes --bootstrap"},
		{name: "negative bootstrap-expect", args: []string{"--id", "a", "--bootstrap-expect", "-1"}, wantErr: "--bootstrap-expect -1"},
		{name: "join with peers", args: []string{"--id", "node1", "--peers", threePeers, "--join", "127.0.0.1:17002"}, wantErr: "--join excludes --peers"},
		{name: "join without port", args: []string{"--id", "a", "--join", "n1"}, wantErr: "--join: seed"},
		{name: "join empty host", args: []string{"--id", "a", "--join", ":17001"}, wantErr: "missing host"},
		{name: "zero dead-after", args: []string{"--id", "a", "--dead-after", "0s"}, wantErr: "--dead-after 0s"},
		{name: "negative dead-after", args: []string{"--id", "a", "--dead-after", "-5s"}, wantErr: "--dead-after"},
		{
			name: "raft timeout",
			args: []string{"--id", "a", "--raft-timeout", "1s"},
			check: func(t *testing.T, c cluster.Config) {
				if c.RaftHeartbeat != time.Second || c.RaftElection != time.Second || c.RaftLeaderLease != time.Second {
					t.Fatalf("raft timing: %+v", c)
				}
			},
		},
		{name: "raft timeout too short", args: []string{"--id", "a", "--raft-timeout", "50ms"}, wantErr: "--raft-timeout 50ms: want at least 100ms"},
		{name: "negative groups-per-node", args: []string{"--id", "a", "--groups-per-node", "-1"}, wantErr: "--groups-per-node -1"},
		{name: "missing id", args: nil, wantErr: "--id is required"},
		{name: "bad id", args: []string{"--id", "a=b"}, wantErr: "must not contain"},
		{name: "self not in peers", args: []string{"--id", "node9", "--peers", threePeers}, wantErr: "does not list"},
		{name: "advertise disagrees", args: []string{"--id", "node1", "--advertise", "127.0.0.1:9999", "--peers", threePeers}, wantErr: "disagrees"},
		{name: "wildcard advertise", args: []string{"--id", "a", "--bind", "0.0.0.0:7001"}, wantErr: "set --advertise"},
		{name: "unknown log store", args: []string{"--id", "a", "--log-store", "rocks"}, wantErr: "--log-store \"rocks\""},
		{name: "zero groups", args: []string{"--id", "a", "--groups", "0"}, wantErr: "--groups"},
		{name: "zero replicas", args: []string{"--id", "a", "--replicas", "0"}, wantErr: "--replicas"},
		{name: "bad bind", args: []string{"--id", "a", "--bind", "7001"}, wantErr: "--bind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, f := newServerFlagSet(&bytes.Buffer{})
			if err := fs.Parse(tt.args); err != nil {
				t.Fatalf("parse %q: %v", tt.args, err)
			}
			c, err := f.clusterConfig()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestNewLogger(t *testing.T) {
	tests := []struct {
		level, format string
		wantErr       bool
		wantOut       string
	}{
		{level: "info", format: "text", wantOut: "msg=hello"},
		{level: "DEBUG", format: "json", wantOut: `"msg":"hello"`},
		{level: "error", format: "text", wantOut: ""},
		{level: "loud", format: "text", wantErr: true},
		{level: "info", format: "xml", wantErr: true},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		l, _, err := newLogger(&buf, tt.level, tt.format)
		if tt.wantErr {
			if err == nil {
				t.Errorf("newLogger(%q, %q): want an error", tt.level, tt.format)
			}
			continue
		}
		if err != nil {
			t.Fatalf("newLogger(%q, %q): %v", tt.level, tt.format, err)
		}
		l.Info("hello")
		if got := buf.String(); !strings.Contains(got, tt.wantOut) || (tt.wantOut == "" && got != "") {
			t.Errorf("newLogger(%q, %q) wrote %q, want %q", tt.level, tt.format, got, tt.wantOut)
		}
	}
}

func TestShellQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain-arg_1.0:7001", "plain-arg_1.0:7001"},
		{"a=b,c@d", "a=b,c@d"},
		{"", "''"},
		{"with space", "'with space'"},
		{"it's", `'it'\''s'`},
		{"$HOME", "'$HOME'"},
	}
	for _, tt := range tests {
		if got := shellQuote(tt.in); got != tt.want {
			t.Errorf("shellQuote(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDevPlan(t *testing.T) {
	dir := t.TempDir()
	fs, f := newDevFlagSet(&bytes.Buffer{})
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("s", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--data-dir", dir, "--base-port", "7101", "--nodes", "3", "--log-store", "wal", "--cluster-secret-file", secret}); err != nil {
		t.Fatal(err)
	}
	nodes, err := f.plan()
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 3 {
		t.Fatalf("got %d nodes", len(nodes))
	}
	n := nodes[2]
	if n.id != "node3" || n.client != "127.0.0.1:7103" || n.bus != "127.0.0.1:17103" || n.logPath != dir+"/node3.log" {
		t.Fatalf("node3 = %+v", n)
	}
	line := strings.Join(n.argv[1:], " ")
	want := "server --id node3 --bind 127.0.0.1:7103 --peers node1=127.0.0.1:7101,node2=127.0.0.1:7102,node3=127.0.0.1:7103 --data-dir " + dir + "/node3"
	if !strings.HasPrefix(line, want) {
		t.Fatalf("argv = %q, want prefix %q", line, want)
	}
	// The child's own flags must accept what dev passes.
	sfs, sf := newServerFlagSet(&bytes.Buffer{})
	if err := sfs.Parse(n.argv[2:]); err != nil {
		t.Fatal(err)
	}
	if cfg, err := sf.clusterConfig(); err != nil || cfg.LogStore != cluster.LogStoreWAL || len(cfg.ClusterSecret) != 32 {
		t.Fatalf("server takes dev's flags as %+v, %v (want log store wal and the secret)", cfg, err)
	}
	if n.http != "127.0.0.1:9703" || sf.http != n.http {
		t.Fatalf("node3 serves operators' HTTP on %q (server flag %q), want 127.0.0.1:9703", n.http, sf.http)
	}
	if n.facade != "127.0.0.1:26003" || sf.sentinel.bind != n.facade {
		t.Fatalf("node3 serves the Sentinel facade on %q (server flag %q), want 127.0.0.1:26003", n.facade, sf.sentinel.bind)
	}
	if n.proxy != "127.0.0.1:6403" || sf.proxy.bind != n.proxy {
		t.Fatalf("node3 serves proxy mode on %q (server flag %q), want 127.0.0.1:6403", n.proxy, sf.proxy.bind)
	}
	if _, err := (&devFlags{nodes: 3, basePort: 60000, dataDir: dir}).plan(); err == nil {
		t.Fatal("want an error for bus ports past 65535")
	}
}

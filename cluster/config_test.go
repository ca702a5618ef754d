package cluster

import (
	"slices"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/cluster/meta"
)

func TestConfigDefaults(t *testing.T) {
	three := []Peer{{ID: "a", BusAddr: "a:1"}, {ID: "b", BusAddr: "b:1"}, {ID: "c", BusAddr: "c:1"}}
	tests := []struct {
		name     string
		cfg      Config
		wantErr  string
		wantBus  string
		wantSelf Peer
		replicas int
	}{
		{name: "single node defaults", cfg: Config{ID: "a", DataDir: "d", ClientBind: "127.0.0.1:7000"},
			wantBus: "127.0.0.1:17000", wantSelf: Peer{ID: "a", ClientAddr: "127.0.0.1:7000", BusAddr: "127.0.0.1:17000"}, replicas: 3},
		{name: "peers", cfg: Config{ID: "b", DataDir: "d", BusBind: ":1", Peers: three},
			wantBus: ":1", wantSelf: three[1], replicas: 3},
		{name: "replicas kept for nodes that join later", cfg: Config{ID: "b", DataDir: "d", BusBind: ":1", Peers: three[:2], Replicas: 5},
			wantBus: ":1", wantSelf: three[1], replicas: 5},
		{name: "bootstrap with peers", cfg: Config{ID: "a", DataDir: "d", BusBind: ":1", Peers: three, Bootstrap: true}, wantErr: "excludes a peer list"},
		{name: "bootstrap-expect with bootstrap", cfg: Config{ID: "a", DataDir: "d", BusBind: ":1", BootstrapExpect: 3, Bootstrap: true}, wantErr: "bootstrap-expect excludes"},
		{name: "bootstrap-expect with peers", cfg: Config{ID: "a", DataDir: "d", BusBind: ":1", BootstrapExpect: 3, Peers: three}, wantErr: "bootstrap-expect excludes"},
		{name: "no id", cfg: Config{DataDir: "d"}, wantErr: "empty node id"},
		{name: "no dir", cfg: Config{ID: "a"}, wantErr: "empty data dir"},
		{name: "bad client port", cfg: Config{ID: "a", DataDir: "d", ClientBind: "x:60000"}, wantErr: "bus"},
		{name: "self missing", cfg: Config{ID: "z", DataDir: "d", BusBind: ":1", Peers: three}, wantErr: "not in Peers"},
		{name: "duplicate peer", cfg: Config{ID: "a", DataDir: "d", BusBind: ":1", Peers: append(three, three[0])}, wantErr: "duplicate"},
		{name: "advertise mismatch", cfg: Config{ID: "a", DataDir: "d", BusBind: ":1", BusAdvertise: "x:2", Peers: three}, wantErr: "differs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, self, err := tc.cfg.withDefaults()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.BusBind != tc.wantBus || self != tc.wantSelf || got.Replicas != tc.replicas || got.Groups != 3 {
				t.Fatalf("got bus %q self %+v replicas %d groups %d", got.BusBind, self, got.Replicas, got.Groups)
			}
		})
	}
}

func TestPlacement(t *testing.T) {
	peers := func(n int) []Peer {
		var ps []Peer
		for i := range n {
			ps = append(ps, Peer{ID: string(rune('a' + i)), BusAddr: "x"})
		}
		return ps
	}
	tests := []struct {
		nodes, groups, replicas int
		self                    string
		want                    [][]string
	}{
		{3, 3, 3, "a", [][]string{{"a", "b", "c"}, {"b", "c", "a"}, {"c", "a", "b"}}},
		{3, 3, 2, "c", [][]string{{"a", "b"}, {"b", "c"}, {"c", "a"}}},
		{5, 4, 3, "e", [][]string{{"a", "b", "c"}, {"b", "c", "d"}, {"c", "d", "e"}, {"d", "e", "a"}}},
		{1, 2, 1, "a", [][]string{{"a"}, {"a"}}},
	}
	for _, tc := range tests {
		init := staticInit(peers(tc.nodes), tc.groups, tc.replicas)
		m, err := meta.Apply(&meta.Map{}, init)
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		covered := 0
		for i, g := range m.Groups {
			if g.ID != uint32(i+1) || !slices.Equal(g.Replicas, tc.want[i]) || !slices.Equal(g.Boot, tc.want[i]) {
				t.Fatalf("%+v: group %d = %+v", tc, i, g)
			}
			for _, r := range g.Ranges {
				covered += r.Len()
			}
		}
		if covered != 16384 {
			t.Fatalf("%+v: groups cover %d slots", tc, covered)
		}
		for s := range uint16(16384) {
			if g, ok := m.GroupOf(s); !ok || !g.Ranges[0].Contains(s) {
				t.Fatalf("%+v: slot %d maps to %v", tc, s, g)
			}
		}
	}
}

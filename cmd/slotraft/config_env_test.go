package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestConfigEnv: every server flag is also SLOTRAFT_<NAME>; the command
// line wins over the environment, which wins over the config file, which
// wins over the defaults; a bad value names its variable.
func TestConfigEnv(t *testing.T) {
	conf := writeConf(t, "id file\ngroups 5\nreplicas 2\nport 7100\nproxy-bind 127.0.0.1:6500\n")
	env := map[string]string{
		"SLOTRAFT_ID": "env", "SLOTRAFT_GROUPS": "4", "SLOTRAFT_CONFIG": conf,
		"SLOTRAFT_DATA_DIR": "/tmp/from env", "SLOTRAFT_BOOTSTRAP": "true", "OTHER_GROUPS": "9",
		"SLOTRAFT_PROXY_BIND": "127.0.0.1:6401",
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	fs, f := newServerFlagSet(&bytes.Buffer{})
	if err := fs.Parse([]string{"--groups", "2"}); err != nil {
		t.Fatal(err)
	}
	if err := applyEnv(fs, lookup); err != nil {
		t.Fatal(err)
	}
	if _, err := readConfigFile(fs, f); err != nil {
		t.Fatal(err)
	}
	got := []any{f.groups, f.id, f.dataDir, f.bootstrap, f.replicas, f.bind, f.raftTimeout, f.proxy.bind}
	want := []any{2, "env", "/tmp/from env", true, 2, "127.0.0.1:7100", defaultRaftTimeout, "127.0.0.1:6401"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("flag %d: got %v, want %v (all: %v)", i, got[i], want[i], got)
		}
	}

	for name, wantErr := range map[string]string{
		"SLOTRAFT_GROUPS":       `environment SLOTRAFT_GROUPS="x"`,
		"SLOTRAFT_RAFT_TIMEOUT": `environment SLOTRAFT_RAFT_TIMEOUT="x"`,
	} {
		fs, _ := newServerFlagSet(&bytes.Buffer{})
		err := applyEnv(fs, func(k string) (string, bool) { return "x", k == name })
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s=x: %v, want %q", name, err, wantErr)
		}
	}
	if n := envName("bus-advertise"); n != "SLOTRAFT_BUS_ADVERTISE" {
		t.Errorf("envName = %s", n)
	}
}

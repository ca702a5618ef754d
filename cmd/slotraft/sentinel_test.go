package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/cluster"
)

// TestSentinelFlags: --sentinel-* from the command line, the environment
// and a config file; the advertised address defaults to the bind address,
// with the node's advertised host when it binds every interface; bad
// combinations are refused before anything starts.
func TestSentinelFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		file    string
		wantAdv string
		wantErr string
	}{
		{name: "off", args: nil},
		{name: "bind", args: []string{"--sentinel-bind", "127.0.0.1:26379"}, wantAdv: "127.0.0.1:26379"},
		{name: "every interface", args: []string{"--sentinel-bind", "0.0.0.0:26379", "--advertise", "10.0.0.7:7001"}, wantAdv: "10.0.0.7:26379"},
		{name: "advertise", args: []string{"--sentinel-bind", ":26379", "--sentinel-advertise", "sentinel-0.example:26379"}, wantAdv: "sentinel-0.example:26379"},
		{name: "environment", env: map[string]string{"SLOTRAFT_SENTINEL_BIND": "127.0.0.1:26001", "SLOTRAFT_SENTINEL_MASTER_NAME": "a,b"}, wantAdv: "127.0.0.1:26001"},
		{name: "config file", file: "sentinel-bind 127.0.0.1:26002\nsentinel-master-name cache\n", wantAdv: "127.0.0.1:26002"},
		{name: "advertise alone", args: []string{"--sentinel-advertise", "x:1"}, wantErr: "--sentinel-advertise needs --sentinel-bind"},
		{name: "bad bind", args: []string{"--sentinel-bind", "nope"}, wantErr: "--sentinel-bind"},
		{name: "bad advertise", args: []string{"--sentinel-bind", ":1", "--sentinel-advertise", "0.0.0.0"}, wantErr: "--sentinel-advertise"},
		{name: "advertise every interface", args: []string{"--sentinel-bind", ":1", "--sentinel-advertise", "0.0.0.0:1"}, wantErr: "is not dialable"},
		{name: "no name", args: []string{"--sentinel-bind", ":1", "--sentinel-master-name", " , "}, wantErr: "want at least one name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, f := newServerFlagSet(&bytes.Buffer{})
			args := append([]string{"--id", "n1"}, tt.args...)
			if tt.file != "" {
				args = append(args, "--config", writeConf(t, tt.file))
			}
			if err := fs.Parse(args); err != nil {
				t.Fatal(err)
			}
			if err := applyEnv(fs, func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }); err != nil {
				t.Fatal(err)
			}
			if f.config != "" {
				if _, err := readConfigFile(fs, f); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := f.clusterConfig()
			if err != nil {
				t.Fatal(err)
			}
			err = f.sentinel.check(&cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("check: %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || cfg.FrontEnds != (cluster.FrontEnds{Sentinel: tt.wantAdv}) {
				t.Fatalf("check: %v, announced %+v, want %q", err, cfg.FrontEnds, tt.wantAdv)
			}
		})
	}
}

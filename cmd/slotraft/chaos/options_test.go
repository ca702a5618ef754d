package chaos

import (
	"bytes"
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseKinds(t *testing.T) {
	tests := []struct {
		list    string
		want    []string
		wantErr string
	}{
		{list: "all", want: []string{"kill", "pause", "partition", "restart-all", "migrate", "membership", "disk"}},
		{list: "partition, kill,kill", want: []string{"kill", "partition"}},
		{list: "", want: nil},
		{list: "kill,all", want: []string{"kill", "pause", "partition", "restart-all", "migrate", "membership", "disk"}},
		{list: "membership,migrate", want: []string{"migrate", "membership"}},
		{list: "disk,kill", want: []string{"kill", "disk"}},
		{list: "kill,clock", wantErr: "not built yet"},
		{list: "bogus", wantErr: `unknown fault "bogus"`},
	}
	for _, tt := range tests {
		got, err := parseKinds(tt.list, faultKinds, "fault")
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseKinds(%q) error = %v, want %q", tt.list, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("parseKinds(%q) = %q, %v; want %q", tt.list, got, err, tt.want)
		}
	}
	if _, err := parseKinds("clock", faultKinds, "fault"); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("clock: %v, want ErrNotBuilt", err)
	}
}

// FuzzParseKinds: any list gives built kinds of the registry, each once,
// in registry order, or an error.
func FuzzParseKinds(f *testing.F) {
	for _, s := range []string{"all", "kill,pause", " partition ,,", "clock", "x,y", "\x00,kill"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		got, err := parseKinds(list, faultKinds, "fault")
		if err != nil {
			return
		}
		last := -1
		for _, name := range got {
			i := slices.IndexFunc(faultKinds, func(k kind[Fault]) bool { return k.name == name })
			if i <= last || faultKinds[i].build == nil {
				t.Fatalf("parseKinds(%q) = %q: not built, repeated or out of order", list, got)
			}
			last = i
		}
	})
}

func TestParseRunFlags(t *testing.T) {
	var out bytes.Buffer
	o, err := parseRunFlags([]string{"--nodes", "3", "--faults", "kill", "--workload", "registers,sets", "--seed", "9"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if o.Nodes != 3 || o.Groups != 3 || o.Seed != 9 || !slices.Equal(o.Faults, []string{"kill"}) ||
		!slices.Equal(o.Workloads, []string{"registers", "sets"}) || o.Duration != time.Minute || o.LiveEvery != 5*time.Second {
		t.Errorf("options = %+v", o)
	}
	for _, bad := range [][]string{
		{"--faults", "clock"}, {"--workload", "queue"}, {"--workload", ""}, {"--nodes", "0"},
		{"--nodes", "51"}, {"--duration", "10ms"}, {"--target", "127.0.0.1:6379", "--faults", "kill"}, {"--pids", "1,2"},
		{"--rate", "0"}, {"--base-port", "60000"}, {"extra"}, {"--live-every", "10ms"}, {"--live-every", "-1s"},
	} {
		if _, err := parseRunFlags(bad, &out); err == nil {
			t.Errorf("parseRunFlags(%q) accepted", bad)
		}
	}
	if o, err := parseRunFlags([]string{"--live-every", "0"}, &out); err != nil || o.LiveEvery != 0 {
		t.Errorf("--live-every 0 (off): %+v, %v", o, err)
	}
	if _, err := parseRunFlags([]string{"-h"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
	if !strings.Contains(out.String(), "--faults") && !strings.Contains(out.String(), "-faults") {
		t.Errorf("usage does not list the flags:\n%s", out.String())
	}
}

// TestTargetFlags: --target runs only what a cluster the run did not start
// allows, and says why it refuses the rest.
func TestTargetFlags(t *testing.T) {
	var out bytes.Buffer
	o, err := parseRunFlags([]string{"--target", "127.0.0.1:7001, 127.0.0.1:7002", "--pids", "101,102"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.Target, []string{"127.0.0.1:7001", "127.0.0.1:7002"}) || !slices.Equal(o.Pids, []int{101, 102}) ||
		!slices.Equal(o.Faults, []string{"pause"}) {
		t.Errorf("options = %+v: want both seeds, both pids and pause by default", o)
	}
	if o, err := parseRunFlags([]string{"--target", "127.0.0.1:7001"}, &out); err != nil || len(o.Faults) != 0 {
		t.Errorf("--target without --pids: %+v, %v; want no fault", o, err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--target", "a:1", "--faults", "kill", "--pids", "101"}, "cannot be restarted"},
		{[]string{"--target", "a:1", "--faults", "partition"}, "partitions filter"},
		{[]string{"--target", "a:1", "--faults", "restart-all", "--pids", "101"}, "cannot be restarted"},
		{[]string{"--target", "a:1", "--faults", "pause"}, "needs --pids"},
		{[]string{"--target", "a:1", "--pids", "x"}, "not a process id"},
		{[]string{"--target", ",", "--pids", "101"}, "at least one host:port"},
		{[]string{"--pids", "101"}, "needs --target"},
		{[]string{"--target", "a:1", "--ui", "127.0.0.1:9700"}, "--ui needs the nodes this run starts"},
		{[]string{"--ui", "127.0.0.1:9700", "--ui-linger", "-1s"}, "--ui-linger -1s"},
	} {
		if _, err := parseRunFlags(tt.args, &out); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parseRunFlags(%q) error = %v, want %q", tt.args, err, tt.want)
		}
	}
}

// TestMainRefusesBadInput: bad input fails before anything starts, with
// the exit status for bad input.
func TestMainRefusesBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--faults", "bogus"},
		{"run", "--faults", "clock"},
		{"run", "--workload", "stream"},
		{"run", "--binary", "/nonexistent/slotraft"},
		{"run", "--binary", "/bin/true"},
		{"bogus"},
		{},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(args, &stdout, &stderr); code != ExitUsage {
			t.Errorf("Main(%q) = %d, want %d; stderr:\n%s", args, code, ExitUsage, stderr.String())
		}
		if strings.Contains(stderr.String(), "] seed ") {
			t.Errorf("Main(%q) started something:\n%s", args, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"-h"}, &stdout, &stderr); code != ExitOK || !strings.Contains(stdout.String(), "run") {
		t.Errorf("chaos -h = %d:\n%s", code, stdout.String())
	}
}

func TestMakeSchedule(t *testing.T) {
	kinds := []string{"kill", "pause", "partition", "restart-all"}
	a := makeSchedule(7, kinds, time.Minute)
	b := makeSchedule(7, kinds, time.Minute)
	if !slices.Equal(a, b) {
		t.Fatalf("the same seed gave two schedules:\n%v\n%v", a, b)
	}
	if c := makeSchedule(8, kinds, time.Minute); slices.Equal(a, c) {
		t.Errorf("seeds 7 and 8 gave the same schedule %v", a)
	}
	if len(a) < 4 {
		t.Errorf("%d faults in a minute, want at least 4: %v", len(a), a)
	}
	seen := map[string]bool{}
	for _, s := range a[:len(kinds)] {
		seen[s.Kind] = true
	}
	if len(seen) != len(kinds) {
		t.Errorf("the first %d faults %v are not one of each kind", len(kinds), a[:len(kinds)])
	}
	end := time.Duration(0)
	for _, s := range a {
		if s.At < end+quietLo && end > 0 || s.At+s.Hold > time.Minute || !slices.Contains(kinds, s.Kind) {
			t.Errorf("step %+v after a fault ending at %v: overlaps, overruns or unknown kind", s, end)
		}
		if s.Hold < restartHoldLo || s.Hold >= holdHi {
			t.Errorf("step %+v: hold out of bounds", s)
		}
		end = s.At + s.Hold
	}
	if len(makeSchedule(1, nil, time.Minute)) != 0 || len(makeSchedule(1, kinds, 2*time.Second)) != 0 {
		t.Error("a schedule without kinds or time has faults")
	}
}

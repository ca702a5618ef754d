package main

import (
	"context"
	"errors"
	"flag"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/redcon"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/slots"
)

func span(start, end uint16) slots.Range { return slots.Range{Start: start, End: end} }

func TestMigrateSlotRanges(t *testing.T) {
	tests := []struct {
		args    []string
		want    []slots.Range
		wantErr string
	}{
		{args: []string{"5"}, want: []slots.Range{span(5, 5)}},
		{args: []string{"0-99"}, want: []slots.Range{span(0, 99)}},
		{args: []string{"0", "16383", "7-7", "100-200"}, want: []slots.Range{span(0, 0), span(16383, 16383), span(7, 7), span(100, 200)}},
		{args: []string{"x"}, wantErr: `"x"`},
		{args: []string{""}, wantErr: `""`},
		{args: []string{"16384"}, wantErr: `"16384"`},
		{args: []string{"-1"}, wantErr: `"-1"`},
		{args: []string{"5-3"}, wantErr: `"5-3"`},
		{args: []string{"1-2-3"}, wantErr: `"1-2-3"`},
		{args: []string{"0-16384"}, wantErr: `"0-16384"`},
		{args: []string{"5-"}, wantErr: `"5-"`},
		{args: []string{" 5"}, wantErr: `" 5"`},
		{args: []string{"1", "two"}, wantErr: `"two"`},
	}
	for _, tt := range tests {
		got, err := parseSlotRanges(tt.args)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "0-16383") {
				t.Errorf("parseSlotRanges(%q) = %v, %v; want an error naming %s and the slot range", tt.args, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseSlotRanges(%q) = %v, %v; want %v", tt.args, got, err, tt.want)
		}
	}
}

func TestMigrateUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string // besides the usage
	}{
		{args: []string{"move-slots"}, want: "want a group id"},
		{args: []string{"move-slots", "2"}, want: "want a group id"},
		{args: []string{"move-slots", "two", "5"}, want: `bad group id "two"`},
		{args: []string{"move-slots", "2", "abc"}, want: `bad slot or range "abc"`},
		{args: []string{"move-slots", "2", "9-2"}, want: `bad slot or range "9-2"`},
		{args: []string{"move-slots", "--progress", "fancy", "2", "5"}, want: "--progress"},
		{args: []string{"move-slots", "--nope", "2", "5"}, want: "-nope"},
		{args: []string{"rebalance", "now"}, want: "unexpected arguments"},
	}
	for _, tt := range tests {
		// Nothing listens on port 1: a bad command line must fail before
		// any request.
		args := append([]string{"--addr", "127.0.0.1:1"}, tt.args...)
		out, code := adminRun(t, args...)
		if code != 2 || !strings.Contains(out, "usage: slotraft admin") || !strings.Contains(out, "move-slots [--progress") || !strings.Contains(out, tt.want) {
			t.Errorf("admin %v: exit %d, output %q; want 2, %q and the usage", tt.args, code, out, tt.want)
		}
	}
	if out, code := adminRun(t, "--addr", "127.0.0.1:1", "--timeout", "2s", "move-slots", "2", "5"); code != 1 || !strings.Contains(out, "SLOTRAFT MIGRATIONS from 127.0.0.1:1") {
		t.Errorf("admin move-slots against nothing: exit %d, %q", code, out)
	}
}

func TestMigrateAdminTimeout(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want time.Duration
		set  bool
	}{
		{args: nil, want: 30 * time.Second},
		{args: []string{"--timeout", "5m"}, want: 5 * time.Minute, set: true},
	} {
		fs := flag.NewFlagSet("admin", flag.ContinueOnError)
		fs.Duration("timeout", 30*time.Second, "")
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		if d, set := adminTimeout(fs); d != tt.want || set != tt.set {
			t.Errorf("adminTimeout after %q = %v, %v; want %v, %v", tt.args, d, set, tt.want, tt.set)
		}
	}
}

// pollScript answers polls with its steps in turn (a status or an
// error), then repeats the last.
type pollScript struct {
	steps []any
	polls int
}

func (p *pollScript) poll(context.Context) (cluster.MigrationStatus, error) {
	step := p.steps[min(p.polls, len(p.steps)-1)]
	p.polls++
	if err, ok := step.(error); ok {
		return cluster.MigrationStatus{}, err
	}
	return step.(cluster.MigrationStatus), nil
}

func TestMigrateFollow(t *testing.T) {
	errDown := errors.New("connection refused")
	tests := []struct {
		name      string
		floor     int
		rebalance bool
		steps     []any
		wantPolls int
		wantDone  int
		wantErr   string
	}{
		{
			name: "over when every recorded migration finished", floor: 3,
			steps:     []any{cluster.MigrationStatus{Pending: 3}, cluster.MigrationStatus{Pending: 1, Moved: 2}, cluster.MigrationStatus{Moved: 3}},
			wantPolls: 3, wantDone: 3,
		},
		{
			name: "nothing pending yet fewer finished than recorded: waits to settle", floor: 3,
			steps:     []any{cluster.MigrationStatus{Pending: 2}, cluster.MigrationStatus{Moved: 2}},
			wantPolls: 1 + migrateSettlePolls, wantDone: 2,
		},
		{
			name: "a rebalance waits for the controller", rebalance: true,
			steps: []any{
				cluster.MigrationStatus{Rebalance: true}, cluster.MigrationStatus{Pending: 16, Rebalance: true},
				cluster.MigrationStatus{Pending: 16, Moved: 16, Rebalance: true}, cluster.MigrationStatus{Moved: 32},
			},
			wantPolls: 4, wantDone: 32,
		},
		{
			name: "failed polls within the patience are skipped", floor: 1,
			steps:     []any{errDown, errDown, cluster.MigrationStatus{Moved: 1}},
			wantPolls: 3, wantDone: 1,
		},
		{
			name: "failed polls past the patience end the wait", floor: 1,
			steps:     []any{cluster.MigrationStatus{Pending: 1}, errDown},
			wantPolls: 11, wantErr: "no answer for 1s: connection refused",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := progressT0
			script := &pollScript{steps: tt.steps}
			f := migrationFollow{
				poll: script.poll, interval: time.Millisecond, patience: time.Second, rebalance: tt.rebalance,
				now: func() time.Time { clock = clock.Add(100 * time.Millisecond); return clock },
			}
			prog := newMigrationProgress(progressSample{at: progressT0})
			prog.atLeast(tt.floor)
			_, err := f.run(context.Background(), prog)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("error %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Errorf("error %v", err)
			}
			if script.polls != tt.wantPolls || prog.stats().done != tt.wantDone {
				t.Errorf("%d polls, %d done; want %d, %d", script.polls, prog.stats().done, tt.wantPolls, tt.wantDone)
			}
		})
	}
}

// fakeNode answers SLOTRAFT MOVE-SLOTS (moveReply, or an error if
// negative), REBALANCE and MIGRATIONS (its replies in turn, then the last
// again) on loopback, and keeps the commands it got.
type fakeNode struct {
	moveReply int
	mu        sync.Mutex
	replies   []string
	got       [][]string
}

func startFakeNode(t *testing.T, moveReply int, replies ...string) (string, *fakeNode) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeNode{moveReply: moveReply, replies: replies}
	go func() { _ = redcon.Serve(ln, f.handle, nil, nil) }()
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String(), f
}

func (f *fakeNode) handle(conn redcon.Conn, cmd redcon.Command) {
	args := make([]string, len(cmd.Args))
	for i, a := range cmd.Args {
		args[i] = strings.ToUpper(string(a))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, args)
	switch {
	case len(args) < 2 || args[0] != "SLOTRAFT":
		conn.WriteError("ERR unknown command")
	case args[1] == "MIGRATIONS":
		conn.WriteBulkString(f.replies[0])
		if len(f.replies) > 1 {
			f.replies = f.replies[1:]
		}
	case args[1] == "MOVE-SLOTS" && f.moveReply < 0:
		conn.WriteError("ERR no slot group " + args[2])
	case args[1] == "MOVE-SLOTS":
		conn.WriteInt(f.moveReply)
	case args[1] == "REBALANCE":
		conn.WriteString("OK")
	}
}

func (f *fakeNode) commands(name string) [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out [][]string
	for _, c := range f.got {
		if len(c) > 1 && c[1] == name {
			out = append(out, c)
		}
	}
	return out
}

func TestMigrateCommand(t *testing.T) {
	tests := []struct {
		name      string
		moveReply int
		replies   []string
		args      []string
		wantCode  int
		want      []string // in order
		wantMove  []string // MOVE-SLOTS's arguments after the subcommand
	}{
		{
			name: "move-slots follows until done", moveReply: 10,
			replies: []string{
				`{"pending":0,"moved":5,"keys_moved":100}`,
				`{"pending":10,"moved":5,"keys_moved":100,"slots":[0,1,2,3,4,5,6,7,8,9]}`,
				`{"pending":4,"moved":11,"keys_moved":700,"slots":[6,7,8,9]}`,
				`{"pending":0,"moved":15,"keys_moved":1100,"slots":[]}`,
			},
			args:     []string{"move-slots", "--progress", "plain", "2", "0-4", "5-9"},
			wantMove: []string{"2", "0-4", "5-9"},
			want: []string{"recorded 10 slot migrations to group 2 (0 of the 10 slots asked for were there or on their way)\n",
				"moved 0/10 slots, 0 keys, ", "done: moved 10/10 slots, 1000 keys in "},
		},
		{
			name: "rebalance follows until the controller is done",
			replies: []string{
				`{"pending":0,"moved":0,"keys_moved":0,"rebalance":false}`,
				`{"pending":16,"moved":0,"keys_moved":0,"rebalance":true}`,
				`{"pending":16,"moved":16,"keys_moved":50,"rebalance":true}`,
				`{"pending":0,"moved":32,"keys_moved":90,"rebalance":false}`,
			},
			args: []string{"rebalance", "--progress", "bar"},
			want: []string{"rebalance requested\n", "\r[", "] 32/32 slots  90 keys", "\ndone: moved 32/32 slots, 90 keys in "},
		},
		{
			name: "a refused move", moveReply: -1,
			replies:  []string{`{"pending":0,"moved":0,"keys_moved":0}`},
			args:     []string{"move-slots", "9", "5"},
			wantMove: []string{"9", "5"},
			wantCode: 1,
			want:     []string{"SLOTRAFT MOVE-SLOTS 9: ERR no slot group 9"},
		},
		{
			name: "an explicit --timeout bounds the wait", moveReply: 1,
			replies:  []string{`{"pending":0,"moved":0,"keys_moved":0}`, `{"pending":1,"moved":0,"keys_moved":0,"slots":[5]}`},
			args:     []string{"--timeout", "1s", "move-slots", "2", "5"},
			wantCode: 1,
			want: []string{"stopped following: moved 0/1 slots, 0 keys in ", "; 1 pending at the last poll (slots 5); the migrations go on in the cluster\n",
				"move-slots: migrations not over within --timeout 1s"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, node := startFakeNode(t, tt.moveReply, tt.replies...)
			out, code := adminRun(t, append([]string{"--addr", addr}, tt.args...)...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; output:\n%s", code, tt.wantCode, out)
			}
			rest := out
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("output lacks %q (in order):\n%q", w, out)
				}
				rest = rest[i+len(w):]
			}
			if tt.wantMove != nil {
				moves := node.commands("MOVE-SLOTS")
				if len(moves) != 1 || !reflect.DeepEqual(moves[0][2:], tt.wantMove) {
					t.Errorf("MOVE-SLOTS sent %q; want once with %q", moves, tt.wantMove)
				}
			}
		})
	}
}

func TestMigrateReshardPlan(t *testing.T) {
	groups := []cluster.GroupStatus{
		{ID: 3, Slots: []string{"10923-16383"}},
		{ID: 1, Slots: []string{"0-5460"}},
		{ID: 2, Slots: []string{"5461-9999", "10000-10922"}},
	}
	moves, err := planReshard(groups)
	if err != nil {
		t.Fatal(err)
	}
	// 5461, 5462 and 5461 slots: a third of each, rounded down, from its top.
	want := []slotMove{
		{from: 1, to: 2, ranges: []slots.Range{span(3641, 5460)}, count: 1820},
		{from: 2, to: 3, ranges: []slots.Range{span(9103, 10922)}, count: 1820},
		{from: 3, to: 1, ranges: []slots.Range{span(14564, 16383)}, count: 1820},
	}
	if !reflect.DeepEqual(moves, want) {
		t.Errorf("plan %+v\nwant %+v", moves, want)
	}
	if _, err := planReshard(groups[:1]); err == nil {
		t.Error("a plan for one group, want an error")
	}
	if _, err := planReshard([]cluster.GroupStatus{{ID: 1, Slots: []string{"0-x"}}, {ID: 2}}); err == nil || !strings.Contains(err.Error(), "group 1") {
		t.Errorf("a plan from a bad slot range: %v, want an error naming the group", err)
	}
}

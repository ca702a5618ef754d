package cluster

import (
	"bytes"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/resp"
)

func TestFunctionRPCRoundTrip(t *testing.T) {
	reqs := []functionRequest{
		{groups: []uint32{1, 2, 300000}, op: [][]byte{[]byte("load"), []byte("REPLACE"), []byte("#!lua name=x\n")}},
		{groups: nil, op: [][]byte{[]byte("dump")}},
		{groups: []uint32{1<<32 - 1}, op: [][]byte{[]byte("restore"), {0, 1, 2, 255}, []byte("")}},
	}
	for _, r := range reqs {
		got, err := decodeFunctionRequest(encodeFunctionRequest(r))
		if err != nil || len(got.groups) != len(r.groups) || len(got.op) != len(r.op) {
			t.Fatalf("request %+v: got %+v, %v", r, got, err)
		}
		for i := range r.groups {
			if got.groups[i] != r.groups[i] {
				t.Errorf("group %d: %d, want %d", i, got.groups[i], r.groups[i])
			}
		}
		for i := range r.op {
			if !bytes.Equal(got.op[i], r.op[i]) {
				t.Errorf("arg %d: %q, want %q", i, got.op[i], r.op[i])
			}
		}
	}
	rs := []groupResult{
		{group: 1, reply: resp.Status("OK"), reached: true},
		{group: 2, reply: resp.BulkString("lib"), reached: true},
		{group: 3, reply: resp.Err(resp.NewError("ERR Library 'lib' already exists")), reached: true, applied: true},
		{group: 4, reply: resp.Err(resp.NewError("ERR Function f already exists")), reached: true},
		{group: 5, reply: resp.Err(ErrNotLeader)},
	}
	got, err := decodeFunctionResponse(encodeFunctionResponse(rs))
	if err != nil || len(got) != len(rs) {
		t.Fatalf("response: %+v, %v", got, err)
	}
	for i, r := range rs {
		g := got[i]
		if g.group != r.group || g.reached != r.reached || g.applied != r.applied || g.reply.Kind != r.reply.Kind ||
			string(g.reply.Str) != string(r.reply.Str) {
			t.Errorf("result %d: %+v, want %+v", i, g, r)
		}
	}
}

func TestFunctionRPCDecodeErrors(t *testing.T) {
	good := encodeFunctionRequest(functionRequest{groups: []uint32{1}, op: [][]byte{[]byte("flush")}})
	cases := map[string][]byte{
		"empty":            nil,
		"version":          append([]byte{9}, good[1:]...),
		"truncated":        good[:len(good)-1],
		"trailing":         append(append([]byte{}, good...), 0),
		"no arguments":     {functionRPCVersion, 0, 0},
		"huge count":       {functionRPCVersion, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"group id too big": {functionRPCVersion, 1, 0x80, 0x80, 0x80, 0x80, 0x10, 1, 1, 'x'},
	}
	for name, b := range cases {
		if _, err := decodeFunctionRequest(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	if _, err := decodeFunctionResponse([]byte{functionRPCVersion, 1, 1, 9, 0}); err == nil {
		t.Error("response with an unknown kind decoded")
	}
}

func FuzzFunctionRPC(f *testing.F) {
	f.Add(encodeFunctionRequest(functionRequest{groups: []uint32{1, 2}, op: [][]byte{[]byte("load"), []byte("x")}}))
	f.Add(encodeFunctionResponse([]groupResult{{group: 1, reply: resp.BulkString("x"), reached: true}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := decodeFunctionRequest(b); err == nil {
			if !bytes.Equal(encodeFunctionRequest(r), b) {
				// Non-minimal varints decode too; they must mean the same.
				again, err := decodeFunctionRequest(encodeFunctionRequest(r))
				if err != nil || len(again.op) != len(r.op) || len(again.groups) != len(r.groups) {
					t.Fatalf("request does not survive a round trip: %+v", r)
				}
			}
		}
		if rs, err := decodeFunctionResponse(b); err == nil {
			again, err := decodeFunctionResponse(encodeFunctionResponse(rs))
			if err != nil || len(again) != len(rs) {
				t.Fatalf("response does not survive a round trip: %+v", rs)
			}
		}
	})
}

func TestFunctionReply(t *testing.T) {
	op := [][]byte{[]byte("load"), []byte("code")}
	ok := func(g uint32) groupResult { return groupResult{group: g, reply: resp.BulkString("lib"), reached: true} }
	failed := func(g uint32, text string, applied bool) groupResult {
		return groupResult{group: g, reply: resp.Err(resp.NewError(text)), reached: true, applied: applied}
	}
	unreached := func(g uint32) groupResult {
		return groupResult{group: g, reply: resp.Err(resp.NewError("ERR not reached: no leader known"))}
	}
	exists := "ERR Library 'lib' already exists"
	cases := []struct {
		name string
		rs   []groupResult
		want string // the reply's text; a partial error is matched by its start and the groups it names
	}{
		{"all succeed", []groupResult{ok(1), ok(2), ok(3)}, "lib"},
		{"all fail alike", []groupResult{failed(1, exists, true), failed(2, exists, true)}, exists},
		{"retry converges", []groupResult{failed(1, exists, true), ok(2), failed(3, exists, true)}, "lib"},
		{"conflicting library", []groupResult{ok(1), failed(2, exists, false)}, "partial: group 2"},
		{"unreached", []groupResult{ok(1), ok(2), unreached(3)}, "partial: group 3"},
		{"all unreached", []groupResult{unreached(1), unreached(2)}, "partial: group 1, group 2"},
		{"different errors", []groupResult{failed(1, exists, false), failed(2, "ERR Function f already exists", false)}, "partial: group 1, group 2"},
		{"no groups", nil, "CLUSTERDOWN The cluster is down"},
	}
	for _, c := range cases {
		v := functionReply(op, c.rs)
		got := string(v.Str)
		if groups, ok := strings.CutPrefix(c.want, "partial: "); ok {
			if !v.IsError() || !strings.HasPrefix(got, "ERR FUNCTION LOAD did not succeed in every slot group:") {
				t.Errorf("%s: %q, want a partial error", c.name, got)
			}
			for _, g := range strings.Split(groups, ", ") {
				if !strings.Contains(got, g+":") {
					t.Errorf("%s: %q does not name %s", c.name, got, g)
				}
			}
			continue
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestFunctionCommandTable(t *testing.T) {
	tab := commands()
	for _, name := range []string{"function|load", "function|delete", "function|flush", "function|restore",
		"function|list", "function|dump", "function|stats", "function|kill", "function|help"} {
		container, sub, _ := strings.Cut(name, "|")
		c := tab.lookup([]byte(container))
		if c == nil || c.node == nil {
			t.Fatalf("%s: not a node command", container)
		}
		found := false
		for _, sc := range c.meta.Subcommands {
			found = found || sc.Name == container+"|"+sub
		}
		if !found {
			t.Errorf("%s missing", name)
		}
	}
	for _, name := range []string{"fcall", "fcall_ro"} {
		c := tab.lookup([]byte(name))
		if c == nil || c.data == nil || c.meta.Keys == nil {
			t.Errorf("%s: not a data command with movable keys", name)
		}
	}
}

// TestFanOutUnsure: a group that already has the library after a try whose
// outcome was unknown counts that try as its success.
func TestFanOutUnsure(t *testing.T) {
	op := [][]byte{[]byte("load"), []byte("#!lua name=lib\nredis.register_function('f', function() end)")}
	f := &fanOut{op: op, results: map[uint32]groupResult{}, lastErr: map[uint32]error{}, unsure: map[uint32]bool{}}
	exists := resp.Err(resp.NewError("ERR Library 'lib' already exists"))
	f.fail(1, resp.ErrOutcomeUnknown, true)
	f.fail(2, ErrNotLeader, false)
	f.add(groupResult{group: 1, reply: exists, reached: true, applied: true})
	f.add(groupResult{group: 2, reply: exists, reached: true, applied: true})
	if r := f.results[1]; r.reply.Kind != resp.KindBulk || string(r.reply.Str) != "lib" || r.applied {
		t.Errorf("group 1 (unsure, then applied): %+v, want the LOAD's success", r)
	}
	if r := f.results[2]; !r.reply.IsError() || !r.applied {
		t.Errorf("group 2 (never proposed, then applied): %+v, want the error", r)
	}
}

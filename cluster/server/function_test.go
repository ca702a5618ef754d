package server

import (
	"strings"
	"testing"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/resp"
)

func TestFunctionReply(t *testing.T) {
	op := [][]byte{[]byte("load"), []byte("code")}
	ok := func(g uint32) cluster.GroupAnswer {
		return cluster.GroupAnswer{Group: g, Reply: resp.BulkString("lib"), Reached: true}
	}
	failed := func(g uint32, text string, applied bool) cluster.GroupAnswer {
		return cluster.GroupAnswer{Group: g, Reply: resp.Err(resp.NewError(text)), Reached: true, Applied: applied}
	}
	unreached := func(g uint32) cluster.GroupAnswer {
		return cluster.GroupAnswer{Group: g, Reply: resp.Err(resp.NewError("ERR not reached: no leader known"))}
	}
	exists := "ERR Library 'lib' already exists"
	cases := []struct {
		name string
		rs   []cluster.GroupAnswer
		want string // the reply's text; a partial error is matched by its start and the groups it names
	}{
		{"all succeed", []cluster.GroupAnswer{ok(1), ok(2), ok(3)}, "lib"},
		{"all fail alike", []cluster.GroupAnswer{failed(1, exists, true), failed(2, exists, true)}, exists},
		{"retry converges", []cluster.GroupAnswer{failed(1, exists, true), ok(2), failed(3, exists, true)}, "lib"},
		{"conflicting library", []cluster.GroupAnswer{ok(1), failed(2, exists, false)}, "partial: group 2"},
		{"unreached", []cluster.GroupAnswer{ok(1), ok(2), unreached(3)}, "partial: group 3"},
		{"all unreached", []cluster.GroupAnswer{unreached(1), unreached(2)}, "partial: group 1, group 2"},
		{"different errors", []cluster.GroupAnswer{failed(1, exists, false), failed(2, "ERR Function f already exists", false)}, "partial: group 1, group 2"},
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
		if c == nil || !c.isNode() {
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

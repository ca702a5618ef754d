package difftest

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// diffOps is the number of random commands per protocol pass.
const diffOps = 2500

// TestDifferential sends the same random commands (fixed seed) to
// redis-server and to slotraft and compares the replies, in RESP2 and then
// RESP3.
func TestDifferential(t *testing.T) {
	redisAddr := startRedis(t)
	slotraftAddr := startSlotraft(t)
	for _, proto := range []string{"2", "3"} {
		t.Run("RESP"+proto, func(t *testing.T) {
			rc, sc := connect(t, redisAddr, proto), connect(t, slotraftAddr, proto)
			g := &gen{r: rand.New(rand.NewPCG(5, uint64(len(proto)+int(proto[0])))), tag: "p" + proto}
			runDiff(t, g, rc, sc, diffOps)
		})
	}
}

func connect(t *testing.T, addr, proto string) *client {
	t.Helper()
	c, err := dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	if r, err := c.do("HELLO", proto); err != nil || r.typ == '-' {
		t.Fatalf("HELLO %s on %s: %v %v", proto, addr, r, err)
	}
	return c
}

// batch is how many commands are pipelined at once; an SPOP ends a batch.
const batch = 64

func runDiff(t *testing.T, g *gen, rc, sc *client, n int) {
	mismatches := 0
	for done := 0; done < n && mismatches < 20; {
		var ops []op
		for len(ops) < batch && done < n {
			o := g.next()
			ops = append(ops, o)
			done++
			if o.spop {
				break
			}
		}
		cmds := make([][]string, len(ops))
		for i, o := range ops {
			cmds[i] = o.args
		}
		want, err := rc.pipeline(cmds)
		if err != nil {
			t.Fatalf("redis-server: %v", err)
		}
		got, err := sc.pipeline(cmds)
		if err != nil {
			t.Fatalf("slotraft: %v", err)
		}
		for i, o := range ops {
			if w, g := normalize(want[i], o.mode), normalize(got[i], o.mode); w != g {
				mismatches++
				t.Errorf("op %d %q:\n  redis:    %s\n  slotraft: %s", done-len(ops)+i, o.args, w, g)
			}
		}
		if last := ops[len(ops)-1]; last.spop {
			resync(t, last.args[1], want[len(ops)-1], got[len(ops)-1], rc)
		}
	}
}

// resync makes redis-server's set equal slotraft's after an SPOP that
// popped other members: put back what redis popped, remove what slotraft
// popped.
func resync(t *testing.T, key string, redisPopped, slotraftPopped reply, rc *client) {
	t.Helper()
	members := func(r reply) []string {
		if r.typ == '$' {
			return []string{r.str}
		}
		var out []string
		for _, e := range r.elems {
			out = append(out, e.str)
		}
		return out
	}
	var cmds [][]string
	if m := members(redisPopped); len(m) > 0 {
		cmds = append(cmds, append([]string{"SADD", key}, m...))
	}
	if m := members(slotraftPopped); len(m) > 0 {
		cmds = append(cmds, append([]string{"SREM", key}, m...))
	}
	if len(cmds) == 0 {
		return
	}
	if _, err := rc.pipeline(cmds); err != nil {
		t.Fatalf("resync: %v", err)
	}
}

// normalize renders a reply for comparison under mode.
func normalize(r reply, m mode) string {
	switch m {
	case unordered, pairs:
		if r.typ != '*' && r.typ != '~' && r.typ != '%' {
			return r.String()
		}
		var items []string
		step := 1
		if m == pairs || r.typ == '%' {
			step = 2
		}
		for i := 0; i+step <= len(r.elems); i += step {
			var parts []string
			for _, e := range r.elems[i : i+step] {
				parts = append(parts, e.String())
			}
			items = append(items, strings.Join(parts, "="))
		}
		slices.Sort(items)
		return string(r.typ) + "{" + strings.Join(items, " ") + "}"
	case shape:
		return shapeOf(r)
	}
	return r.String()
}

func shapeOf(r reply) string {
	switch r.typ {
	case '*', '%', '~', '>':
		parts := make([]string, len(r.elems))
		for i, e := range r.elems {
			parts[i] = shapeOf(e)
		}
		return string(r.typ) + "[" + strings.Join(parts, " ") + "]"
	case '$', ',':
		return string(r.typ) + "?"
	}
	return r.String()
}

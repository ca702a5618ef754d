package difftest

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
)

// streamOps is the number of random stream commands per protocol pass.
const streamOps = 3000

// TestStreamsDifferential sends the same random stream commands (explicit
// IDs, so both servers generate the same entries) to redis-server and to
// slotraft and compares the replies, in RESP2 and RESP3. Replies that hold
// times (idle, seen) are compared by shape.
func TestStreamsDifferential(t *testing.T) {
	redisAddr := startRedis(t)
	slotraftAddr := startSlotraft(t)
	for _, proto := range []string{"2", "3"} {
		t.Run("RESP"+proto, func(t *testing.T) {
			rc, sc := connect(t, redisAddr, proto), connect(t, slotraftAddr, proto)
			g := &streamGen{r: rand.New(rand.NewPCG(11, uint64(proto[0]))), tag: "{x" + proto + "}"}
			mismatches := 0
			for done := 0; done < streamOps && mismatches < 20; {
				var ops []op
				for len(ops) < batch && done < streamOps {
					ops = append(ops, g.next())
					done++
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
					w, gv := normalize(want[i], o.mode), normalize(got[i], o.mode)
					if o.mode == shape {
						// Times differ (and 7.0 lacks 7.2's fields or creates
						// fewer consumers): compare what is kept.
						w, gv = streamTimeless(o.args, want[i]), streamTimeless(o.args, got[i])
					}
					if proto == "3" && isXRead(o.args) {
						// slotraft answers XREAD/XREADGROUP with RESP2's
						// nested pairs in RESP3 too (see keyedReply).
						w, gv = xreadShape(want[i]), xreadShape(got[i])
					}
					if w != gv {
						mismatches++
						t.Errorf("op %d %q:\n  redis:    %s\n  slotraft: %s", done-len(ops)+i, o.args, w, gv)
					}
				}
			}
		})
	}
}

// streamTimeless renders XPENDING's extended form without idle times,
// XINFO CONSUMERS as the names and counts of consumers with pending
// entries, and XINFO GROUPS without the consumer counts (redis-server 7.0
// does not create the consumer of an XCLAIM or XAUTOCLAIM that claims
// nothing; 7.2 does).
func streamTimeless(args []string, r reply) string {
	if args[0] == "XGROUP" {
		// CREATECONSUMER: 7.0's XREADGROUP creates its consumer only when it
		// serves something, 7.2's always.
		return string(r.typ)
	}
	if r.typ != '*' {
		return r.String()
	}
	out := ""
	for _, e := range r.elems {
		switch {
		case args[0] == "XPENDING" && len(e.elems) == 4:
			out += e.elems[0].String() + " " + e.elems[1].String() + " " + e.elems[3].String() + ";"
		case args[0] == "XINFO" && args[1] == "CONSUMERS" && len(e.elems) >= 4:
			if e.elems[3].String() != ":0" {
				out += e.elems[1].String() + " " + e.elems[3].String() + ";"
			}
		case args[0] == "XINFO" && len(e.elems) >= 4:
			for j := 0; j+1 < len(e.elems); j += 2 {
				if e.elems[j].str != "consumers" {
					out += e.elems[j].String() + "=" + e.elems[j+1].String() + " "
				}
			}
			out += ";"
		default:
			out += e.String() + ";"
		}
	}
	return out
}

func isXRead(args []string) bool { return args[0] == "XREAD" || args[0] == "XREADGROUP" }

// xreadShape renders an XREAD reply in a form common to RESP3's map and
// the nested pairs.
func xreadShape(r reply) string {
	if r.typ == '%' {
		var s string
		for i := 0; i+1 < len(r.elems); i += 2 {
			s += r.elems[i].String() + "=" + r.elems[i+1].String() + ";"
		}
		return s
	}
	if r.typ == '*' {
		var s string
		for _, e := range r.elems {
			if len(e.elems) == 2 {
				s += e.elems[0].String() + "=" + e.elems[1].String() + ";"
			}
		}
		return s
	}
	return r.String()
}

type streamGen struct {
	r   *rand.Rand
	tag string
	ms  int
}

func (g *streamGen) key() string { return g.tag + "s" + strconv.Itoa(g.r.IntN(3)) }

func (g *streamGen) group() string    { return []string{"g1", "g2", "nope"}[g.r.IntN(3)] }
func (g *streamGen) consumer() string { return []string{"alice", "bob", "carol"}[g.r.IntN(3)] }

// claimer names the consumers of XCLAIM and XAUTOCLAIM, which redis-server
// 7.0 creates only when they claim something (7.2 always): no other
// command names them.
func (g *streamGen) claimer() string { return []string{"dave", "erin"}[g.r.IntN(2)] }

// id is an ID near the current time: mostly new ones, sometimes old.
func (g *streamGen) id() string {
	switch g.r.IntN(10) {
	case 0:
		return strconv.Itoa(g.r.IntN(g.ms+1)) + "-" + strconv.Itoa(g.r.IntN(3))
	case 1:
		return strconv.Itoa(g.ms) + "-*"
	case 2:
		return "0-0"
	}
	g.ms += g.r.IntN(3)
	return strconv.Itoa(g.ms) + "-" + strconv.Itoa(g.r.IntN(4))
}

// bound is a range bound or an ID argument.
func (g *streamGen) bound() string {
	switch g.r.IntN(8) {
	case 0:
		return "-"
	case 1:
		return "+"
	case 2:
		return "(" + strconv.Itoa(g.r.IntN(g.ms+2)) + "-" + strconv.Itoa(g.r.IntN(3))
	case 3:
		return strconv.Itoa(g.r.IntN(g.ms + 2))
	case 4:
		return "bad"
	}
	return strconv.Itoa(g.r.IntN(g.ms+2)) + "-" + strconv.Itoa(g.r.IntN(4))
}

func (g *streamGen) fields() []string {
	n := 1 + g.r.IntN(3)
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, []string{"f", "g", "name", "1"}[g.r.IntN(4)], fmt.Sprint(g.r.IntN(1000)))
	}
	if g.r.IntN(30) == 0 {
		out = out[:len(out)-1] // odd: arity error
	}
	return out
}

func (g *streamGen) trim() []string {
	var out []string
	if g.r.IntN(2) == 0 {
		out = []string{"MAXLEN"}
	} else {
		out = []string{"MINID"}
	}
	switch g.r.IntN(3) {
	case 0:
		out = append(out, "~")
	case 1:
		out = append(out, "=")
	}
	if out[0] == "MAXLEN" {
		out = append(out, strconv.Itoa(g.r.IntN(12)-1))
	} else {
		out = append(out, g.bound())
	}
	if g.r.IntN(5) == 0 {
		out = append(out, "LIMIT", strconv.Itoa(g.r.IntN(5)))
	}
	return out
}

func (g *streamGen) next() op {
	k := g.key()
	switch n := g.r.IntN(100); {
	case n < 30:
		args := []string{"XADD", k}
		if g.r.IntN(10) == 0 {
			args = append(args, "NOMKSTREAM")
		}
		if g.r.IntN(6) == 0 {
			args = append(args, g.trim()...)
		}
		return op{args: append(append(args, g.id()), g.fields()...)}
	case n < 33:
		return op{args: []string{"XLEN", k}}
	case n < 40:
		cmd := "XRANGE"
		if g.r.IntN(2) == 0 {
			cmd = "XREVRANGE"
		}
		args := []string{cmd, k, g.bound(), g.bound()}
		if g.r.IntN(2) == 0 {
			args = append(args, "COUNT", strconv.Itoa(g.r.IntN(5)-1))
		}
		return op{args: args}
	case n < 43:
		return op{args: []string{"XDEL", k, g.bound(), g.bound()}}
	case n < 46:
		return op{args: append([]string{"XTRIM", k}, g.trim()...)}
	case n < 52:
		args := []string{"XREAD"}
		if g.r.IntN(2) == 0 {
			args = append(args, "COUNT", strconv.Itoa(g.r.IntN(4)))
		}
		ids := []string{"0", "$", g.bound()}
		return op{args: append(args, "STREAMS", k, g.tag+"s1", ids[g.r.IntN(3)], ids[g.r.IntN(3)])}
	case n < 60:
		args := []string{"XGROUP"}
		switch g.r.IntN(6) {
		case 0, 1:
			args = append(args, "CREATE", k, g.group(), []string{"$", "0", g.bound()}[g.r.IntN(3)])
			if g.r.IntN(2) == 0 {
				args = append(args, "MKSTREAM")
			}
			if g.r.IntN(4) == 0 {
				args = append(args, "ENTRIESREAD", strconv.Itoa(g.r.IntN(5)-1))
			}
		case 2:
			args = append(args, "SETID", k, g.group(), []string{"$", "0", g.bound()}[g.r.IntN(3)])
		case 3:
			args = append(args, "DESTROY", k, g.group())
		case 4:
			return op{args: append(args, "CREATECONSUMER", k, g.group(), g.consumer()), mode: shape}
		case 5:
			args = append(args, "DELCONSUMER", k, g.group(), g.consumer())
		}
		return op{args: args}
	case n < 72:
		args := []string{"XREADGROUP", "GROUP", g.group(), g.consumer()}
		if g.r.IntN(2) == 0 {
			args = append(args, "COUNT", strconv.Itoa(g.r.IntN(4)))
		}
		if g.r.IntN(6) == 0 {
			args = append(args, "NOACK")
		}
		id := ">"
		if g.r.IntN(4) == 0 {
			id = []string{"0", g.bound()}[g.r.IntN(2)]
		}
		return op{args: append(args, "STREAMS", k, id)}
	case n < 78:
		return op{args: []string{"XACK", k, g.group(), g.bound(), g.bound()}}
	case n < 82:
		if g.r.IntN(2) == 0 {
			return op{args: []string{"XPENDING", k, g.group()}}
		}
		args := []string{"XPENDING", k, g.group(), g.bound(), g.bound(), strconv.Itoa(g.r.IntN(5))}
		if g.r.IntN(2) == 0 {
			args = append(args, g.consumer())
		}
		return op{args: args, mode: shape}
	case n < 86:
		args := []string{"XCLAIM", k, g.group(), g.claimer(), "0", g.bound(), g.bound()}
		switch g.r.IntN(3) {
		case 0:
			args = append(args, "JUSTID")
		case 1:
			args = append(args, "FORCE", "RETRYCOUNT", "3")
		}
		return op{args: args}
	case n < 89:
		args := []string{"XAUTOCLAIM", k, g.group(), g.claimer(), "0", g.bound()}
		if g.r.IntN(2) == 0 {
			args = append(args, "COUNT", strconv.Itoa(g.r.IntN(4)))
		}
		if g.r.IntN(2) == 0 {
			args = append(args, "JUSTID")
		}
		return op{args: args}
	case n < 92:
		return op{args: []string{"XINFO", "GROUPS", k}, mode: shape}
	case n < 94:
		return op{args: []string{"XINFO", "STREAM", k}}
	case n < 95:
		return op{args: []string{"XINFO", "CONSUMERS", k, g.group()}, mode: shape}
	case n < 97:
		args := []string{"XSETID", k, g.bound()}
		if g.r.IntN(3) == 0 {
			args = append(args, "ENTRIESADDED", strconv.Itoa(g.r.IntN(30)))
		}
		return op{args: args}
	case n < 98:
		return op{args: []string{"SET", k, "v"}}
	case n < 99:
		return op{args: []string{"DEL", k}}
	}
	return op{args: []string{"TYPE", k}}
}

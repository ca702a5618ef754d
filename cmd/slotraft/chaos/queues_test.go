package chaos

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// qop is an operation of queue {q}: kind on list ("in" or "proc").
func qop(kind, list, elem string, out Outcome, call, ret int64) Op {
	op := Op{Workload: "queues", Kind: kind, Key: "{q}:" + list, Outcome: out, Call: call, Return: ret}
	switch {
	case kind == "LPUSH":
		op.Value, op.Result = elem, "1"
	case elem == "" && out == OK:
		op.Nil = true
	case out == OK:
		op.Result = elem
	}
	if kind == "LMOVE" || kind == "BLMOVE" {
		op.To = "{q}:proc"
	}
	return op
}

func qfinal(list string, elems ...string) Op {
	return Op{Workload: "queues", Kind: "LRANGE", Key: "{q}:" + list, Members: elems, Outcome: OK, Final: true}
}

func TestQueueChecker(t *testing.T) {
	push := func(e string) Op { return qop("LPUSH", "in", e, OK, 0, 10) }
	tests := []struct {
		name string
		ops  []Op
		want []string
	}{
		{"popped, moved and left", []Op{push("a"), push("b"), push("c"), push("d"),
			qop("RPOP", "in", "a", OK, 20, 30), qop("BLMOVE", "in", "b", OK, 20, 30), qop("BRPOP", "proc", "b", OK, 40, 50),
			qop("LMOVE", "in", "c", OK, 40, 50), qop("BRPOP", "in", "", OK, 60, 70), qfinal("in", "d"), qfinal("proc", "c")}, nil},
		{"lost", []Op{push("a"), push("b"), qfinal("in", "a"), qfinal("proc")}, []string{"lost element"}},
		{"lost after a move", []Op{push("a"), qop("LMOVE", "in", "a", OK, 20, 30), qfinal("in"), qfinal("proc")}, []string{"lost element"}},
		{"unknown pop explains one", []Op{push("a"), push("b"), qop("BRPOP", "in", "", Unknown, 20, 30), qfinal("in"), qfinal("proc")}, []string{"lost element"}},
		{"unknown pops explain two", []Op{push("a"), push("b"), qop("BRPOP", "in", "", Unknown, 20, 30), qop("RPOP", "in", "", Unknown, 20, 30), qfinal("in"), qfinal("proc")}, nil},
		{"unknown pop before the push", []Op{qop("RPOP", "in", "", Unknown, 0, 5), qop("LPUSH", "in", "a", OK, 10, 20), qfinal("in"), qfinal("proc")}, []string{"lost element"}},
		{"unknown pop of proc needs a move", []Op{push("a"), qop("RPOP", "proc", "", Unknown, 20, 30), qfinal("in"), qfinal("proc")}, []string{"lost element"}},
		{"unknown move then unknown pop of proc", []Op{push("a"), qop("LMOVE", "in", "", Unknown, 20, 30), qop("RPOP", "proc", "", Unknown, 20, 30), qfinal("in"), qfinal("proc")}, nil},
		{"unknown push may vanish", []Op{qop("LPUSH", "in", "a", Unknown, 0, 10), qfinal("in"), qfinal("proc")}, nil},
		{"popped twice", []Op{push("a"), qop("RPOP", "in", "a", OK, 20, 30), qop("BRPOP", "in", "a", OK, 40, 50), qfinal("in"), qfinal("proc")}, []string{"duplicate delivery"}},
		{"popped and still there", []Op{push("a"), qop("BRPOP", "in", "a", OK, 20, 30), qfinal("in", "a"), qfinal("proc")}, []string{"duplicate delivery"}},
		{"moved and still in in", []Op{push("a"), qop("BLMOVE", "in", "a", OK, 20, 30), qfinal("in", "a"), qfinal("proc")}, []string{"duplicate delivery"}},
		{"in both lists", []Op{push("a"), qop("LMOVE", "in", "a", OK, 20, 30), qfinal("in", "a"), qfinal("proc", "a")}, []string{"duplicate delivery"}},
		{"phantom", []Op{push("a"), qfinal("in", "a", "z"), qfinal("proc")}, []string{"phantom element"}},
		{"in proc without a move", []Op{push("a"), qfinal("in"), qfinal("proc", "a")}, []string{"phantom element"}},
		{"popped before pushed", []Op{qop("RPOP", "in", "a", OK, 0, 5), qop("LPUSH", "in", "a", OK, 10, 20), qfinal("in"), qfinal("proc")}, []string{"phantom element"}},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.name, " ", "_"), func(t *testing.T) {
			var kinds []string
			for _, a := range checkQueue("{q}", queueOps("{q}", tt.ops), false) {
				kinds = append(kinds, a.Kind)
			}
			if strings.Join(kinds, ",") != strings.Join(tt.want, ",") {
				t.Errorf("anomalies %q, want %q", kinds, tt.want)
			}
		})
	}
	w := &queues{queues: []string{"{q}", "{r}"}}
	v := w.Check(context.Background(), []Op{qop("LPUSH", "in", "a", OK, 0, 10), qop("LPUSH", "in", "b", Fail, 0, 10), qfinal("in", "a"), qfinal("proc")}, nil)
	if v.Result == "ok" || len(v.Notes) != 1 || len(v.Anomalies) != 0 {
		t.Errorf("a queue without final reads: %+v", v)
	}
}

func TestQueueCommands(t *testing.T) {
	op := Op{Kind: "BLMOVE", Key: "{q}:in", To: "{q}:proc", Block: 500}
	args, pos := kindOf(&op).args(&op)
	if got := strings.Trim(fmt.Sprint(args), "[]"); got != "blmove {q}:in {q}:proc right left 0.5" || pos != 1 {
		t.Errorf("BLMOVE renders %q key at %d", got, pos)
	}
	if !kindOf(&Op{Kind: "BRPOP"}).write || kindOf(&Op{Kind: "LRANGE"}).write {
		t.Error("a pop is a write, LRANGE is not")
	}
}

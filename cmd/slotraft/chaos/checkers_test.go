package chaos

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
)

// Hand-written histories: each checker must pass the good ones and name
// the anomaly of the bad ones.

func set(p int, v string, call, ret int64) Op {
	return Op{Workload: "registers", Client: p, Process: p, Kind: "SET", Key: "k", Value: v, Call: call, Return: ret, Outcome: OK, Result: "OK"}
}

func get(p int, v string, call, ret int64) Op {
	return Op{Workload: "registers", Client: p, Process: p, Kind: "GET", Key: "k", Result: v, Nil: v == "", Call: call, Return: ret, Outcome: OK}
}

func cas(p int, old, v, result string, call, ret int64) Op {
	return Op{Workload: "registers", Client: p, Process: p, Kind: "CAS", Key: "k", Old: old, Value: v, Result: result, Call: call, Return: ret, Outcome: OK}
}

func unknown(op Op) Op {
	op.Outcome, op.Result, op.ErrKind = Unknown, "", "timeout"
	return op
}

func TestRegisterChecker(t *testing.T) {
	tests := []struct {
		name      string
		ops       []Op
		want      porcupine.CheckResult
		anomalies []string // kinds staleReads names
	}{
		{"set then get", []Op{set(0, "a", 0, 10), get(1, "a", 20, 30)}, porcupine.Ok, nil},
		{"concurrent get sees either", []Op{set(0, "a", 0, 10), set(0, "b", 20, 40), get(1, "a", 25, 30)}, porcupine.Ok, nil},
		{"stale read", []Op{set(0, "a", 0, 10), set(0, "b", 20, 30), get(1, "a", 40, 50)}, porcupine.Illegal, []string{"stale read"}},
		{"nil after an acknowledged set", []Op{set(0, "a", 0, 10), get(1, "", 20, 30)}, porcupine.Illegal, []string{"stale read"}},
		{"phantom value", []Op{get(1, "zz", 20, 30)}, porcupine.Illegal, []string{"phantom read"}},
		{"read of the future", []Op{get(1, "a", 0, 5), set(0, "a", 10, 20)}, porcupine.Illegal, []string{"read of the future"}},
		{"unknown set may land late", []Op{unknown(set(0, "a", 0, 10)), set(1, "b", 20, 30), get(2, "a", 40, 50)}, porcupine.Ok, nil},
		{"unknown set may never land", []Op{unknown(set(0, "a", 0, 10)), get(2, "", 40, 50)}, porcupine.Ok, nil},
		{"cas succeeds", []Op{set(0, "a", 0, 10), cas(1, "a", "b", "1", 20, 30), get(2, "b", 40, 50)}, porcupine.Ok, nil},
		{"cas fails on a match", []Op{set(0, "a", 0, 10), cas(1, "a", "b", "0", 20, 30)}, porcupine.Illegal, nil},
		{"cas succeeds on a mismatch", []Op{set(0, "a", 0, 10), cas(1, "x", "b", "1", 20, 30)}, porcupine.Illegal, nil},
		{"unknown cas", []Op{set(0, "a", 0, 10), unknown(cas(1, "a", "b", "", 20, 30)), get(2, "b", 40, 50), get(2, "b", 60, 70)}, porcupine.Ok, nil},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.name, " ", "_"), func(t *testing.T) {
			kc := checkKey(context.Background(), "k", tt.ops, nil, true)
			if kc.result != tt.want {
				t.Errorf("porcupine: %s, want %s", kc.result, tt.want)
			}
			var kinds []string
			for _, a := range kc.anomalies {
				kinds = append(kinds, a.Kind)
			}
			if strings.Join(kinds, ",") != strings.Join(tt.anomalies, ",") {
				t.Errorf("staleReads: %q, want %q", kinds, tt.anomalies)
			}
			if kc.result == porcupine.Illegal && len(kc.viz) == 0 {
				t.Error("no visualisation of an illegal history")
			}
		})
	}
}

// TestRegistersCheckVerdict: the workload's verdict carries the anomaly
// (explained, or porcupine's bare one) and the visualisation.
func TestRegistersCheckVerdict(t *testing.T) {
	w := &registers{keys: []string{"k"}}
	bad := []Op{set(0, "a", 0, 10), set(0, "b", 20, 30), get(1, "a", 40, 50)}
	v := w.Check(context.Background(), bad, []Event{{Kind: "partition", Desc: "halves", Start: 15, End: 35}})
	if v.Result != "anomalies" || len(v.Anomalies) != 1 || v.Anomalies[0].Kind != "stale read" || len(v.viz["k"]) == 0 {
		t.Errorf("verdict = %+v", v)
	}
	odd := []Op{set(0, "a", 0, 10), cas(1, "a", "b", "0", 20, 30)}
	v = w.Check(context.Background(), odd, nil)
	if v.Result != "anomalies" || len(v.Anomalies) != 1 || v.Anomalies[0].Kind != "not linearizable" {
		t.Errorf("verdict = %+v", v)
	}
	fine := []Op{set(0, "a", 0, 10), get(1, "a", 20, 30), {Workload: "registers", Kind: "GET", Key: "k", Outcome: Fail}}
	if v = w.Check(context.Background(), fine, nil); v.Result != "ok" {
		t.Errorf("verdict = %+v", v)
	}
}

func incr(n int64, out Outcome, result string, call, ret int64) Op {
	return Op{Workload: "counters", Kind: "INCRBY", Key: "c", N: n, Outcome: out, Result: result, Call: call, Return: ret}
}

func finalGet(key, v string) Op {
	return Op{Workload: "counters", Kind: "GET", Key: key, Result: v, Nil: v == "", Outcome: OK, Final: true}
}

func TestCounterChecker(t *testing.T) {
	tests := []struct {
		name  string
		incs  []Op
		final string
		want  []string
	}{
		{"exact", []Op{incr(2, OK, "2", 0, 10), incr(3, OK, "5", 20, 30)}, "5", nil},
		{"unknown applied", []Op{incr(2, OK, "2", 0, 10), incr(3, Unknown, "", 20, 30)}, "5", nil},
		{"unknown not applied", []Op{incr(2, OK, "2", 0, 10), incr(3, Unknown, "", 20, 30)}, "2", nil},
		{"never written", nil, "", nil},
		{"lost", []Op{incr(2, OK, "2", 0, 10), incr(3, OK, "5", 20, 30)}, "2", []string{"lost increment", "increment reply out of bounds"}},
		{"applied twice", []Op{incr(2, OK, "2", 0, 10)}, "4", []string{"phantom increment"}},
		{"reply misses an earlier increment", []Op{incr(2, OK, "2", 0, 10), incr(3, OK, "3", 20, 30)}, "5", []string{"increment reply out of bounds"}},
		{"replies in the wrong order", []Op{incr(2, OK, "5", 0, 10), incr(3, OK, "3", 20, 30)}, "5", []string{"increment reply out of bounds", "increment reply out of bounds"}},
		{"concurrent replies", []Op{incr(2, OK, "5", 0, 30), incr(3, OK, "3", 10, 20)}, "5", nil},
		{"went backwards", []Op{incr(5, Unknown, "", 0, 100), incr(1, OK, "6", 10, 20), incr(1, OK, "2", 30, 40)}, "7", []string{"counter went backwards"}},
		{"unknown seen, then kept", []Op{incr(5, Unknown, "", 0, 100), incr(1, OK, "6", 10, 20), incr(1, OK, "7", 30, 40)}, "7", nil},
		{"not a number", []Op{incr(2, OK, "2", 0, 10)}, "x", []string{"bad value"}},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.name, " ", "_"), func(t *testing.T) {
			var kinds []string
			for _, a := range checkCounter("c", tt.incs, finalGet("c", tt.final)) {
				kinds = append(kinds, a.Kind)
			}
			if strings.Join(kinds, ",") != strings.Join(tt.want, ",") {
				t.Errorf("anomalies %q, want %q", kinds, tt.want)
			}
		})
	}
	w := &counters{keys: []string{"c", "d"}}
	v := w.Check(context.Background(), []Op{incr(1, OK, "1", 0, 1), finalGet("c", "1")}, nil)
	if v.Result == "ok" || len(v.Notes) != 1 {
		t.Errorf("a counter without a final read: %+v", v)
	}
	// Without a final read, the rules that need none still apply, as live.
	bad := incr(2, OK, "9", 0, 1)
	bad.Key = "d"
	v = w.Check(context.Background(), []Op{incr(1, OK, "1", 0, 1), finalGet("c", "1"), bad}, nil)
	if v.Result != "anomalies" || len(v.Notes) != 1 || len(v.Anomalies) != 1 || v.Anomalies[0].Kind != "increment reply out of bounds" {
		t.Errorf("a counter without a final read, with a reply out of bounds: %+v", v)
	}
}

func sadd(v string, out Outcome, result string) Op {
	return Op{Workload: "sets", Kind: "SADD", Key: "s", Value: v, Outcome: out, Result: result}
}

func TestSetChecker(t *testing.T) {
	members := func(m ...string) Op { return Op{Kind: "SMEMBERS", Key: "s", Members: m, Outcome: OK, Final: true} }
	tests := []struct {
		name  string
		adds  []Op
		final Op
		want  []string
	}{
		{"all there", []Op{sadd("a", OK, "1"), sadd("b", OK, "1")}, members("b", "a"), nil},
		{"unknown there or not", []Op{sadd("a", OK, "1"), sadd("b", Unknown, ""), sadd("c", Unknown, "")}, members("a", "c"), nil},
		{"lost", []Op{sadd("a", OK, "1"), sadd("b", OK, "1")}, members("a"), []string{"lost element"}},
		{"phantom", []Op{sadd("a", OK, "1")}, members("a", "z"), []string{"phantom element"}},
		{"added twice", []Op{sadd("a", OK, "0")}, members("a"), []string{"add applied twice"}},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.name, " ", "_"), func(t *testing.T) {
			var kinds []string
			for _, a := range checkSet("s", tt.adds, tt.final) {
				kinds = append(kinds, a.Kind)
			}
			if strings.Join(kinds, ",") != strings.Join(tt.want, ",") {
				t.Errorf("anomalies %q, want %q", kinds, tt.want)
			}
		})
	}
}

func TestPorcupineOps(t *testing.T) {
	ops := []Op{set(7, "a", 0, 10), unknown(set(9, "b", 5, 6)), get(7, "a", 20, 30)}
	p := porcupineOps(ops)
	if p[0].ClientId != 0 || p[1].ClientId != 1 || p[2].ClientId != 0 {
		t.Errorf("client ids not renumbered from 0: %d %d %d", p[0].ClientId, p[1].ClientId, p[2].ClientId)
	}
	if p[1].Return != math.MaxInt64 || p[0].Return != 10 {
		t.Errorf("return times %d %d: an unknown write must never return", p[0].Return, p[1].Return)
	}
}

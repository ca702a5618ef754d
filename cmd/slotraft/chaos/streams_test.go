package chaos

import (
	"strings"
	"testing"
)

func xadd(v, id string, out Outcome, call, ret int64) Op {
	return Op{Workload: "streams", Kind: "XADD", Key: "x", Value: v, Result: id, Outcome: out, Call: call, Return: ret}
}

func xread(consumer string, out Outcome, es ...Entry) Op {
	return Op{Workload: "streams", Kind: "XREADGROUP", Key: "x", Consumer: consumer, Entries: es, Outcome: out, Call: 100, Return: 110}
}

func xack(result string, out Outcome, ids ...string) Op {
	return Op{Workload: "streams", Kind: "XACK", Key: "x", IDs: ids, Result: result, Outcome: out, Call: 200, Return: 210}
}

// xfinals are the final reads: the stream, the PEL, and the group.
func xfinals(es []Entry, pel []Entry, g *Group) []Op {
	return []Op{
		{Workload: "streams", Kind: "XRANGE", Key: "x", Entries: es, Outcome: OK, Final: true},
		{Workload: "streams", Kind: "XPENDING", Key: "x", Entries: pel, Outcome: OK, Final: true},
		{Workload: "streams", Kind: "XINFO GROUPS", Key: "x", Group: g, Nil: g == nil, Outcome: OK, Final: true},
	}
}

func TestStreamChecker(t *testing.T) {
	a, b, c := Entry{ID: "1-0", Value: "a"}, Entry{ID: "2-0", Value: "b"}, Entry{ID: "3-0", Value: "c"}
	created := Op{Workload: "streams", Kind: "XGROUP CREATE", Key: "x", Outcome: OK, Result: "OK", Call: 0, Return: 1}
	adds := []Op{created, xadd("a", "1-0", OK, 0, 10), xadd("b", "2-0", OK, 20, 30), xadd("c", "3-0", OK, 40, 50)}
	all := []Entry{a, b, c}
	grp := func(last string, pending, read, lag int64) *Group {
		return &Group{Name: "g", LastDeliveredID: last, Pending: pending, EntriesRead: read, Lag: lag}
	}
	pend := func(cons string, ids ...string) []Entry {
		var out []Entry
		for _, id := range ids {
			out = append(out, Entry{ID: id, Consumer: cons})
		}
		return out
	}
	tests := []struct {
		name string
		ops  []Op
		want []string
	}{
		{"read, acked, pending", append(adds, append([]Op{xread("c1", OK, a, b), xack("1", OK, "1-0")}, xfinals(all, pend("c1", "2-0"), grp("2-0", 1, 2, 1))...)...), nil},
		{"nothing read", append(adds, xfinals(all, nil, grp("0-0", 0, 0, 3))...), nil},
		{"lag unknown", append(adds, xfinals(all, nil, grp("0-0", 0, 0, -1))...), nil},
		{"unknown read explains pending", append(adds, append([]Op{xread("c1", Unknown)}, xfinals(all, pend("c1", "1-0"), grp("1-0", 1, 1, 2))...)...), nil},
		{"unknown xack", append(adds, append([]Op{xread("c1", OK, a), xack("", Unknown, "1-0")}, xfinals(all, nil, grp("1-0", 0, 1, 2))...)...), nil},
		{"lost entry", append(adds, xfinals([]Entry{a, c}, nil, grp("0-0", 0, 0, 2))...), []string{"lost entry"}},
		{"wrong id", append(adds, xfinals([]Entry{a, {ID: "2-1", Value: "b"}, c}, nil, grp("0-0", 0, 0, 3))...), []string{"wrong id"}},
		{"phantom entry", append(adds, xfinals(append(all, Entry{ID: "4-0", Value: "z"}), nil, grp("0-0", 0, 0, 4))...), []string{"phantom entry"}},
		{"id out of order", []Op{created, xadd("a", "5-0", OK, 0, 10), xadd("b", "2-0", OK, 20, 30), xfinals([]Entry{{ID: "2-0", Value: "b"}, {ID: "5-0", Value: "a"}}, nil, grp("0-0", 0, 0, 2))[0],
			xfinals(nil, nil, nil)[1], xfinals(nil, nil, grp("0-0", 0, 0, 2))[2]}, []string{"id out of order"}},
		{"delivered twice", append(adds, append([]Op{xread("c1", OK, a), xread("c2", OK, a)}, xfinals(all, pend("c1", "1-0"), grp("1-0", 1, 1, 2))...)...), []string{"delivered twice", "pending owner"}},
		{"pending after ack", append(adds, append([]Op{xread("c1", OK, a), xack("1", OK, "1-0")}, xfinals(all, pend("c1", "1-0"), grp("1-0", 1, 1, 2))...)...), []string{"pending after ack"}},
		{"ack count", append(adds, append([]Op{xread("c1", OK, a), xack("0", OK, "1-0")}, xfinals(all, nil, grp("1-0", 0, 1, 2))...)...), []string{"ack count"}},
		{"lost pending", append(adds, append([]Op{xread("c1", OK, a)}, xfinals(all, nil, grp("1-0", 0, 1, 2))...)...), []string{"lost pending"}},
		{"phantom pending", append(adds, xfinals(all, pend("c1", "1-0"), grp("1-0", 1, 1, 2))...), []string{"phantom pending"}},
		{"last-delivered-id behind", append(adds, append([]Op{xread("c1", OK, a, b), xack("2", OK, "1-0", "2-0")}, xfinals(all, nil, grp("1-0", 0, 1, 2))...)...), []string{"group lag"}},
		{"skipped entry", append(adds, append([]Op{xread("c1", OK, b), xack("1", OK, "2-0")}, xfinals(all, nil, grp("2-0", 0, 2, 1))...)...), []string{"group lag"}},
		{"lag does not add up", append(adds, xfinals(all, nil, grp("0-0", 0, 0, 1))...), []string{"group lag"}},
		{"group lost", append(adds, xfinals(all, nil, nil)...), []string{"group lost"}},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.name, " ", "_"), func(t *testing.T) {
			var kinds []string
			for _, a := range checkStream("x", streamOps(tt.ops)) {
				kinds = append(kinds, a.Kind)
			}
			if strings.Join(kinds, ",") != strings.Join(tt.want, ",") {
				t.Errorf("anomalies %q, want %q", kinds, tt.want)
			}
		})
	}
}

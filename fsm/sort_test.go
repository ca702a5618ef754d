package fsm

import (
	"testing"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
)

func slotOf(s string) uint16 { return slots.Of([]byte(s)) }

func TestSortSetsAndZSets(t *testing.T) {
	h := newHarness(t)
	h.run([]step{
		{"sadd {s}n 3 1 2 10 -1.5", ":5"},
		{"sort {s}n", `["-1.5" "1" "2" "3" "10"]`},
		{"read sort_ro {s}n desc", `["10" "3" "2" "1" "-1.5"]`},
		{"sort {s}n alpha", `["-1.5" "1" "10" "2" "3"]`},
		{"sort {s}n limit 1 2", `["1" "2"]`},
		{"sort {s}n limit 1 -1", `["1" "2" "3" "10"]`},
		{"sort {s}n limit -5 2", `["-1.5" "1"]`},
		{"sort {s}n limit 5 2", `[]`},
		{"sort {s}n limit 0 0", `[]`},
		{"sort {s}n limit a 1", "-ERR value is not an integer or out of range"},
		{"sort {s}n limit 1", "-ERR syntax error"},
		{"sort {s}n foo", "-ERR syntax error"},
		{"read sort_ro {s}n store {s}d", "-ERR syntax error"},
		{"sadd {s}w a 1", ":2"},
		{"sort {s}w", "-ERR One or more scores can't be converted into double"},
		{"sort {s}w alpha", `["1" "a"]`},
		{"sort {s}missing", `[]`},
		{"set {s}str x", "+OK"},
		{"sort {s}str", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		// Equal scores fall back to the bytes of the elements.
		{"sadd {s}e 1.0 1 01", ":3"},
		{"sort {s}e", `["01" "1" "1.0"]`},
		// Sorted sets: BY a constant keeps the set's order, LIMIT and DESC apply to it.
		{"zadd {s}z 3 c 1 a 2 b", ":3"},
		{"sort {s}z by nosort", `["a" "b" "c"]`},
		{"sort {s}z by nosort desc", `["c" "b" "a"]`},
		{"sort {s}z by nosort limit 1 5", `["b" "c"]`},
		{"sort {s}z by nosort desc limit 1 1", `["b"]`},
		{"sort {s}z alpha desc", `["c" "b" "a"]`},
		// STORE writes a list and replies with its length; an empty result deletes.
		{"sort {s}n store {s}dst", ":5"},
		{"type {s}dst", "+list"},
		{"sort {s}missing store {s}dst", ":0"},
		{"exists {s}dst", ":0"},
		// A set sorted BY a constant into STORE is sorted ALPHA (no set order).
		{"sort {s}n by nosort store {s}dst", ":5"},
	})
}

func TestSortByAndGet(t *testing.T) {
	h := newHarness(t)
	h.run([]step{
		{"sadd {u}ids 1 2 3", ":3"},
		{"set {u}w_1 30", "+OK"},
		{"set {u}w_2 10", "+OK"},
		{"set {u}w_3 20", "+OK"},
		{"hset {u}h_1 name ann age 40", ":2"},
		{"hset {u}h_2 name bob", ":1"},
		{"sort {u}ids by {u}w_*", `["2" "3" "1"]`},
		{"sort {u}ids by {u}w_* desc get # get {u}h_*->name", `["1" "ann" "3" nil "2" "bob"]`},
		{"sort {u}ids by {u}h_*->age", `["2" "3" "1"]`}, // missing weights count as 0
		{"sort {u}ids by {u}h_*->name alpha", `["3" "1" "2"]`},
		{"sort {u}ids get {u}w_*", `["30" "10" "20"]`},
		{"sort {u}ids get {u}w_* get {u}h_*->name store {u}out", ":6"},
		{"read sort_ro {u}ids get {u}nostar", `[nil nil nil]`},
		// Patterns whose keys may be in another slot are refused.
		{"sort {u}ids by w_*", "-" + errSortBy.Error()},
		{"sort {u}ids by w_*{u}", "-" + errSortBy.Error()},
		{"sort {u}ids get h_*->name", "-" + errSortGet.Error()},
		{"sort {u}ids get {v}h_*", "-" + errSortGet.Error()},
		// BY without '*' means no sorting and is not checked.
		{"sort {u}ids by nosort store {u}o2", ":3"},
		{"set {u}w_2 x", "+OK"},
		{"sort {u}ids by {u}w_*", "-ERR One or more scores can't be converted into double"},
		{"sort {u}ids by {u}w_* alpha", `["3" "1" "2"]`},
	})
}

func TestSortKeys(t *testing.T) {
	tests := []struct {
		line string
		want []int
	}{
		{"sort k", []int{1}},
		{"sort k store d", []int{1, 3}},
		{"sort k limit 0 1 store d get # store e", []int{1, 10}},
		{"sort k by store store d", []int{1, 5}},
		{"sort k store", []int{1}},
	}
	for _, tt := range tests {
		got := Lookup([]byte("sort")).Meta.KeyIndexes(fields(tt.line))
		if len(got) != len(tt.want) || (len(got) == 2 && got[1] != tt.want[1]) {
			t.Errorf("%q: got %v, want %v", tt.line, got, tt.want)
		}
	}
	if !Lookup([]byte("sort")).Meta.Is(resp.FlagMovableKeys) || !Lookup([]byte("sort_ro")).Meta.Is(resp.FlagReadOnly) {
		t.Error("flags")
	}
}

func TestPatternSlot(t *testing.T) {
	tests := []struct {
		p    string
		want int
	}{
		{"{u}w_*", 0},
		{"w_*", -1},
		{"w_?{u}", -1},
		{`\{u}*`, -1},
		{"{}x", -2},
		{"x{u}*", 0},
	}
	for _, tt := range tests {
		got := patternSlot([]byte(tt.p))
		switch tt.want {
		case 0:
			if got != int(slotOf("u")) {
				t.Errorf("%q: got %d", tt.p, got)
			}
		case -2:
			if got != int(slotOf(tt.p)) {
				t.Errorf("%q: got %d", tt.p, got)
			}
		default:
			if got != tt.want {
				t.Errorf("%q: got %d, want %d", tt.p, got, tt.want)
			}
		}
	}
}

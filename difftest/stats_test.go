package difftest

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestStatsDifferential: SLOWLOG's and LATENCY's errors and empty
// replies agree exactly with redis-server, their HELP texts line by line
// (but the last: Debian's redis-server 7.0 ends with "Prints this help.",
// 7.2 with "Print this help."), slow log entries' argv and client name
// (with Redis's truncation) and shape, LATENCY HISTOGRAM's shape and
// calls, INFO's sections and the commandstats/errorstats fields and
// counts after the same commands.
func TestStatsDifferential(t *testing.T) {
	redisAddr := startRedis(t)
	slotraftAddr := startSlotraft(t)
	for _, proto := range []string{"2", "3"} {
		t.Run("RESP"+proto, func(t *testing.T) {
			rc, sc := connect(t, redisAddr, proto), connect(t, slotraftAddr, proto)
			sameReplies(t, rc, sc, [][]string{
				{"CONFIG", "SET", "latency-monitor-threshold", "0"},
				{"LATENCY", "RESET"},
				{"SLOWLOG", "GET", "x"}, {"SLOWLOG", "GET", "-2"}, {"SLOWLOG", "GET", "1", "2"},
				{"SLOWLOG", "LEN", "x"}, {"SLOWLOG", "RESET", "x"}, {"SLOWLOG", "NOPE"}, {"SLOWLOG"},
				{"LATENCY", "NOPE"}, {"LATENCY"}, {"LATENCY", "HISTORY"}, {"LATENCY", "HISTORY", "nosuch"},
				{"LATENCY", "LATEST"}, {"LATENCY", "RESET", "nosuch"}, {"LATENCY", "GRAPH", "nosuch"},
				{"LATENCY", "GRAPH"}, {"LATENCY", "LATEST", "x"}, {"LATENCY", "DOCTOR", "x"},
				{"LATENCY", "HISTOGRAM", "nosuch"}, {"LATENCY", "DOCTOR"}, // monitoring off: Redis's text
				{"CONFIG", "SET", "latency-monitor-threshold", "10000"}, {"LATENCY", "DOCTOR"}, // no spike yet
				{"CONFIG", "SET", "latency-monitor-threshold", "0"},
			})
			for _, help := range [][]string{{"SLOWLOG", "HELP"}, {"LATENCY", "HELP"}} {
				want, got := both(t, rc, sc, help)
				if len(want.elems) < 2 || len(want.elems) != len(got.elems) ||
					(reply{typ: '*', elems: want.elems[:len(want.elems)-1]}).String() != (reply{typ: '*', elems: got.elems[:len(got.elems)-1]}).String() {
					t.Errorf("%q:\n  redis:    %s\n  slotraft: %s", help, want, got)
				}
			}
			slowlogEntries(t, rc, sc)
			infoCounters(t, rc, sc, proto)
		})
	}
}

// sameReplies checks that each command gets the same reply from both.
func sameReplies(t *testing.T, rc, sc *client, cmds [][]string) {
	t.Helper()
	for _, args := range cmds {
		if want, got := both(t, rc, sc, args); want.String() != got.String() {
			t.Errorf("%q:\n  redis:    %s\n  slotraft: %s", args, want, got)
		}
	}
}

// slowlogEntries logs every command (slowlog-log-slower-than 0) and
// compares the entries of a long argument and of many arguments.
func slowlogEntries(t *testing.T, rc, sc *client) {
	t.Helper()
	many := []string{"RPUSH", "sl{x}"}
	for i := range 40 {
		many = append(many, strings.Repeat("a", i))
	}
	sameReplies(t, rc, sc, [][]string{
		{"CLIENT", "SETNAME", "difftest"},
		{"CONFIG", "SET", "slowlog-log-slower-than", "0", "slowlog-max-len", "128"},
		{"SLOWLOG", "RESET"},
		{"SET", "sk{x}", strings.Repeat("v", 300)},
		many,
		{"MULTI"}, {"SET", "sm{x}", "1"}, {"EXEC"}, // EXEC is skip-slowlog, what it runs is logged
	})
	want, got := both(t, rc, sc, []string{"SLOWLOG", "GET", "4"})
	if w, g := slowEntries(want), slowEntries(got); w != g {
		t.Errorf("SLOWLOG GET 4:\n  redis:    %s\n  slotraft: %s", w, g)
	}
	sameReplies(t, rc, sc, [][]string{
		{"CONFIG", "SET", "slowlog-log-slower-than", "-1"},
		{"SLOWLOG", "RESET"}, {"GET", "sk{x}"}, {"SLOWLOG", "LEN"}, {"SLOWLOG", "GET"},
		{"CONFIG", "SET", "slowlog-log-slower-than", "10000"},
	})
}

// slowEntries renders slow log entries without their id, time and
// duration, which differ: count of fields, argv, client name, and
// whether the address is set.
func slowEntries(r reply) string {
	var out []string
	for _, e := range r.elems {
		if len(e.elems) != 6 {
			out = append(out, "bad entry "+e.String())
			continue
		}
		kinds := string([]byte{e.elems[0].typ, e.elems[1].typ, e.elems[2].typ})
		out = append(out, kinds+" "+e.elems[3].String()+" "+e.elems[5].String()+" addr:"+
			fmtBool(strings.HasPrefix(e.elems[4].str, "127.0.0.1:")))
	}
	return strings.Join(out, "\n")
}

func fmtBool(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// usecField drops the time fields of a commandstats value.
var usecField = regexp.MustCompile(`usec=\d+,usec_per_call=[\d.]+,`)

// infoCounters runs the same commands on both after CONFIG RESETSTAT and
// compares INFO's sections, commandstats (without times) and errorstats.
func infoCounters(t *testing.T, rc, sc *client, proto string) {
	t.Helper()
	sameReplies(t, rc, sc, [][]string{
		{"CONFIG", "SET", "latency-tracking", "yes"},
		{"DEL", "ik{x}", "il{x}"},
		{"CONFIG", "RESETSTAT"},
		{"SET", "ik{x}", "v"}, {"GET", "ik{x}"}, {"GET", "nokey{x}"}, {"LPUSH", "ik{x}", "a"}, {"GET"}, {"NOSUCH"},
		{"CONFIG", "GET", "maxclients"}, {"CONFIG", "NOPE"},
		{"MULTI"}, {"INCR", "il{x}"}, {"LPUSH", "il{x}", "a"}, {"EXEC"},
		{"MULTI"}, {"GET"}, {"EXEC"},
	})
	want, got := both(t, rc, sc, []string{"INFO", "commandstats", "errorstats"})
	if w, g := sortedLines(usecField.ReplaceAllString(want.str, "")), sortedLines(usecField.ReplaceAllString(got.str, "")); w != g {
		t.Errorf("RESP%s INFO commandstats errorstats:\n  redis:\n%s\n  slotraft:\n%s", proto, w, g)
	}
	want, got = both(t, rc, sc, []string{"INFO", "stats"})
	for _, f := range []string{"keyspace_hits", "keyspace_misses", "total_error_replies", "total_commands_processed"} {
		if w, g := infoValue(want.str, f), infoValue(got.str, f); w != g || w == "" {
			t.Errorf("INFO %s: redis %q, slotraft %q", f, w, g)
		}
	}
	if proto == "3" {
		want, got = both(t, rc, sc, []string{"LATENCY", "HISTOGRAM", "get", "set"})
		if w, g := histogramShape(want), histogramShape(got); w != g {
			t.Errorf("LATENCY HISTOGRAM get set:\n  redis:    %s\n  slotraft: %s", w, g)
		}
	}
	for _, args := range [][]string{{"INFO"}, {"INFO", "default"}, {"INFO", "all"}, {"INFO", "everything"},
		{"INFO", "CommandStats", "SERVER"}, {"INFO", "nosuch"}, {"INFO", "default", "latencystats"}} {
		want, got := both(t, rc, sc, args)
		if w, g := infoHeaders(want.str), infoHeaders(got.str); w != g {
			t.Errorf("%q sections:\n  redis:    %s\n  slotraft: %s", args, w, g)
		}
	}
}

// sortedLines sorts the lines of an INFO text (Redis lists commands in
// its hash table's order).
func sortedLines(s string) string {
	lines := strings.Split(s, "\r\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// infoValue is field's value in an INFO text.
func infoValue(info, field string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// infoHeaders lists an INFO text's section headers.
func infoHeaders(info string) string {
	var out []string
	for _, line := range strings.Split(info, "\r\n") {
		if h, ok := strings.CutPrefix(line, "# "); ok {
			out = append(out, h)
		}
	}
	return strings.Join(out, " ")
}

// histogramShape renders LATENCY HISTOGRAM's commands, calls and the
// keys of each command's map (bucket counts are timings).
func histogramShape(r reply) string {
	var out []string
	for i := 0; i+1 < len(r.elems); i += 2 {
		m := r.elems[i+1]
		var keys []string
		for j := 0; j+1 < len(m.elems); j += 2 {
			k := m.elems[j].str
			if k == "calls" {
				k += "=" + m.elems[j+1].str
			}
			keys = append(keys, k)
		}
		out = append(out, r.elems[i].str+"{"+strings.Join(keys, " ")+"}")
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

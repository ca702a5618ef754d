package difftest

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// monitorStamp is what differs between two servers' MONITOR lines: the
// time and the client's address.
var monitorStamp = regexp.MustCompile(`^\d+\.\d{6} \[0 [^\]]+\] `)

// TestMonitorDifferential runs the same commands on redis-server and on
// slotraft with a MONITOR connection on each, and compares what the
// monitors print (without the time and the client's address): quoting,
// redaction of AUTH and HELLO's secrets, MULTI/EXEC, hidden admin
// commands, EVAL and FCALL with the commands their scripts call ("[0 lua]"
// lines, printed before the script's own command).
func TestMonitorDifferential(t *testing.T) {
	script := [][]string{
		{"SET", "k", "a b\n\x01\"é"},
		{"GET", "k"},
		{"AUTH", "default", "secret"},
		{"AUTH", "secret"},
		{"HELLO", "2", "AUTH", "default", "pw"},
		{"MULTI"}, {"INCR", "n"}, {"MONITOR"}, {"EXEC"},
		{"EVAL", "return redis.call('GET', KEYS[1])", "1", "k"},
		{"EVAL", "redis.call('SET', KEYS[1], '1'); redis.pcall('LPUSH', KEYS[1], 'x'); return redis.call('INCRBY', KEYS[1], ARGV[1])", "1", "k2", "5"},
		{"EVAL_RO", "return redis.call('STRLEN', KEYS[1])", "1", "k2"},
		{"FUNCTION", "LOAD", "REPLACE", "#!lua name=mon\nredis.register_function('mf', function(keys) return redis.call('GET', keys[1]) end)"},
		{"FCALL", "mf", "1", "k2"},
		{"CONFIG", "SET", "maxclients", "100"},
		{"CONFIG", "GET", "maxclients"},
		{"NOSUCH", "x"},
		{"GET"},
		{"ECHO", ""},
		{"PING", "last"},
	}
	var printed [2][]string
	var answers [2][]reply
	for i, addr := range []string{startRedis(t), startSlotraft(t)} {
		m, c := connect(t, addr, "2"), connect(t, addr, "2")
		if r, err := m.do("MONITOR"); err != nil || r.str != "OK" {
			t.Fatalf("MONITOR on %s: %v %v", addr, r, err)
		}
		replies, err := c.pipeline(script)
		if err != nil {
			t.Fatal(err)
		}
		printed[i] = readMonitorUntil(t, m, `"PING" "last"`)
		answers[i] = replies
	}
	for j, args := range script {
		if args[0] == "HELLO" {
			continue // the servers describe themselves
		}
		if w, g := answers[0][j].String(), answers[1][j].String(); w != g {
			t.Errorf("%q:\nredis-server: %s\nslotraft:     %s", args, w, g)
		}
	}
	if w, g := strings.Join(printed[0], "\n"), strings.Join(printed[1], "\n"); w != g {
		t.Errorf("MONITOR printed\nredis-server:\n%s\nslotraft:\n%s", w, g)
	}
}

// readMonitorUntil reads monitor lines up to the one ending in last, each
// without its time and address (a script's calls keep their "lua").
func readMonitorUntil(t *testing.T, m *client, last string) []string {
	t.Helper()
	_ = m.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var out []string
	for {
		r, err := m.read()
		if err != nil || r.typ != '+' {
			t.Fatalf("monitor: %v %v (after %q)", r, err, out)
		}
		line := monitorStamp.ReplaceAllString(r.str, "")
		if strings.Contains(r.str, " [0 lua] ") {
			line = "lua: " + line
		}
		out = append(out, line)
		if out[len(out)-1] == last {
			return out
		}
	}
}

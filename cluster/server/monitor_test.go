package server

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// stamp is the start of a MONITOR line: "+<seconds>.<micros> [0 ".
var stamp = regexp.MustCompile(`^\+\d{10}\.\d{6} \[0 `)

// readMonitor reads a MONITOR line and returns it without its timestamp
// and client address: the command's arguments as Redis quotes them.
func readMonitor(t *testing.T, m *blkConn) string {
	t.Helper()
	line := m.read(10 * time.Second)
	if !stamp.MatchString(line) {
		t.Fatalf("monitor line %q", line)
	}
	_, args, _ := strings.Cut(line, "] ")
	return args
}

func TestMonitor(t *testing.T) {
	addr := singleNodeAddr(t)
	m, cl := dialBlk(t, addr), dialBlk(t, addr)
	do := func(b *blkConn, args ...string) string {
		t.Helper()
		b.send(args...)
		return b.read(10 * time.Second)
	}
	if got := do(m, "MONITOR"); got != "+OK" {
		t.Fatalf("MONITOR = %q", got)
	}
	tests := []struct {
		args  []string
		reply string
		fed   []string // the monitor's lines, in order
	}{
		{[]string{"SET", "k", "a b\n\x01"}, "+OK", []string{`"SET" "k" "a b\n\x01"`}},
		{[]string{"GET", "k"}, "a b\n\x01", []string{`"GET" "k"`}},
		{[]string{"AUTH", "default", "secret"}, "+OK", []string{`"AUTH" "(redacted)" "(redacted)"`}},
		{[]string{"HELLO", "2", "AUTH", "default", "pw", "SETNAME", "n"}, "", []string{`"HELLO" "2" "AUTH" "(redacted)" "(redacted)" "SETNAME" "n"`}},
		{[]string{"MULTI"}, "+OK", []string{`"MULTI"`}},
		{[]string{"INCR", "n"}, "+QUEUED", nil},
		{[]string{"MONITOR"}, "+QUEUED", nil},
		{[]string{"EXEC"}, "[:1 -ERR MONITOR isn't allowed for DENY BLOCKING client]", []string{`"INCR" "n"`, `"EXEC"`}},
		// A script's calls follow it, from "lua", as Redis feeds them.
		{[]string{"EVAL", "return redis.call('GET', KEYS[1])", "1", "k"}, "a b\n\x01",
			[]string{`"EVAL" "return redis.call('GET', KEYS[1])" "1" "k"`, `lua] "GET" "k"`}},
		{[]string{"EVAL", "redis.call('SET', KEYS[1], 'x'); return redis.pcall('INCR', KEYS[1])", "1", "s"}, "",
			[]string{`"EVAL" "redis.call('SET', KEYS[1], 'x'); return redis.pcall('INCR', KEYS[1])" "1" "s"`, `lua] "SET" "s" "x"`, `lua] "INCR" "s"`}},
		{[]string{"EVAL_RO", "return redis.call('STRLEN', KEYS[1])", "1", "s"}, ":1",
			[]string{`"EVAL_RO" "return redis.call('STRLEN', KEYS[1])" "1" "s"`, `lua] "STRLEN" "s"`}},
		{[]string{"CONFIG", "SET", "maxclients", "100"}, "+OK", nil}, // admin: not shown
		{[]string{"NOSUCH"}, "-ERR unknown command 'NOSUCH', with args beginning with: ", nil},
		{[]string{"PING"}, "+PONG", []string{`"PING"`}},
	}
	for _, tc := range tests {
		got := do(cl, tc.args...)
		if tc.reply != "" && got != tc.reply {
			t.Errorf("%q = %q, want %q", tc.args, got, tc.reply)
		}
		for _, want := range tc.fed {
			if from, ok := strings.CutPrefix(want, "lua] "); ok {
				// a script's call: check its client field too
				line := m.read(10 * time.Second)
				if !stamp.MatchString(line) || !strings.HasSuffix(line, "[0 lua] "+from) {
					t.Errorf("after %q the monitor printed %s, want [0 lua] %s", tc.args, line, from)
				}
				continue
			}
			if line := readMonitor(t, m); line != want {
				t.Errorf("after %q the monitor printed %s, want %s", tc.args, line, want)
			}
		}
	}
	// The monitor itself: no keyspace, other commands run and are shown,
	// a second MONITOR is ignored, RESET ends it, QUIT closes it.
	if got := do(m, "GET", "k"); got != "-ERR Replica can't interact with the keyspace" {
		t.Errorf("GET on a monitor = %q", got)
	}
	m.send("MONITOR")
	if got := do(m, "ECHO", "e"); got != "e" {
		t.Errorf("ECHO after a second MONITOR = %q (the MONITOR must not answer)", got)
	}
	if line := readMonitor(t, m); line != `"ECHO" "e"` {
		t.Errorf("the monitor printed %s, want its own ECHO", line)
	}
	if got := do(m, "RESET"); got != "+RESET" {
		t.Errorf("RESET = %q", got)
	}
	do(cl, "SET", "k", "after")
	if got := do(m, "GET", "k"); got != "after" {
		t.Errorf("GET after RESET = %q: monitoring went on", got)
	}
	if got := do(m, "QUIT"); got != "+OK" {
		t.Errorf("QUIT = %q", got)
	}
}

// TestMonitorBounded: a monitor that does not read never slows the node
// down; past the pubsub class's output limit it is closed.
func TestMonitorBounded(t *testing.T) {
	addr := singleNodeAddr(t)
	m, cl := dialBlk(t, addr), dialBlk(t, addr)
	cl.send("CONFIG", "SET", "client-output-buffer-limit", "pubsub 64kb 0 0")
	if got := cl.read(10 * time.Second); got != "+OK" {
		t.Fatalf("CONFIG SET = %q", got)
	}
	m.send("MONITOR")
	if got := m.read(10 * time.Second); got != "+OK" {
		t.Fatalf("MONITOR = %q", got)
	}
	big := strings.Repeat("x", 8<<10)
	start := time.Now()
	for range 2000 { // 16 MB of monitor output, more than a socket buffers
		cl.send("ECHO", big)
		if got := cl.read(10 * time.Second); got != big {
			t.Fatalf("ECHO = %.20q…", got)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("2000 ECHOs took %v with a stalled monitor", d)
	}
	cl.send("INFO", "stats")
	if info := cl.read(10 * time.Second); !strings.Contains(info, "client_output_buffer_limit_disconnections:1\r\n") {
		t.Errorf("the monitor was not closed over its limit:\n%s", info)
	}
}

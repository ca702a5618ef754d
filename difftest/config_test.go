package difftest

import (
	"sort"
	"strings"
	"testing"
)

// configSkip are the parameters whose values legitimately differ between
// the two servers, or which the installed redis-server does not know the
// same way, so the comparison leaves them out:
var configSkip = map[string]bool{
	// the process: each server's own port, directory, listen addresses,
	// log file and socket (the test starts redis-server with --bind,
	// --dir and --logfile);
	"port": true, "dir": true, "bind": true, "logfile": true, "unixsocket": true, "pidfile": true,
	// slotraft is always a cluster;
	"cluster-enabled": true,
	// Redis 7.2 added these, and hid aof-disable-auto-gc from patterns;
	// Debian's redis-server may be 7.0, which lists them otherwise.
	"set-max-listpack-entries": true, "set-max-listpack-value": true, "locale-collate": true,
	"cluster-announce-human-nodename": true, "aof-disable-auto-gc": true,
}

// configMap is a CONFIG GET reply as sorted "name=value" lines, without
// configSkip's parameters.
func configMap(t *testing.T, c *client, patterns ...string) string {
	t.Helper()
	r, err := c.do(append([]string{"CONFIG", "GET"}, patterns...)...)
	if err != nil || (r.typ != '*' && r.typ != '%') {
		t.Fatalf("CONFIG GET %v: %v %v", patterns, r, err)
	}
	var lines []string
	for i := 0; i+1 < len(r.elems); i += 2 {
		if name := r.elems[i].str; !configSkip[strings.ToLower(name)] {
			lines = append(lines, name+"="+r.elems[i+1].str)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestConfigGetDifferential compares CONFIG GET of many patterns on fresh
// servers: the defaults of every shared parameter, aliases, names as asked.
func TestConfigGetDifferential(t *testing.T) {
	rc, sc := connect(t, startRedis(t), "2"), connect(t, startSlotraft(t), "2")
	for _, pats := range [][]string{
		{"*"}, {"*max*"}, {"hash-max-ziplist-*"}, {"hash-max-ziplist-entries"},
		{"HASH-MAX-ZIPLIST-ENTRIES"}, {"maxclients", "MAXCLIENTS", "max*s"}, {"timeout", "tcp-*", "nosuch"},
		{"slaveof"}, {"[a-c]*"}, {"?z*"}, {"*-ziplist-*", "*-listpack-*"}, {"repl*", "replica*"},
		{"aof-disable-auto-gc"}, {"client-output-buffer-limit", "notify-keyspace-events", "save", "appendonly"},
	} {
		if r, s := configMap(t, rc, pats...), configMap(t, sc, pats...); r != s {
			t.Errorf("CONFIG GET %q:\nredis:\n%s\nslotraft:\n%s", pats, r, s)
		}
	}
	for _, c := range []*client{rc, sc} {
		if r, err := c.do("HELLO", "3"); err != nil || r.typ == '-' {
			t.Fatal(r, err)
		}
	}
	same(t, rc, sc, "CONFIG", "GET", "maxclients") // a map in RESP3
	same(t, rc, sc, "CONFIG", "GET")
}

// same runs one command on both servers and wants byte-identical replies.
func same(t *testing.T, rc, sc *client, args ...string) {
	t.Helper()
	r, err1 := rc.do(args...)
	s, err2 := sc.do(args...)
	if err1 != nil || err2 != nil || r.String() != s.String() {
		t.Errorf("%q:\nredis:    %v %v\nslotraft: %v %v", args, r, err1, s, err2)
	}
}

// TestConfigSetDifferential runs CONFIG SETs, good and bad, one by one on
// both servers; after each, the parameters it named must read the same.
func TestConfigSetDifferential(t *testing.T) {
	rc, sc := connect(t, startRedis(t), "2"), connect(t, startSlotraft(t), "2")
	for _, args := range [][]string{
		// good values, shown in Redis's form
		{"maxmemory", "1gb"}, {"maxmemory", "99999999999999999999"}, {"maxmemory", "kb"},
		{"maxmemory-clients", "5%"}, {"maxmemory-clients", "1mb"}, {"hash-max-ziplist-entries", "100"},
		{"appendfsync", "ALWAYS"}, {"oom-score-adj", "relative"}, {"shutdown-on-sigint", "now save"},
		{"save", "3600 1 300 100"}, {"save", ""}, {"latency-tracking-info-percentiles", "50.0 99.999"},
		{"tcp-keepalive", "60"}, {"client-output-buffer-limit", "pubsub 1mb 1k 5 normal 1 2 3"},
		{"tracking-table-max-keys", "5"}, {"tracking-table-max-keys", "0"}, {"tracking-table-max-keys", "-1"},
		{"notify-keyspace-events", "KEA"}, {"list-max-ziplist-size", "-1"}, {"busy-reply-threshold", "1000"},
		{"appendonly", "no"}, {"oom-score-adj-values", "1 2 3"}, {"bind-source-addr", "x"},
		{"hash-max-listpack-entries", "1", "hash-max-ziplist-entries", "2"}, // two names: the last wins
		{"zset-max-ziplist-value", "1kb", "lua-time-limit", "7"},
		{"hz", "1000"}, {"hz", "0"}, {"hz", "25"}, {"active-expire-effort", "10"}, {"dynamic-hz", "no"}, // hz capped to 1..500
		// bad values and names: Redis's errors, nothing changed
		{"maxmemory", "1.5gb"}, {"maxmemory", "-1"}, {"maxclients", "0"}, {"maxclients", "-5"},
		{"tcp-keepalive", "+5"}, {"tcp-keepalive", "05"}, {"appendfsync", "foo"}, {"rdbcompression", "maybe"},
		{"save", "1 2 3"}, {"save", "0 1"}, {"oom-score-adj-values", "1 2"}, {"maxmemory-clients", "101%"},
		{"maxmemory-clients", "-5"}, {"proto-max-bulk-len", "1kb"}, {"hash-max-ziplist-entries", "-1"},
		{"shutdown-on-sigint", "save nosave"}, {"cluster-announce-hostname", "a_b"},
		{"hz", "-1"}, {"active-expire-effort", "0"}, {"active-expire-effort", "11"}, {"shutdown-timeout", "-1"},
		{"latency-tracking-info-percentiles", "101"}, {"notify-keyspace-events", "KEAq"},
		{"client-output-buffer-limit", "master 1 2 3"}, {"nosuch", "1"}, {"daemonize", "yes"},
		{"dir", "/tmp"}, {"dbfilename", "a/b"}, {"unixsocketperm", "777"}, {"slaveof", "no one"},
		{"timeout", "5", "timeout", "6"}, {"timeout", "5", "TIMEOUT", "6"},
		{"maxmemory", "2mb", "tcp-keepalive", "7", "activerehashing", "x"}, // all or nothing
		{"maxmemory", "2mb", "nosuch", "1", "daemonize", "yes"},
		{"maxmemory", "2mb", "daemonize", "yes", "nosuch", "1"},
		{"maxmemory", "2mb", "maxmemory"},
	} {
		same(t, rc, sc, append([]string{"CONFIG", "SET"}, args...)...)
		var names []string
		for i := 0; i < len(args); i += 2 {
			names = append(names, args[i])
		}
		if r, s := configMap(t, rc, names...), configMap(t, sc, names...); r != s {
			t.Errorf("after CONFIG SET %q:\nredis:\n%s\nslotraft:\n%s", args, r, s)
		}
	}
	same(t, rc, sc, "CONFIG", "SET", "maxmemory")
}

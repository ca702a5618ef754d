package server

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestConfigParse checks values of each type against what Redis 7.2
// accepts, shows and answers (checked on redis-server).
func TestConfigParse(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"rdbcompression", "YES", "yes"},
		{"rdbcompression", "maybe", "!argument must be 'yes' or 'no'"},
		{"tcp-keepalive", "60", "60"},
		{"tcp-keepalive", "+5", "!argument couldn't be parsed into an integer"},
		{"tcp-keepalive", "05", "!argument couldn't be parsed into an integer"},
		{"tcp-keepalive", "1e3", "!argument couldn't be parsed into an integer"},
		{"tcp-keepalive", "-1", "!argument must be between 0 and 2147483647 inclusive"},
		{"maxmemory-eviction-tenacity", "101", "!argument must be between 0 and 100 inclusive"},
		{"maxclients", "0", "!argument must be between 1 and 4294967295 inclusive"},
		{"maxclients", "-5", "!argument must be between 1 and 4294967295 inclusive"}, // unsigned: -5 wraps
		{"hash-max-ziplist-entries", "-1", "!argument must be between 0 and 9223372036854775807 inclusive"},
		{"maxmemory", "1gb", "1073741824"},
		{"maxmemory", "1GB", "1073741824"},
		{"maxmemory", "1k", "1000"},
		{"maxmemory", "100mb", "104857600"},
		{"maxmemory", "kb", "0"},
		{"maxmemory", "1.5gb", "!argument must be a memory value"},
		{"maxmemory", "-1", "!argument must be a memory value"},
		{"maxmemory", "99999999999999999999", "18446744073709551615"}, // strtoull saturates
		{"proto-max-bulk-len", "1kb", "!argument must be between 1048576 and 9223372036854775807 inclusive"},
		{"maxmemory-clients", "5%", "5%"},
		{"maxmemory-clients", "101%", "!percentage argument must be less or equal to 100"},
		{"maxmemory-clients", "-5", "!argument must be a memory or percent value"},
		{"maxmemory-clients", "1mb", "1048576"},
		{"appendfsync", "ALWAYS", "always"},
		{"appendfsync", "foo", "!argument(s) must be one of the following: everysec, always, no"},
		{"oom-score-adj", "relative", "yes"}, // the first name of the value
		{"shutdown-on-sigint", "save now", "save now"},
		{"shutdown-on-sigint", "now save", "save now"},
		{"shutdown-on-sigint", "save nosave", "!shutdown options SAVE and NOSAVE can't be used simultaneously"},
		{"shutdown-on-sigint", "", "!argument(s) must be one of the following: default, save, nosave, now, force"},
		{"hz", "1000", "500"}, // capped, as Redis's updateHZ
		{"hz", "0", "1"},
		{"hz", "42", "42"},
		{"hz", "-1", "!argument must be between 0 and 2147483647 inclusive"},
		{"active-expire-effort", "11", "!argument must be between 1 and 10 inclusive"},
		{"save", "3600 1 300 100", "3600 1 300 100"},
		{"save", "", ""},
		{"save", "1 2 3", "!Invalid save parameters"},
		{"save", "0 1", "!Invalid save parameters"},
		{"save", "+10 -0", "10 0"},
		{"oom-score-adj-values", "1 2", "!wrong number of arguments"},
		{"oom-score-adj-values", "0 200 2001", "!Invalid oom-score-adj-values, elements must be between -2000 and 2000."},
		{"bind", "", ""},
		{"bind", strings.Repeat("a ", 16) + "a", "!Too many bind addresses specified."},
		{"latency-tracking-info-percentiles", "50.0 99.999 100", "50 99.999 100"},
		{"latency-tracking-info-percentiles", "101", "!latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"},
		{"latency-tracking-info-percentiles", "x", "!Invalid latency-tracking-info-percentiles parameters"},
		{"dbfilename", "a/b", "!dbfilename can't be a path, just a filename"},
		{"cluster-announce-hostname", "a_b", "!Hostnames may only contain alphanumeric characters, hyphens or dots"},
		{"proc-title-template", "{title}", "!template format is invalid or contains unknown variables"},
		{"proc-title-template", "{nosuch}", "!template format is invalid or contains unknown variables"},
		{"dir", "/nonexistent-dir-for-slotraft", "!no such file or directory"},
		{"notify-keyspace-events", "KEA", "AKE"},
		{"client-output-buffer-limit", "pubsub 1mb 1k 5", "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 1000 5"},
		{"unixsocketperm", "777", "777"},
	} {
		p := configTable.lookup(tc.name)
		if p == nil {
			t.Fatalf("%s: unknown", tc.name)
		}
		v, err := p.parse(p.def, tc.in)
		got := v.text
		if err != nil {
			got = "!" + err.Error()
		}
		if got != tc.want {
			t.Errorf("%s %q: got %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

// TestConfigDefaults: every default is in its canonical form (it parses
// to itself), and every alias finds its parameter.
func TestConfigDefaults(t *testing.T) {
	for _, p := range configTable.params {
		if p.name == "replicaof" {
			continue // "" (no master) is shown, never set: "no one" sets it
		}
		if v, err := p.parse(p.def, p.def); err != nil || v.text != p.def {
			t.Errorf("%s: default %q parses to %q, %v", p.name, p.def, v.text, err)
		}
		if p.alias != "" && configTable.lookup(strings.ToUpper(p.alias)) != p {
			t.Errorf("%s: alias %s not found", p.name, p.alias)
		}
	}
	if n := len(configTable.params); n < 180 {
		t.Errorf("%d parameters, want Redis 7.2's table (about 190)", n)
	}
}

var errApplyFailed = errors.New("apply failed")

// TestConfigSetRollback: a failing value or a failing apply leaves every
// parameter of the CONFIG SET as it was; the error names the parameter.
func TestConfigSetRollback(t *testing.T) {
	applied := map[string]string{}
	record := func(name string) func(*Server, configValue) error {
		return func(_ *Server, v configValue) error {
			if v.text == "13" {
				return errApplyFailed
			}
			applied[name] = v.text
			return nil
		}
	}
	reg := newConfigRegistry(
		numParam("a", "a-alias", 0, plain(0, 100), 1).onApply(record("a")),
		numParam("b", noAlias, 0, plain(0, 100), 2).onApply(record("b")),
	)
	cv := newConfigValues(reg)
	set := func(pairs ...string) error {
		var ch []configChange
		for i := 0; i < len(pairs); i += 2 {
			ch = append(ch, configChange{p: reg.lookup(pairs[i]), name: pairs[i], value: pairs[i+1]})
		}
		return cv.set(nil, ch)
	}
	state := func() string {
		return fmt.Sprintf("%s %s %v", cv.vals[0], cv.vals[1], applied)
	}
	if err := set("a", "5", "b", "6"); err != nil {
		t.Fatal(err)
	}
	before := state()
	var se *configSetError
	for _, tc := range []struct {
		pairs []string
		name  string
		err   error
	}{
		{[]string{"a", "7", "b", "x"}, "b", errConfigInt},                // a bad value: nothing applied
		{[]string{"a", "7", "b", "13"}, "b", errApplyFailed},             // a failing apply: a rolled back
		{[]string{"a-alias", "13", "b", "8"}, "a-alias", errApplyFailed}, // named as asked
	} {
		err := set(tc.pairs...)
		if !errors.As(err, &se) || se.name != tc.name || !errors.Is(err, tc.err) {
			t.Errorf("%v: got %v, want %s: %v", tc.pairs, err, tc.name, tc.err)
		}
		if got := state(); got != before {
			t.Errorf("%v: state %s, want %s", tc.pairs, got, before)
		}
	}
}

// FuzzConfigValues: a value any parameter accepts is shown in a form
// that parses to itself, and no value makes a parser panic.
func FuzzConfigValues(f *testing.F) {
	for _, s := range []string{"1gb", "5%", "-1", "99999999999999999999kb", "save now", "3600 1", "1 2 3", "50 99.9", "0777", "KEA", "pubsub 1 2 3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		for _, p := range configTable.params {
			if p.name == "dir" {
				continue // reads the file system
			}
			v, err := p.parse(p.def, in)
			if err != nil {
				continue
			}
			if w, err := p.parse(p.def, v.text); err != nil || w.text != v.text {
				t.Errorf("%s %q: shown as %q, which parses to %q, %v", p.name, in, v.text, w.text, err)
			}
		}
	})
}

// TestConfigConnections: maxclients refuses a connection over the limit
// with Redis's error, timeout closes an idle client but not a subscriber
// (one that unsubscribed from everything is closed).
func TestConfigConnections(t *testing.T) {
	_, addr := pubsubNode(t)
	admin := dialPS(t, addr)
	admin.do("CONFIG SET maxclients 2", "+OK\r\n")
	second := dialPS(t, addr)
	second.do("PING", "+PONG\r\n")
	third := dialPS(t, addr)
	third.expect("-ERR max number of clients reached\r\n")
	third.expectEOF()
	admin.do("CONFIG SET maxclients 10000", "+OK\r\n")
	second.c.Close()

	sub := dialPS(t, addr)
	sub.do("SUBSCRIBE ch", confirm(2, "subscribe", "ch", 1))
	idle := dialPS(t, addr)
	idle.do("PING", "+PONG\r\n")
	was := dialPS(t, addr) // subscribed once, now out of pub/sub mode: not spared
	was.do("SUBSCRIBE ch2", confirm(2, "subscribe", "ch2", 1))
	was.do("UNSUBSCRIBE ch2", confirm(2, "unsubscribe", "ch2", 0))
	admin.do("CONFIG SET timeout 1", "+OK\r\n")
	idle.do("PING", "+PONG\r\n") // from now on idle for a second: closed
	idle.expectEOF()
	was.expectEOF()
	sub.do("PING", push(2, bulk("pong"), bulk("")))       // idle longer, still served
	dialPS(t, addr).do("CONFIG SET timeout 0", "+OK\r\n") // admin was idle too: closed
}

package server

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigFileParse reads files as Redis 7.2 does: comments, blank
// lines, quotes, aliases, multi-argument parameters, repeated lines; own
// directives go to their appliers.
func TestConfigFileParse(t *testing.T) {
	var own []string
	owns := map[string]OwnDirective{"data-dir": func(args []string) error {
		if len(args) != 1 {
			return errConfigArgCount
		}
		own = append(own, args[0])
		return nil
	}}
	for _, tc := range []struct {
		text string
		want map[string]string // parameter -> value; "data-dir" is the own directive's arguments
	}{
		{"# comment\n\n   \t\nmaxmemory 100mb\r\n  timeout 5  \n", map[string]string{"maxmemory": "104857600", "timeout": "5"}},
		{`requirepass "a b\x41\n"`, map[string]string{"requirepass": "a bA\n"}},
		{`dbfilename 'it''s.rdb'`, nil}, // a closing quote must end its argument: refused below
		{"MAXMEMORY 1gb\nmaxmemory 2gb", map[string]string{"maxmemory": "2147483648"}},
		{"hash-max-ziplist-entries 10", map[string]string{"hash-max-listpack-entries": "10"}},
		{"save 3600 1 300 100", map[string]string{"save": "3600 1 300 100"}},
		{"save 3600 1\nsave 300 100\nsave 60 10000", map[string]string{"save": "3600 1 300 100 60 10000"}},
		{`save "3600 1"`, map[string]string{"save": "3600 1"}},
		{"save 3600 1\nsave \"\"", map[string]string{"save": ""}},
		{"client-output-buffer-limit normal 1mb 2mb 3\nclient-output-buffer-limit pubsub 0 0 0",
			map[string]string{"client-output-buffer-limit": "normal 1048576 2097152 3 slave 268435456 67108864 60 pubsub 0 0 0"}},
		{"shutdown-on-sigterm save now", map[string]string{"shutdown-on-sigterm": "save now"}},
		{"bind 127.0.0.1 -::1", map[string]string{"bind": "127.0.0.1 -::1"}},
		{"cluster-enabled yes\ndaemonize no", map[string]string{"cluster-enabled": "yes", "daemonize": "no"}},
		{"data-dir /var/lib/x\ndata-dir \"/a b\"", map[string]string{"data-dir": "/var/lib/x|/a b"}},
	} {
		own = nil
		f, err := parseConfig(tc.text, owns)
		if tc.want == nil {
			if err == nil {
				t.Errorf("%q: accepted", tc.text)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.text, err)
			continue
		}
		for name, want := range tc.want {
			got, ok := f.Value(name)
			if name == "data-dir" {
				got, ok = strings.Join(own, "|"), len(own) > 0
			}
			if !ok || got != want {
				t.Errorf("%q: %s = %q (set %v), want %q", tc.text, name, got, ok, want)
			}
		}
	}
}

// TestConfigFileErrors: a bad line stops the start with its number, the
// line and Redis's reason.
func TestConfigFileErrors(t *testing.T) {
	own := map[string]OwnDirective{"groups": func(args []string) error {
		if len(args) != 1 {
			return errConfigArgCount
		}
		return nil
	}}
	for _, tc := range []struct {
		text string
		line int
		err  string
	}{
		{"# ok\ntimeout 5\nno-such-thing 1", 3, "Bad directive or wrong number of arguments"},
		{"maxmemory lots", 1, "argument must be a memory value"},
		{"\n\ntimeout 1 2", 3, "wrong number of arguments"},
		{"timeout", 1, "wrong number of arguments"},
		{`requirepass "open`, 1, "Unbalanced quotes in configuration line"},
		{`requirepass "a"b`, 1, "Unbalanced quotes in configuration line"},
		{"rename-command FLUSHALL \"\"", 1, "rename-command is not supported"},
		{"tcp-keepalive -1", 1, "argument must be between 0 and 2147483647 inclusive"},
		{"save 3600", 1, "Invalid save parameters"},
		{"appendfsync sometimes", 1, "argument(s) must be one of the following: everysec, always, no"},
		{"groups 1 2", 1, "wrong number of arguments"},
		{"include", 1, "Bad directive or wrong number of arguments"},
		{"include /nonexistent/slotraft.conf", 1, "can't open config file '/nonexistent/slotraft.conf': No such file or directory"},
		{"timeout 1\nreplicaof 10.0.0.1 6379\n", 0, "replicaof directive not allowed in cluster mode"}, // after the last line: none named
	} {
		_, err := parseConfig(tc.text, own)
		var fe *ConfigFileError
		if !errors.As(err, &fe) {
			t.Errorf("%q: got %v, want a ConfigFileError", tc.text, err)
			continue
		}
		if fe.Line != tc.line || !strings.Contains(fe.Err.Error(), tc.err) {
			t.Errorf("%q: line %d: %v; want line %d: %s", tc.text, fe.Line, fe.Err, tc.line, tc.err)
		}
	}
	_, err := parseConfig("timeout 1\nmaxmemory lots\n", nil)
	want := "\n*** FATAL CONFIG FILE ERROR (Redis " + Version + ") ***\nReading the configuration file, at line 2\n>>> 'maxmemory lots'\nargument must be a memory value\n"
	if err == nil || err.Error() != want {
		t.Errorf("error text %q, want %q", err, want)
	}
	if !errors.Is(err, errConfigMemory) {
		t.Errorf("%v does not wrap errConfigMemory", err)
	}
	_, err = parseConfig("slaveof h 1\n", nil)
	want = "\n*** FATAL CONFIG FILE ERROR (Redis " + Version + ") ***\nreplicaof directive not allowed in cluster mode\n"
	if err == nil || err.Error() != want {
		t.Errorf("error text %q, want %q", err, want)
	}
	if _, err := parseConfig("replicaof no one\n", nil); err != nil {
		t.Errorf("replicaof no one: %v", err)
	}
}

// TestConfigFileInclude: an included file's parameters count, its bad
// line is reported with its own line number; a glob that matches nothing
// is no error; a file that includes itself stops.
func TestConfigFileInclude(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	inc := write("inc.conf", "timeout 7\n")
	main := write("main.conf", "maxmemory 1mb\ninclude "+inc+"\ninclude "+dir+"/none/*.conf\n")
	f, err := ReadConfigFile(main, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := f.Value("timeout"); v != "7" {
		t.Errorf("timeout %q from the included file, want 7", v)
	}
	bad := write("bad.conf", "\n\ntimeout x\n")
	_, err = ReadConfigFile(write("m2.conf", "include "+bad+"\n"), nil)
	var fe *ConfigFileError
	if !errors.As(err, &fe) || fe.Line != 3 || fe.File != bad {
		t.Errorf("bad included line: %v (%+v), want %s line 3", err, fe, bad)
	}
	loop := filepath.Join(dir, "loop.conf")
	write("loop.conf", "include "+loop+"\n")
	if _, err := ReadConfigFile(loop, nil); !errors.Is(err, errConfigIncludeLoop) {
		t.Errorf("include loop: %v", err)
	}
}

// FuzzConfigFile: no file makes the parser panic, and a file it accepts,
// written back as CONFIG REWRITE writes a new file, reads back to the
// same values.
func FuzzConfigFile(f *testing.F) {
	for _, s := range []string{"maxmemory 1gb\n# c\nsave 1 2\nsave 3 4", `requirepass "a\x00b"`, "bind * -::*",
		"client-output-buffer-limit pubsub 1k 2k 3", "notify-keyspace-events KEA", "save \"\"", "'x", "maxmemory-clients 5%",
		"unixsocketperm 700", "latency-tracking-info-percentiles \"\"", "dbfilename \"a\\\"b\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if strings.Contains(strings.ToLower(text), "include") {
			return // reads files
		}
		cf, err := parseConfig(text, nil)
		if err != nil {
			return
		}
		st := newRewriteState()
		value := func(p *configParam) string {
			if v, ok := cf.values[p]; ok {
				return v
			}
			return p.def
		}
		st.rewriteAll(configTable, value)
		again, err := parseConfig(st.content(), nil)
		if err != nil {
			t.Fatalf("%q rewritten as %q: %v", text, st.content(), err)
		}
		for _, p := range configTable.params {
			if got, ok := again.values[p]; ok && got != value(p) || !ok && value(p) != p.def && p.name != "replicaof" {
				t.Errorf("%q: %s reads back as %q, want %q (from %q)", text, p.name, got, value(p), st.content())
			}
		}
	})
}

package difftest

import (
	"strings"
	"testing"
)

// Functions: the same FUNCTION and FCALL commands against redis-server and
// slotraft, in RESP2 and RESP3, and libraries moved both ways with
// FUNCTION DUMP and RESTORE. The cases avoid what docs/compatibility.md
// lists as different (gopher-lua's own error texts, library-level state
// kept between calls, Redis 7.2-only flags, FUNCTION HELP's last line,
// which Redis 7.0 words differently).

const (
	fnSetLib = "#!lua name=setlib\nredis.register_function('set2', function(keys, args) return redis.call('set', keys[1], args[1]) end)"
	fnGetLib = "#!lua name=getlib\nredis.register_function{function_name='get2', description='reads a key', " +
		"callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes', 'allow-oom'}}"
	fnMiscLib = "#!lua name=misc\n" +
		"redis.register_function{function_name='sneaky', callback=function(keys) return redis.call('set', keys[1], 'x') end, flags={'no-writes'}}\n" +
		"redis.register_function('echo', function(keys, args) return {keys, args, #keys} end)\n" +
		"redis.register_function('fail', function() return redis.error_reply('MY failure') end)\n" +
		"redis.register_function('status', function() return redis.status_reply('FINE') end)\n" +
		"redis.register_function('nokeys', function() return KEYS end)\n" +
		"redis.register_function('maps', function(keys) redis.setresp(3) return redis.call('hgetall', keys[1]) end)"
)

func fnLib(body string) string { return "#!lua name=x\n" + body }

func TestFunctionsDifferential(t *testing.T) {
	redisAddr, slotraftAddr := startRedis(t), startSlotraft(t)
	for _, proto := range []string{"2", "3"} {
		t.Run("RESP"+proto, func(t *testing.T) {
			rc, sc := connect(t, redisAddr, proto), connect(t, slotraftAddr, proto)
			ops := []op{
				{args: []string{"FUNCTION", "FLUSH"}},
				{args: []string{"FUNCTION", "LOAD", fnSetLib}},
				{args: []string{"FUNCTION", "LOAD", fnSetLib}},
				{args: []string{"FUNCTION", "LOAD", "REPLACE", fnSetLib}},
				{args: []string{"FUNCTION", "LOAD", fnGetLib}},
				{args: []string{"FUNCTION", "LOAD", fnMiscLib}},
				{args: []string{"FUNCTION", "LOAD", "foo", fnSetLib}},
				{args: []string{"FUNCTION", "LOAD", "no shebang"}},
				{args: []string{"FUNCTION", "LOAD", "#!lua name=x"}},
				{args: []string{"FUNCTION", "LOAD", "#!lua\nreturn"}},
				{args: []string{"FUNCTION", "LOAD", "#!lua name=a name=b\nreturn"}},
				{args: []string{"FUNCTION", "LOAD", "#!lua name=a foo=bar\nreturn"}},
				{args: []string{"FUNCTION", "LOAD", "#!lua name=a-b\nreturn"}},
				{args: []string{"FUNCTION", "LOAD", "#!js name=a\nreturn"}},
				{args: []string{"FUNCTION", "LOAD", fnLib("local s = string.len('x')")}},
				{args: []string{"FUNCTION", "LOAD", fnLib("redis.call('ping')")}},
				{args: []string{"FUNCTION", "LOAD", fnLib("x = 1")}},
				{args: []string{"FUNCTION", "LOAD", fnLib("redis.log(redis.LOG_NOTICE, 'loading')")}},
				{args: []string{"FUNCTION", "LOAD", fnLib("redis.register_function('f', function() end)\nredis.register_function('f', function() end)")}},
				{args: []string{"FUNCTION", "LOAD", fnLib("redis.register_function('f-1', function() end)")}},
				{args: []string{"FUNCTION", "LOAD", fnLib("redis.register_function()")}},
				{args: []string{"FUNCTION", "LOAD", fnLib("redis.register_function('f')")}},
				{args: []string{"FUNCTION", "LOAD", fnLib("redis.register_function('f', 'g')")}},
				{args: []string{"FUNCTION", "LOAD", fnLib("redis.register_function({function_name='f'})")}},
				{args: []string{"FUNCTION", "LOAD", fnLib("redis.register_function({callback=function() end})")}},
				{args: []string{"FUNCTION", "LOAD", fnLib("redis.register_function({function_name='f', callback=function() end, flags={'nope'}})")}},
				{args: []string{"FUNCTION", "LOAD", fnLib("redis.register_function({function_name='f', callback=function() end, other=1})")}},
				{args: []string{"FUNCTION", "LOAD", fnLib("redis.register_function('SET2', function() end)")}},
				// misc's functions come in Redis's hash order: not listed.
				{args: []string{"FUNCTION", "LIST", "LIBRARYNAME", "*lib"}, mode: unordered},
				{args: []string{"FUNCTION", "LIST", "LIBRARYNAME", "get*", "WITHCODE"}},
				{args: []string{"FUNCTION", "LIST", "libraryname", "SET*"}},
				{args: []string{"FUNCTION", "LIST", "WITHCODE", "WITHCODE"}},
				{args: []string{"FUNCTION", "LIST", "LIBRARYNAME"}},
				{args: []string{"FUNCTION", "LIST", "bogus"}},
				{args: []string{"FUNCTION", "STATS"}},
				{args: []string{"FCALL", "set2", "1", "{f}k", "v1"}},
				{args: []string{"FCALL", "GET2", "1", "{f}k"}},
				{args: []string{"FCALL_RO", "get2", "1", "{f}k"}},
				{args: []string{"FCALL_RO", "set2", "1", "{f}k", "v2"}},
				{args: []string{"FCALL", "sneaky", "1", "{f}k"}},
				{args: []string{"FCALL", "echo", "2", "{f}a", "{f}b", "x", "y", "z"}},
				{args: []string{"FCALL", "echo", "0"}},
				{args: []string{"FCALL", "fail", "0"}},
				{args: []string{"FCALL", "status", "0"}},
				{args: []string{"FCALL", "nokeys", "0"}},
				{args: []string{"HSET", "{f}h", "a", "1"}},
				{args: []string{"FCALL", "maps", "1", "{f}h"}},
				{args: []string{"FCALL", "nosuch", "0"}},
				{args: []string{"FCALL", "set2", "x", "{f}k"}},
				{args: []string{"FCALL", "set2", "-1", "{f}k"}},
				{args: []string{"FCALL", "set2", "5", "{f}k"}},
				{args: []string{"FCALL", "set2"}},
				{args: []string{"FUNCTION", "DELETE", "GETLIB"}},
				{args: []string{"FUNCTION", "DELETE", "getlib"}},
				{args: []string{"FUNCTION", "DELETE", "getlib"}},
				{args: []string{"FCALL", "get2", "1", "{f}k"}},
				{args: []string{"FUNCTION", "DELETE"}},
				{args: []string{"FUNCTION", "FLUSH", "bad"}},
				{args: []string{"FUNCTION", "FLUSH", "SYNC", "x"}},
				{args: []string{"FUNCTION", "RESTORE", "x", "bad"}},
				{args: []string{"FUNCTION", "RESTORE", "garbage"}},
				{args: []string{"FUNCTION", "RESTORE", "a", "b", "c"}},
				{args: []string{"FUNCTION", "KILL"}},
				{args: []string{"FUNCTION", "DUMP", "x"}},
				{args: []string{"FUNCTION", "NOPE"}},
				{args: []string{"FUNCTION", "FLUSH", "ASYNC"}},
				{args: []string{"FUNCTION", "LIST"}},
				{args: []string{"FUNCTION", "STATS"}},
			}
			compareOps(t, rc, sc, ops)
		})
	}
}

// TestFunctionsDumpBothWays restores redis-server's FUNCTION DUMP (its long
// library LZF-compressed) into slotraft and slotraft's into redis-server.
func TestFunctionsDumpBothWays(t *testing.T) {
	rc, sc := connect(t, startRedis(t), "3"), connect(t, startSlotraft(t), "3")
	long := "#!lua name=longlib\n-- " + strings.Repeat("padding ", 40) + "\n" +
		"redis.register_function('incrby2', function(keys, args) return redis.call('incrby', keys[1], args[1]) end)"
	must := func(c *client, args ...string) reply {
		t.Helper()
		r, err := c.do(args...)
		if err != nil || r.typ == '-' {
			t.Fatalf("%.60q: %v %v", args, r, err)
		}
		return r
	}
	for _, code := range []string{long, fnGetLib} {
		must(rc, "FUNCTION", "LOAD", code)
	}
	dump := must(rc, "FUNCTION", "DUMP")
	must(sc, "FUNCTION", "RESTORE", dump.str, "FLUSH")
	if r := must(sc, "FCALL", "incrby2", "1", "{d}n", "5"); r.String() != ":5" {
		t.Errorf("FCALL in slotraft after RESTORE: %s", r)
	}
	list := func(c *client) string { return normalize(must(c, "FUNCTION", "LIST", "WITHCODE"), unordered) }
	if w, g := list(rc), list(sc); w != g {
		t.Errorf("FUNCTION LIST WITHCODE after RESTORE:\n  redis:    %s\n  slotraft: %s", w, g)
	}

	must(sc, "FUNCTION", "LOAD", fnSetLib)
	back := must(sc, "FUNCTION", "DUMP")
	must(rc, "FUNCTION", "RESTORE", back.str, "FLUSH")
	if r := must(rc, "FCALL", "set2", "1", "{d}k", "v"); r.String() != "+OK" {
		t.Errorf("FCALL in redis-server after RESTORE: %s", r)
	}
	if w, g := list(rc), list(sc); w != g {
		t.Errorf("FUNCTION LIST WITHCODE after RESTORE into redis-server:\n  redis:    %s\n  slotraft: %s", w, g)
	}
	// APPEND of libraries both already hold: a collision (which library
	// is named first follows each server's order).
	for _, c := range []*client{rc, sc} {
		r, err := c.do("FUNCTION", "RESTORE", back.str)
		if err != nil || r.typ != '-' || !strings.HasPrefix(r.str, "ERR Library ") || !strings.HasSuffix(r.str, " already exists") {
			t.Errorf("RESTORE APPEND collision: %s %v", r, err)
		}
	}
}

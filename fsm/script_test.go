package fsm

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/resp"
)

// scriptEval applies EVAL (or any command) given as separate arguments.
func (h *harness) scriptDo(args ...string) string {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return show(h.apply(b))
}

func (h *harness) scriptRead(args ...string) string {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return show(replyOf(h.s.Read(h.now, Lookup(b[0]), b)))
}

func scriptSHA(s string) string { return SHA1Hex([]byte(s)) }

type scriptCase struct {
	script string
	args   []string // numkeys, keys, args
	want   string   // exact, or prefix when it ends with "*"
}

func scriptCheck(t *testing.T, h *harness, c scriptCase, got string) {
	t.Helper()
	want := strings.ReplaceAll(c.want, "$SHA", scriptSHA(c.script))
	if strings.HasSuffix(want, "*") {
		if !strings.HasPrefix(got, strings.TrimSuffix(want, "*")) {
			t.Errorf("%q: got %s, want prefix %s", c.script, got, want)
		}
		return
	}
	if got != want {
		t.Errorf("%q: got %s, want %s", c.script, got, want)
	}
}

func TestScriptConversions(t *testing.T) {
	cases := []scriptCase{
		// Lua → reply.
		{"return 1", []string{"0"}, ":1"},
		{"return 3.99", []string{"0"}, ":3"},
		{"return -3.99", []string{"0"}, ":-3"},
		{"return 'x'", []string{"0"}, `"x"`},
		{"return true", []string{"0"}, ":1"},
		{"return false", []string{"0"}, "nil"},
		{"return nil", []string{"0"}, "nil"},
		{"return {1,2,3,'x',nil,4}", []string{"0"}, `[:1 :2 :3 "x"]`},
		{"return {true,false,1}", []string{"0"}, `[:1 nil :1]`},
		{"return {1,{2,{3}}}", []string{"0"}, `[:1 [:2 [:3]]]`},
		{"return redis.status_reply('FINE')", []string{"0"}, "+FINE"},
		{"return {ok='a\\r\\nb'}", []string{"0"}, "+a  b"},
		{"return redis.error_reply('boom')", []string{"0"}, "-ERR boom"},
		{"return redis.error_reply('MY boom')", []string{"0"}, "-MY boom"},
		{"return {err='boom'}", []string{"0"}, "-boom"},
		{"return {err='MY boom'}", []string{"0"}, "-MY boom"},
		{"return {1, {err='E x'}, 2}", []string{"0"}, "[:1 -E x :2]"},
		{"return KEYS", []string{"2", "{t}a", "{t}b", "x"}, `["{t}a" "{t}b"]`},
		{"return ARGV", []string{"1", "k", "x", "y"}, `["x" "y"]`},
		{"return #ARGV", []string{"0"}, `:0`},
		{"return redis.sha1hex('')", []string{"0"}, `"da39a3ee5e6b4b0d3255bfef95601890afd80709"`},
		{"return redis.REDIS_VERSION", []string{"0"}, `"7.2.0"`},
		{"return redis.REDIS_VERSION_NUM", []string{"0"}, `:459264`},
		{"return redis.LOG_WARNING", []string{"0"}, `:3`},
		// reply → Lua.
		{"return redis.call('get', KEYS[1])", []string{"1", "nokey"}, "nil"},
		{"return type(redis.call('get', KEYS[1]))", []string{"1", "nokey"}, `"boolean"`},
		{"redis.call('set', KEYS[1], 'v'); return redis.call('get', KEYS[1])", []string{"1", "k"}, `"v"`},
		{"return redis.call('set', KEYS[1], 'v')", []string{"1", "k"}, "+OK"},
		{"return redis.call('set', KEYS[1], 'v')['ok']", []string{"1", "k"}, `"OK"`},
		{"return redis.call('incrby', KEYS[1], 5)", []string{"1", "n"}, ":5"},
		{"return redis.call('set', KEYS[1], 3.5)", []string{"1", "f"}, "+OK"},
		{"redis.call('set', KEYS[1], 0.1); return redis.call('get', KEYS[1])", []string{"1", "f"}, `"0.10000000000000001"`},
		{"redis.call('rpush', KEYS[1], 'a', 'b'); return redis.call('lrange', KEYS[1], 0, -1)", []string{"1", "l"}, `["a" "b"]`},
		{"return redis.pcall('incr', KEYS[1])['err']", []string{"1", "str"}, `"ERR value is not an integer or out of range"`},
		{"return redis.pcall('incr', KEYS[1])", []string{"1", "str"}, `-ERR value is not an integer or out of range`},
		{"local ok, e = pcall(redis.call, 'incr', KEYS[1]); return {tostring(ok), e}", []string{"1", "str"}, `["false" "ERR value is not an integer or out of range"]`},
		{"redis.call('hset', KEYS[1], 'f', 'v'); return redis.call('hgetall', KEYS[1])", []string{"1", "h"}, `["f" "v"]`},
		{"redis.call('zadd', KEYS[1], 1.5, 'm'); return redis.call('zscore', KEYS[1], 'm')", []string{"1", "z"}, `"1.5"`},
		// RESP3 inside the script.
		{"redis.setresp(3); redis.call('hset', KEYS[1], 'f', 'v'); return redis.call('hgetall', KEYS[1])['map']['f']", []string{"1", "h"}, `"v"`},
		{"redis.setresp(3); redis.call('hset', KEYS[1], 'f', 'v'); return redis.call('hgetall', KEYS[1])", []string{"1", "h"}, `{"f" "v"}`},
		{"redis.setresp(3); redis.call('zadd', KEYS[1], 1.5, 'm'); return redis.call('zscore', KEYS[1], 'm')", []string{"1", "z"}, `,1.5`},
		{"redis.setresp(3); return redis.call('zscore', KEYS[1], 'm')['double']", []string{"1", "z"}, `:1`},
		{"redis.setresp(3); return tostring(redis.call('get', KEYS[1]) == nil)", []string{"1", "nokey"}, `"true"`},
		{"redis.setresp(3); return {true, false}", []string{"0"}, `[?{10 [] 1 0 []} ?{10 [] 0 0 []}]`},
		{"return {double=3.5}", []string{"0"}, `,3.5`},
		{"return {map={a=1}}", []string{"0"}, `{"a" :1}`},
		{"return {set={a=true}}", []string{"0"}, `["a"]`},
		{"redis.setresp(4)", []string{"0"}, "-ERR RESP version must be 2 or 3. script: $SHA, on @user_script:1."},
	}
	for _, c := range cases {
		h := newHarness(t)
		h.scriptDo("set", "str", "abc")
		h.scriptDo("set", "{t}c", "abc")
		h.scriptDo("zadd", "z", "1", "m")
		got := h.scriptDo(append([]string{"eval", c.script}, c.args...)...)
		scriptCheck(t, h, c, got)
	}
}

func TestScriptErrors(t *testing.T) {
	cases := []scriptCase{
		{"return redis.call('incr', KEYS[1])", []string{"1", "str"}, "-ERR value is not an integer or out of range script: $SHA, on @user_script:1."},
		{"\n\nreturn redis.call('incr', KEYS[1])", []string{"1", "str"}, "-ERR value is not an integer or out of range script: $SHA, on @user_script:3."},
		{"return y", []string{"0"}, "-ERR user_script:1: Script attempted to access nonexistent global variable 'y' script: $SHA, on @user_script:1."},
		{"y = 1", []string{"0"}, "-ERR user_script:1: Attempt to modify a readonly table script: $SHA, on @user_script:1."},
		{"error('boom')", []string{"0"}, "-ERR user_script:1: boom script: $SHA, on @user_script:1."},
		{"error({err='MY boom'})", []string{"0"}, "-MY boom script: $SHA, on @user_script:1."},
		{"return redis.call('nosuch')", []string{"0"}, "-ERR Unknown Redis command called from script script: $SHA, on @user_script:1."},
		{"return redis.call('get')", []string{"0"}, "-ERR Wrong number of args calling Redis command from script script: $SHA, on @user_script:1."},
		{"return redis.call()", []string{"0"}, "-ERR Please specify at least one argument for this redis lib call script: $SHA, on @user_script:1."},
		{"return redis.call({})", []string{"0"}, "-ERR Lua redis lib command arguments must be strings or integers script: $SHA, on @user_script:1."},
		// Redis 7.2 lets scripts call blocking commands: they do not block.
		{"return redis.call('bzpopmin', KEYS[1], 0)", []string{"1", "z"}, `["z" "m" "1"]`},
		{"return redis.call('bzpopmax', KEYS[1], 0)", []string{"1", "empty"}, "nil"},
		{"return redis.call('blpop', KEYS[1], 0)", []string{"1", "empty"}, "nil"},
		{"return redis.call('flushall')", []string{"0"}, "-ERR This Redis command is not allowed from script script: $SHA, on @user_script:1."},
		{"return redis.call('get', 'other')", []string{"1", "k"}, "-ERR Script attempted to access keys that do not hash to the same slot script: $SHA, on @user_script:1."},
		{"return redis.call('get', '{k}other')", []string{"1", "k"}, "nil"},
		{"return redis.call('get', 'k')", []string{"0"}, "-ERR Script attempted to access a non local key in a cluster node script: $SHA, on @user_script:1."},
		{"return 1 +", []string{"0"}, "-ERR Error compiling script (new function): user_script*"},
		{"return os.time()", []string{"0"}, "-ERR user_script:1: Script attempted to access nonexistent global variable 'os' script: $SHA, on @user_script:1."},
		{"return io", []string{"0"}, "-ERR user_script:1: Script attempted to access nonexistent global variable 'io' script: $SHA, on @user_script:1."},
		{"return require('x')", []string{"0"}, "-ERR user_script:1: Script attempted to access nonexistent global variable 'require' script: $SHA, on @user_script:1."},
		{"return dofile('/etc/passwd')", []string{"0"}, "-ERR user_script:1: Script attempted to access nonexistent global variable 'dofile' script: $SHA, on @user_script:1."},
		{"return loadstring('return 7')()", []string{"0"}, ":7"},
		{"return redis.call('ping')", []string{"0"}, "+PONG"},
		{"return 1", []string{"-1"}, "-ERR Number of keys can't be negative"},
		{"return 1", []string{"3", "a"}, "-ERR Number of keys can't be greater than number of args"},
		{"return 1", []string{"abc"}, "-ERR value is not an integer or out of range"},
		{"#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], 'x')", []string{"1", "k"}, "-ERR Write commands are not allowed from read-only scripts. script: $SHA, on @user_script:2."},
		{"#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])", []string{"1", "str"}, `"abc"`},
		{"#!python\nreturn 1", []string{"0"}, "-ERR Unexpected engine in script shebang: #!python"},
	}
	for _, c := range cases {
		h := newHarness(t)
		h.scriptDo("set", "str", "abc")
		h.scriptDo("zadd", "z", "1", "m")
		got := h.scriptDo(append([]string{"eval", c.script}, c.args...)...)
		scriptCheck(t, h, c, got)
	}
}

func TestScriptCacheAndEvalsha(t *testing.T) {
	h := newHarness(t)
	body := "return redis.call('incr', KEYS[1])"
	sha := scriptSHA(body)
	h.run([]step{
		{"evalsha " + sha + " 1 n", "-NOSCRIPT No matching script. Please use EVAL."},
		{"evalsha " + strings.Repeat("f", 40) + " 0", "-NOSCRIPT No matching script. Please use EVAL."},
		{"script exists " + sha, "[:0]"},
	})
	if got := h.scriptDo("script", "load", body); got != `"`+sha+`"` {
		t.Fatalf("script load: %s", got)
	}
	h.run([]step{
		{"script exists " + sha + " " + strings.ToUpper(sha) + " abc", "[:1 :1 :0]"},
		{"evalsha " + sha + " 1 n", ":1"},
		{"evalsha " + strings.ToUpper(sha) + " 1 n", ":2"},
		{"read evalsha_ro " + sha + " 1 n", "-ERR Write commands are not allowed from read-only scripts. script: " + sha + ", on @user_script:1."},
		{"script flush", "+OK"},
		{"script exists " + sha, "[:0]"},
		{"evalsha " + sha + " 1 n", "-NOSCRIPT No matching script. Please use EVAL."},
		{"script flush async", "+OK"},
		{"script flush x", "-ERR SCRIPT FLUSH only support SYNC|ASYNC option"},
		{"script nosuch", "-ERR unknown subcommand 'nosuch'. Try SCRIPT HELP."},
	})
	// EVAL caches its script.
	h.scriptDo("eval", body, "1", "n")
	h.run([]step{{"script exists " + sha, "[:1]"}, {"evalsha " + sha + " 1 n", ":4"}})
	// A script that does not compile is not cached.
	if got := h.scriptDo("script", "load", "return +"); !strings.HasPrefix(got, "-ERR Error compiling script") {
		t.Fatalf("load bad script: %s", got)
	}
	if h.s.ScriptCount() != 1 {
		t.Fatalf("cache has %d scripts, want 1", h.s.ScriptCount())
	}
	// EVAL_RO reads, refuses writes and does not cache.
	ro := "return redis.call('get', KEYS[1])"
	if got := h.scriptRead("eval_ro", ro, "1", "n"); got != `"4"` {
		t.Fatalf("eval_ro: %s", got)
	}
	if h.s.HasScript(scriptSHA(ro)) {
		t.Fatal("EVAL_RO cached its script")
	}
}

func TestScriptBudget(t *testing.T) {
	h := newHarness(t)
	h.scriptBudget(100_000)
	want := "-ERR Script exceeded the execution budget of 100000 Lua instructions script: "
	for _, s := range []string{
		"while true do end",
		"local i = 0 while true do i = i + 1 end",
		// pcall cannot catch the budget: the next instruction raises again.
		"while true do pcall(function() while true do end end) end",
		"redis.call('set', KEYS[1], 'before'); while true do end",
		"local function f() return f() end return f()",
	} {
		got := h.scriptDo("eval", s, "1", "k")
		if !strings.HasPrefix(got, want) && !strings.Contains(got, "stack overflow") {
			t.Errorf("%q: %s", s, got)
		}
	}
	// Writes before the budget ran out stay (as any script error in Redis).
	if got := h.do("get k"); got != `"before"` {
		t.Errorf("get k = %s", got)
	}
	// A script within the budget runs.
	if got := h.scriptDo("eval", "local n = 0 for i = 1, 1000 do n = n + i end return n", "0"); got != ":500500" {
		t.Errorf("loop: %s", got)
	}
}

func TestScriptDeterminism(t *testing.T) {
	script := `
local out = {}
for i = 1, 5 do out[#out+1] = math.random(1000) end
out[#out+1] = tostring(math.random())
out[#out+1] = tostring({})
out[#out+1] = string.format('%s', {})
local t = {}
for i = 1, 50 do t['k' .. i] = i end
local keys = {}
for k in pairs(t) do keys[#keys+1] = k end
out[#out+1] = table.concat(keys, ',')
out[#out+1] = cjson.encode({a=1, b={1,2}, c='x'})
redis.call('set', KEYS[1], table.concat(out, '|'))
redis.call('zadd', KEYS[2], math.random(100), 'm' .. math.random(100))
return out`
	run := func() (string, string, string) {
		h := newHarness(t)
		r := h.scriptDo("eval", script, "2", "{x}a", "{x}z")
		return r, h.do("get {x}a"), h.do("zrange {x}z 0 -1 withscores")
	}
	r1, a1, z1 := run()
	r2, a2, z2 := run()
	if r1 != r2 || a1 != a2 || z1 != z2 {
		t.Fatalf("replicas differ:\n%s\n%s\n%s\n%s", r1, r2, a1, a2)
	}
	if strings.Contains(a1, "0xc0") {
		t.Fatalf("address in output: %s", a1)
	}
	// Another seed gives other numbers.
	h := newHarness(t)
	h.idx = 1000
	if r3 := h.scriptDo("eval", script, "2", "{x}a", "{x}z"); r3 == r1 {
		t.Fatalf("seed ignored")
	}
}

func TestScriptSnapshotRoundTrip(t *testing.T) {
	h := newHarness(t)
	bodies := []string{"return 1", "return redis.call('get', KEYS[1])", "return ARGV[1]"}
	for _, b := range bodies {
		h.scriptDo("script", "load", b)
	}
	h.scriptDo("set", "k", "v")
	snap := h.s.Snapshot()
	// A script loaded after the snapshot must not be in it.
	h.scriptDo("script", "load", "return 'late'")
	var buf bytes.Buffer
	if _, err := snap.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	s2 := restoredFrom(t, buf.Bytes())
	h2 := &harness{t: t, s: s2, now: t0, idx: 100}
	if n := s2.ScriptCount(); n != len(bodies) {
		t.Fatalf("restored %d scripts, want %d", n, len(bodies))
	}
	if got := h2.scriptDo("evalsha", scriptSHA(bodies[1]), "1", "k"); got != `"v"` {
		t.Fatalf("evalsha after restore: %s", got)
	}
	if s2.HasScript(scriptSHA("return 'late'")) {
		t.Fatal("snapshot holds a script loaded after it")
	}
}

func TestScriptSnapshotReadsVersion2(t *testing.T) {
	h := newHarness(t)
	h.scriptDo("set", "k", "v")
	// Rewrite as version 2: drop the (empty) scripts, functions,
	// settings and migration sections.
	b := snapshotOf(t, h.s)
	b[len(snapMagic)] = 2
	off := snapHeaderLen
	wl := int(uint32(b[off])<<24 | uint32(b[off+1])<<16 | uint32(b[off+2])<<8 | uint32(b[off+3]))
	off += 4 + wl + 4
	later := len(appendScriptsSection(nil, nil)) + len(appendFunctionsSection(nil, newFunctionSet())) +
		len(appendSettingsSection(nil, nil)) + len(appendChecked(nil, NewState().migrationSection()))
	v2 := append(append([]byte{}, b[:off]...), b[off+later:]...)
	h2 := &harness{t: t, s: restoredFrom(t, v2), now: t0, idx: 10}
	if got := h2.do("get k"); got != `"v"` {
		t.Fatalf("get after v2 restore: %s", got)
	}
}

func TestScriptReadOnlyPath(t *testing.T) {
	h := newHarness(t)
	h.do("set k 1")
	for _, c := range []struct{ script, want string }{
		{"return redis.call('get', KEYS[1])", `"1"`},
		{"return redis.call('incr', KEYS[1])", "-ERR Write commands are not allowed from read-only scripts.*"},
		{"return redis.pcall('set', KEYS[1], 2)['err']", `"ERR Write commands are not allowed from read-only scripts."`},
	} {
		got := h.scriptRead("eval_ro", c.script, "1", "k")
		scriptCheck(t, h, scriptCase{script: c.script, want: c.want}, got)
	}
	if got := h.do("get k"); got != `"1"` {
		t.Fatalf("read-only script wrote: %s", got)
	}
}

func TestScriptParseNumKeys(t *testing.T) {
	for _, c := range []struct {
		args []string
		n    int
		err  string
	}{
		{[]string{"eval", "s", "0"}, 0, ""},
		{[]string{"eval", "s", "2", "a", "b", "c"}, 2, ""},
		{[]string{"eval", "s", "3", "a", "b"}, 0, "ERR Number of keys can't be greater than number of args"},
		{[]string{"eval", "s", "-1"}, 0, "ERR Number of keys can't be negative"},
		{[]string{"eval", "s", "x"}, 0, "ERR value is not an integer or out of range"},
		{[]string{"eval", "s", "1.0", "a"}, 0, "ERR value is not an integer or out of range"},
	} {
		b := make([][]byte, len(c.args))
		for i, a := range c.args {
			b[i] = []byte(a)
		}
		n, err := ParseNumKeys(b)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if n != c.n || gotErr != c.err {
			t.Errorf("%v: %d %q, want %d %q", c.args, n, gotErr, c.n, c.err)
		}
		if idx := EvalKeys(b); len(idx) != c.n {
			t.Errorf("%v: keys %v", c.args, idx)
		}
	}
}

func FuzzScriptArgs(f *testing.F) {
	f.Add("return {KEYS[1], ARGV[1]}", "1", "k", "a")
	f.Add("return 1", "-1", "", "")
	f.Add("return redis.call('set', KEYS[1], ARGV[1])", "1", "{a}b", "v")
	f.Add("return 1", "99999999999999999999", "x", "y")
	f.Fuzz(func(t *testing.T, script, numkeys, a, b string) {
		args := [][]byte{[]byte("eval"), []byte(script), []byte(numkeys), []byte(a), []byte(b)}
		n, err := ParseNumKeys(args)
		idx := EvalKeys(args)
		if err != nil {
			if idx != nil {
				t.Fatalf("keys %v with error %v", idx, err)
			}
		} else if n < 0 || n > 2 || len(idx) != n {
			t.Fatalf("n=%d keys=%v", n, idx)
		}
		s1, s2 := NewState(), NewState()
		s1.Apply(1, ScriptBudgetEntry(10_000))
		s2.Apply(1, ScriptBudgetEntry(10_000))
		e := &Entry{Type: EntryCommands, Now: t0, Seed: 7, Cmds: [][][]byte{args}}
		r1, r2 := repliesOf(s1.Apply(2, e)), repliesOf(s2.Apply(2, e))
		if show(r1[0]) != show(r2[0]) {
			t.Fatalf("replies differ: %s / %s", show(r1[0]), show(r2[0]))
		}
		if err != nil && (r1[0].Kind != resp.KindError || string(r1[0].Str) != err.Error()) {
			t.Fatalf("reply %s, want %v", show(r1[0]), err)
		}
	})
}

var _ = fmt.Sprint

// BenchmarkScriptEvalsha applies EVALSHA of the lock-release script
// (GET + DEL) against plain SET, each as one log entry on one State.
func BenchmarkScriptEvalsha(b *testing.B) {
	body := `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`
	sha := SHA1Hex([]byte(body))
	for _, bc := range []struct {
		name string
		cmd  func(i int) [][]byte
	}{
		{"set", func(i int) [][]byte { return [][]byte{[]byte("set"), []byte("lock"), []byte("tok")} }},
		{"evalsha-unlock", func(i int) [][]byte {
			return [][]byte{[]byte("evalsha"), []byte(sha), []byte("1"), []byte("lock"), []byte("tok")}
		}},
		{"eval-return1", func(i int) [][]byte { return [][]byte{[]byte("eval"), []byte("return 1"), []byte("0")} }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := NewState()
			repliesOf(s.Apply(1, &Entry{Type: EntryCommands, Now: t0, Seed: 1, Cmds: [][][]byte{{[]byte("script"), []byte("load"), []byte(body)}}}))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				repliesOf(s.Apply(uint64(i+2), &Entry{Type: EntryCommands, Now: t0, Seed: uint64(i), Cmds: [][][]byte{bc.cmd(i)}}))
			}
		})
	}
}

// TestScriptStatesAreFresh: states are built ahead (lua_prebuilt.go) but
// each serves one run, so what a script does to its libraries or tostring
// numbering never reaches the next run, wherever its state came from.
func TestScriptStatesAreFresh(t *testing.T) {
	h := newHarness(t)
	pollute := `string.len = function() return 99 end; math.floor = nil; cjson.x = 1; return tostring({})`
	first := h.scriptDo("eval", pollute, "0")
	for i := range 2 * prebuiltStates { // past the prebuilt ones into newly built ones
		if got := h.scriptDo("eval", `return {string.len('ab'), math.floor(2.5), tostring(cjson.x)}`, "0"); got != `[:2 :2 "nil"]` {
			t.Fatalf("run %d after a polluting script: %s, want [:2 :2 \"nil\"]", i, got)
		}
	}
	if again := h.scriptDo("eval", pollute, "0"); again != first {
		t.Fatalf("tostring numbering differs between runs: %s then %s", first, again)
	}
}

package fsm

import "testing"

// TestScriptReadonlyTables: the globals and every library table are
// read-only with Redis 7.2's errors (script_lua.c, the VM's readonly
// tables); reading through them, iterating them and the tables a script
// makes itself still work.
func TestScriptReadonlyTables(t *testing.T) {
	const ro = "-ERR user_script:1: Attempt to modify a readonly table script: $SHA, on @user_script:1."
	const roRaw = "-ERR Attempt to modify a readonly table script: $SHA, on @user_script:1."
	cases := []scriptCase{
		{"x = 1", []string{"0"}, ro},
		{"redis.call = nil", []string{"0"}, ro},
		{"redis = function() return 1 end", []string{"0"}, ro},
		{"_G = {}", []string{"0"}, ro},
		{"cjson.encode = 1", []string{"0"}, ro},
		{"cmsgpack.pack = 1", []string{"0"}, ro},
		{"bit.lshift = 1", []string{"0"}, ro},
		{"struct.pack = 1", []string{"0"}, ro},
		{"string.x = 1", []string{"0"}, ro},
		{"math.x = 1", []string{"0"}, ro},
		{"table.x = 1", []string{"0"}, ro},
		{"_G.x = 1", []string{"0"}, ro},
		{"_G.string = 1", []string{"0"}, ro},
		{"_G._G.string.upper = 1", []string{"0"}, ro},
		{"getmetatable('').__index = 1", []string{"0"}, ro},
		{"getmetatable('').__index.upper = 1", []string{"0"}, ro},
		{"getmetatable(_G).__index = {}", []string{"0"}, ro},
		{"getfenv(redis.call).x = 1", []string{"0"}, ro},
		{"getfenv(0).x = 1", []string{"0"}, ro},
		{"setmetatable(_G, nil)", []string{"0"}, roRaw},
		{"setmetatable(string, {})", []string{"0"}, roRaw},
		{"rawset(_G, 'x', 1)", []string{"0"}, roRaw},
		{"rawset(string, 'x', 1)", []string{"0"}, roRaw},
		{"table.insert(string, 1)", []string{"0"}, roRaw},
		{"table.sort(_G)", []string{"0"}, roRaw},
		{"local f, s = pairs(string) rawset(s, 'x', 1)", []string{"0"}, roRaw},
		{"return loadstring('y = 1')()", []string{"0"}, "-ERR <string>:1: Attempt to modify a readonly table script: $SHA, on @user_script:1."},
		{"return x", []string{"0"}, "-ERR user_script:1: Script attempted to access nonexistent global variable 'x' script: $SHA, on @user_script:1."},
		{"return _G.x", []string{"0"}, "-ERR user_script:1: Script attempted to access nonexistent global variable 'x' script: $SHA, on @user_script:1."},
		{"return {pcall(function() cjson.encode = 1 end)}", []string{"0"}, `[nil "user_script:1: Attempt to modify a readonly table"]`},
		// Reading still works, raw or not, and so does iterating.
		{"return string.upper('a') .. ('b'):upper()", []string{"0"}, `"AB"`},
		{"return type(rawget(_G, 'string'))", []string{"0"}, `"table"`},
		{"return rawget(string, 'upper') == string.upper", []string{"0"}, ":1"},
		{"local n = 0 for k, v in pairs(bit) do n = n + 1 end return n", []string{"0"}, ":12"},
		{"local n = 0 for k, v in pairs(_G) do if k == 'redis' then n = n + 1 end end return n", []string{"0"}, ":1"},
		{"return next(struct) ~= nil", []string{"0"}, ":1"},
		{"return table.concat({'a', 'b'}, '-')", []string{"0"}, `"a-b"`},
		{"return getmetatable(string)", []string{"0"}, "nil"},
		{"return type(getmetatable(_G))", []string{"0"}, `"table"`},
		// A script's own tables, KEYS and ARGV are its own.
		{"local t = {} t.x = 1 rawset(t, 'y', 2) setmetatable(t, {}) table.insert(t, 3) return {t.x, t.y, t[1]}", []string{"0"}, "[:1 :2 :3]"},
		{"KEYS[1] = 'z' table.insert(ARGV, 'w') return {KEYS[1], ARGV[2]}", []string{"1", "k", "a"}, `["z" "w"]`},
		// Globals as Redis 7.2 has them.
		{"return {type(loadstring), type(getfenv), type(setfenv), type(unpack), type(gcinfo), type(_VERSION)}", []string{"0"},
			`["function" "function" "function" "function" "function" "string"]`},
		{"return print", []string{"0"}, "-ERR user_script:1: Script attempted to access nonexistent global variable 'print' script: $SHA, on @user_script:1."},
		{"return loadfile", []string{"0"}, "-ERR user_script:1: Script attempted to access nonexistent global variable 'loadfile' script: $SHA, on @user_script:1."},
		// unpack's limit is Lua 5.1's C stack (LUAI_MAXCSTACK, 8000).
		{"return #{unpack({}, 1, 1000)}", []string{"0"}, ":0"},
		{"return select('#', unpack({}, 1, 7997))", []string{"0"}, ":7997"},
		{"return #{unpack({}, 1, 7998)}", []string{"0"}, "-ERR user_script:1: too many results to unpack script: $SHA, on @user_script:1."},
		{"return #{unpack({}, 1, 1e9)}", []string{"0"}, "-ERR user_script:1: too many results to unpack script: $SHA, on @user_script:1."},
		{"return {unpack({1, 2, 3}, 2)}", []string{"0"}, "[:2 :3]"},
		{"return {unpack({1, 2, 3}, 3, 2)}", []string{"0"}, "[]"},
	}
	evalCases(t, cases)
}

// TestFunctionReadonlyTables: a function's callback sees the same
// protected globals as EVAL.
func TestFunctionReadonlyTables(t *testing.T) {
	h := newHarness(t)
	h.fnRun([]fnStep{
		{[]string{"FUNCTION", "LOAD", lib("ro", reg("f", "string.x = 1"), reg("g", "return string.upper('a')"))}, `"ro"`},
		{[]string{"FCALL", "f", "0"}, "-ERR user_function:2: Attempt to modify a readonly table script: f, on @user_function:2."},
		{[]string{"FCALL", "g", "0"}, `"A"`},
	})
}

// TestScriptShebang: EVAL's "#!lua" line and its flags, with Redis 7.2's
// errors (eval.c evalExtractShebangFlags, script.c scriptPrepareForRun).
func TestScriptShebang(t *testing.T) {
	cases := []scriptCase{
		{"#!lua\nreturn 1", []string{"0"}, ":1"},
		{"#!lua", []string{"0"}, "-ERR Invalid script shebang"},
		{"#!js\nreturn 1", []string{"0"}, "-ERR Unexpected engine in script shebang: #!js"},
		{"#!\nreturn 1", []string{"0"}, "-ERR Unexpected engine in script shebang: #!"},
		{"#!lua name=x\nreturn 1", []string{"0"}, "-ERR Unknown lua shebang option: name=x"},
		{"#!lua flags=bogus\nreturn 1", []string{"0"}, "-ERR Unexpected flag in script shebang: bogus"},
		{"#!lua flags=no-writes,\nreturn 1", []string{"0"}, "-ERR Unexpected flag in script shebang: "},
		{"#!lua flags=\nreturn 1", []string{"0"}, ":1"},
		{"#!lua flags=no-writes,allow-oom,allow-stale,allow-cross-slot-keys\nreturn 1", []string{"0"}, ":1"},
		{"#!lua flags=no-cluster\nreturn 1", []string{"0"}, "-ERR Can not run script on cluster, 'no-cluster' flag is set."},
		{"#!lua\nreturn x", []string{"0"}, "-ERR user_script:2: Script attempted to access nonexistent global variable 'x' script: $SHA, on @user_script:2."},
		{"#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], 'v')", []string{"1", "k"},
			"-ERR Write commands are not allowed from read-only scripts. script: $SHA, on @user_script:2."},
		{"#!lua\nreturn redis.call('set', KEYS[1], 'v')", []string{"1", "k"}, "+OK"},
	}
	evalCases(t, cases)
	ro := []scriptCase{
		{"#!lua\nreturn 1", []string{"0"}, "-ERR Can not execute a script with write flag using *_ro command."},
		{"#!lua flags=no-writes\nreturn 1", []string{"0"}, ":1"},
		{"return 1", []string{"0"}, ":1"},
	}
	for _, c := range ro {
		h := newHarness(t)
		scriptCheck(t, h, c, h.scriptRead(append([]string{"eval_ro", c.script}, c.args...)...))
	}
	// A refused script is cached all the same, as Redis caches it first.
	h := newHarness(t)
	body := "#!lua flags=no-cluster\nreturn 1"
	h.scriptDo("eval", body, "0")
	if got := h.scriptDo("script", "exists", scriptSHA(body)); got != "[:1]" {
		t.Errorf("SCRIPT EXISTS after a no-cluster EVAL: %s", got)
	}
}

// evalCases runs each case's EVAL on a new harness.
func evalCases(t *testing.T, cases []scriptCase) {
	t.Helper()
	for _, c := range cases {
		h := newHarness(t)
		scriptCheck(t, h, c, h.scriptDo(append([]string{"eval", c.script}, c.args...)...))
	}
}

// TestScriptBinaryChunk: precompiled code is refused with the error of
// Redis's lexer, which never loads bytecode.
func TestScriptBinaryChunk(t *testing.T) {
	evalCases(t, []scriptCase{
		{"\x1bLua", []string{"0"}, "-ERR Error compiling script (new function): user_script:1: unexpected symbol near 'char(27)'"},
		{"#!lua\n\x1bLua", []string{"0"}, "-ERR Error compiling script (new function): user_script:2: unexpected symbol near 'char(27)'"},
		{"return loadstring('\\27Lua')", []string{"0"}, "nil"},
	})
}

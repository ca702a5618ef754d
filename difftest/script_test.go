package difftest

import "testing"

// Scripting's sandbox and API: the same EVALs against redis-server and
// slotraft, replies compared byte by byte. Left out, as docs/compatibility.md
// says: coroutine and string.dump (absent here), loadstring's chunk names
// (gopher-lua's), math.random without math.randomseed (Redis's generator is
// process-wide); and where Debian's redis-server 7.0 differs from Redis
// 7.2: getfenv and setfenv (Debian's build has none).

// compareOps runs ops on both servers and reports every reply that differs.
func compareOps(t *testing.T, rc, sc *client, ops []op) {
	t.Helper()
	for i, o := range ops {
		want, err := rc.do(o.args...)
		if err != nil {
			t.Fatalf("redis-server: %v", err)
		}
		got, err := sc.do(o.args...)
		if err != nil {
			t.Fatalf("slotraft: %v", err)
		}
		if w, g := normalize(want, o.mode), normalize(got, o.mode); w != g {
			t.Errorf("op %d %.80q:\n  redis:    %s\n  slotraft: %s", i, o.args, w, g)
		}
	}
}

func evalOp(body string, numkeysAndArgs ...string) op {
	if len(numkeysAndArgs) == 0 {
		numkeysAndArgs = []string{"0"}
	}
	return op{args: append([]string{"EVAL", body}, numkeysAndArgs...)}
}

func TestScriptSandboxDifferential(t *testing.T) {
	redisAddr, slotraftAddr := startRedis(t), startSlotraft(t)
	rc, sc := connect(t, redisAddr, "2"), connect(t, slotraftAddr, "2")
	var ops []op
	for _, body := range []string{
		"x = 1", "return x", "return _G.x", "redis.call = nil", "redis.x = 1", "redis = function() return 1 end", "_G = {}",
		"cjson.encode = 1", "cmsgpack.pack = 1", "bit.band = 1", "struct.pack = 1", "string.x = 1", "math.x = 1",
		"table.x = 1", "_G.x = 1", "_G.string = 1", "setmetatable(_G, nil)", "setmetatable(_G, {})",
		"rawset(_G, 'x', 1)", "rawset(string, 'x', 1)", "getmetatable('').__index = 1",
		"getmetatable('').__index.upper = 1", "local g = getmetatable(_G) g.__index = {}",
		"return {pcall(function() x = 1 end)}", "return {pcall(function() cjson.encode = 1 end)}",
		"return type(rawget(_G, 'string'))", "return rawget(string, 'upper') == string.upper",
		"return string.upper('a') .. ('b'):upper()", "local n = 0 for k in pairs(bit) do n = n + 1 end return n",
		"return getmetatable(string)", "return type(getmetatable(_G))",
		"local t = {} t.x = 1 rawset(t, 'y', 2) setmetatable(t, {}) return {t.x, t.y}",
		"return {type(loadstring), type(unpack), type(gcinfo), type(select), type(load), type(xpcall), _VERSION}",
		"return type(os)", "return type(io)", "return type(debug)", "return type(package)",
		"print('x')", "loadfile('x')", "dofile('x')", "return require", "return module",
		"return loadstring('return 1')()", "return loadstring('\\27Lua')",
		"return {unpack({1, 2, 3})}", "return #{unpack({}, 1, 1000)}", "return select('#', unpack({}, 1, 7997))",
		"return #{unpack({}, 1, 7998)}", "return #{unpack({}, 1, 1e8)}",
		"math.randomseed(42) return {math.random(), math.random(1000), math.random(5, 10)}",
	} {
		ops = append(ops, evalOp(body))
	}
	ops = append(ops, evalOp("KEYS[1] = 'z' table.insert(ARGV, 'w') return {KEYS[1], ARGV[2]}", "1", "{k}a", "b"))
	compareOps(t, rc, sc, ops)
}

// TestScriptShebangDifferential: EVAL's shebang and its flags. no-cluster
// is left out: redis-server here is not a cluster, slotraft always is.
func TestScriptShebangDifferential(t *testing.T) {
	redisAddr, slotraftAddr := startRedis(t), startSlotraft(t)
	rc, sc := connect(t, redisAddr, "2"), connect(t, slotraftAddr, "2")
	var ops []op
	for _, body := range []string{
		"#!lua\nreturn 1", "#!lua", "#!js\nreturn 1", "#!\nreturn 1", "#!lua name=x\nreturn 1", "#!lua bogus=1\nreturn 1",
		"#!lua flags=bogus\nreturn 1", "#!lua flags=no-writes,\nreturn 1", "#!lua flags=\nreturn 1", "#!lua  flags=allow-stale\nreturn 1",
		"#!lua flags=no-writes,allow-oom,allow-stale,allow-cross-slot-keys\nreturn 1", "#!lua\nreturn x",
		"#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], 'v')", "#!lua\nreturn redis.call('set', KEYS[1], 'v')",
		"#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])",
	} {
		ops = append(ops, evalOp(body, "1", "{s}k"), op{args: []string{"EVAL_RO", body, "1", "{s}k"}})
	}
	compareOps(t, rc, sc, ops)
}

// TestScriptAPIDifferential: the redis.* helpers, their errors, and
// precompiled chunks. Left out: redis.REDIS_VERSION (7.0 against 7.2),
// blocking commands from scripts (Redis 7.0 refuses some, 7.2 runs them
// without blocking, as slotraft does).
func TestScriptAPIDifferential(t *testing.T) {
	redisAddr, slotraftAddr := startRedis(t), startSlotraft(t)
	rc, sc := connect(t, redisAddr, "2"), connect(t, slotraftAddr, "2")
	var ops []op
	for _, body := range []string{
		"return redis.error_reply('')", "return redis.status_reply('')", "return redis.error_reply('My err')",
		"return redis.error_reply('-My err')", "return redis.status_reply('OK2')", "return redis.error_reply()",
		"return redis.error_reply(1)", "return redis.status_reply()", "return redis.sha1hex('')", "return redis.sha1hex()",
		"return redis.sha1hex(1)", "return redis.sha1hex('Pizza & Mandolino')", "return redis.replicate_commands()",
		"return redis.breakpoint()", "return redis.debug('x')", "return redis.set_repl(redis.REPL_ALL)",
		"return redis.set_repl(100)", "return redis.set_repl()",
		"return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL}",
		"return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}",
		"return redis.log(redis.LOG_WARNING, 'hi')", "return redis.log(redis.LOG_WARNING)", "return redis.log('x', 'y')",
		"return redis.log(9, 'y')", "return redis.acl_check_cmd('get', 'x')", "return redis.acl_check_cmd('nosuch')",
		"return redis.acl_check_cmd()", "return redis.setresp(4)", "return redis.setresp()", "return redis.call()",
		"return redis.call('nosuch')", "return redis.pcall('nosuch')", "return type(redis.REDIS_VERSION_NUM)",
		"\x1bLua", "#!lua\n\x1bLua",
	} {
		ops = append(ops, evalOp(body))
	}
	compareOps(t, rc, sc, ops)
}

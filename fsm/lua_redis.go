package fsm

import (
	"log/slog"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
)

// The redis.* API of a script run (lua.go): redis.call and redis.pcall
// with Redis's checks, the commands a script answers itself, and the
// helpers (sha1hex, error_reply, status_reply, log, setresp, set_repl,
// acl_check_cmd).

// redisTable builds the redis.* API.
func (r *scriptRun) redisTable(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	fns := map[string]lua.LGFunction{
		"call":               func(L *lua.LState) int { return r.call(L, true) },
		"pcall":              func(L *lua.LState) int { return r.call(L, false) },
		"sha1hex":            luaSHA1Hex,
		"error_reply":        luaErrorReply,
		"status_reply":       luaStatusReply,
		"log":                luaLog,
		"setresp":            r.setresp,
		"set_repl":           luaSetRepl,
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
		"breakpoint":         r.breakpoint, // ldb_api.go
		"debug":              r.debugLog,
		"acl_check_cmd":      r.aclCheckCmd,
	}
	for _, name := range sortedKeys(fns) {
		t.RawSetString(name, L.NewFunction(fns[name]))
	}
	for _, kv := range []struct {
		k string
		v lua.LValue
	}{
		{"LOG_DEBUG", lua.LNumber(0)}, {"LOG_VERBOSE", lua.LNumber(1)}, {"LOG_NOTICE", lua.LNumber(2)},
		{"LOG_WARNING", lua.LNumber(3)}, {"REPL_NONE", lua.LNumber(0)}, {"REPL_AOF", lua.LNumber(1)},
		{"REPL_SLAVE", lua.LNumber(2)}, {"REPL_REPLICA", lua.LNumber(2)}, {"REPL_ALL", lua.LNumber(3)},
		{"REDIS_VERSION", lua.LString(luaRedisVersion)}, {"REDIS_VERSION_NUM", lua.LNumber(luaRedisVersionNum)},
	} {
		t.RawSetString(kv.k, kv.v)
	}
	return t
}

// sortedKeys lists a map's keys in order, so setup never depends on map order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// raiseErr raises a Redis error table {err=text}; text gets the ERR code
// when it has none, as luaPushError does.
func raiseErr(L *lua.LState, text string) {
	L.Error(errTable(L, text), 1)
}

// errTable is the {err=…} table of an error text, as luaPushErrorBuff
// builds it: "-CODE msg" keeps its code, any other text gets "ERR ".
func errTable(L *lua.LState, text string) *lua.LTable { return newErrTable(L, text, false) }

// callErrTable is errTable for the error of a command a script called
// (refused, or its error reply): Redis 7 marks it with
// ignore_error_stats_update = true (script_lua.c), as the command's own
// error was counted already. The mark is set first, so that pairs (and
// the debugger) list it first, as Redis's Lua lists the two.
func callErrTable(L *lua.LState, text string) *lua.LTable { return newErrTable(L, text, true) }

func newErrTable(L *lua.LState, text string, fromCall bool) *lua.LTable {
	if b, ok := L.Context().(*budgetCtx); ok && b.ldb != nil {
		b.ldb.logError(text) // a debugging session's "<error>" line (ldb_api.go)
	}
	if t, ok := strings.CutPrefix(text, "-"); ok {
		text = t
		if !strings.Contains(text, " ") {
			text = "ERR " + text
		}
	} else {
		text = "ERR " + text
	}
	t := L.NewTable()
	if fromCall {
		t.RawSetString("ignore_error_stats_update", lua.LTrue)
	}
	t.RawSetString("err", lua.LString(strings.TrimRight(text, "\r\n")))
	return t
}

// luaArgs converts redis.call's arguments: strings as they are, numbers
// with %.17g, anything else is an error.
func luaArgs(L *lua.LState) ([][]byte, string) {
	n := L.GetTop()
	if n == 0 {
		return nil, "Please specify at least one argument for this redis lib call"
	}
	args := make([][]byte, n)
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			args[i-1] = []byte(v)
		case lua.LNumber:
			args[i-1] = fmtG17(float64(v))
		default:
			return nil, "Lua redis lib command arguments must be strings or integers"
		}
	}
	return args, ""
}

// fmtG17 formats like C's "%.17g".
func fmtG17(f float64) []byte {
	if b, ok := resp.FormatNonFinite(f); ok {
		return b
	}
	return strconv.AppendFloat(nil, f, 'g', 17, 64)
}

// call is redis.call (raise true) and redis.pcall (raise false).
func (r *scriptRun) call(L *lua.LState, raise bool) int {
	fail := func(t *lua.LTable) int {
		if raise {
			L.Error(t, 1)
		}
		L.Push(t)
		return 1
	}
	if r.budget.exceeded {
		L.RaiseError("%s", errBudgetCtx.Error())
	}
	args, bad := luaArgs(L)
	if bad != "" {
		return fail(errTable(L, bad))
	}
	if r.inCall {
		return fail(errTable(L, "luaRedisGenericCommand() recursive call detected. Are you doing funny stuff with Lua debug hooks?"))
	}
	l := r.stepping()
	if l != nil {
		l.logCommand(args) // ldb_api.go
	}
	v, refused := r.exec(args)
	if refused != "" {
		return fail(callErrTable(L, refused))
	}
	lv := r.toLua(L, v)
	if l != nil {
		l.logReply(v, r.resp)
	}
	if v.Kind == resp.KindError && raise {
		L.Error(lv, 1)
	}
	L.Push(lv)
	return 1
}

// Redis's refusals of a command a script calls (script.c), as plain
// texts: errTable gives them the ERR code.
const (
	errCallNonLocal  = "Script attempted to access a non local key in a cluster node"
	errCallNotScript = "This Redis command is not allowed from script"
)

// exec runs one command for the script, with Redis's checks (script.c
// scriptCall): known command, arity, allowed in scripts, writes allowed,
// keys in the script's slot. A refusal is its text, as Redis's scriptCall
// words it (a debugging session logs it so), and runs nothing.
func (r *scriptRun) exec(args [][]byte) (v resp.Value, refused string) {
	cmd := Lookup(args[0])
	if cmd == nil {
		return v, "Unknown Redis command called from script"
	}
	if !cmd.Meta.ArityOK(len(args)) {
		return v, "Wrong number of args calling Redis command from script"
	}
	m := cmd.Meta
	if m.Flags&(resp.FlagNoScript|resp.FlagPubSub) != 0 {
		return v, errCallNotScript
	}
	if d := r.c.checkCall(cmd, args); d != nil {
		return v, "ACL failure in script: " + d.Text(r.c.userName())
	}
	write := m.Flags&resp.FlagWrite != 0
	if write && r.readOnly {
		return v, "Write commands are not allowed from read-only scripts."
	}
	keys := m.KeysOf(args)
	if write && len(keys) == 0 {
		// A keyless write (FLUSHALL…) would reach one group only.
		return v, errCallNotScript
	}
	for _, k := range keys {
		s := int(slots.Of(k))
		switch {
		case r.slot == -1:
			// No key was declared: the script's group is not bound to a
			// slot, so it may not touch keys (Redis Cluster's error for
			// keys the node does not serve).
			return v, errCallNonLocal
		case s != r.slot:
			return v, "Script attempted to access keys that do not hash to the same slot"
		}
	}
	if mu := r.c.shared; mu != nil {
		// A debugging session's copy of its group's store shares
		// structures with the live store (ldb_copy.go): its commands run
		// under the group's write lock, one at a time, as Apply's do.
		mu.Lock()
		defer mu.Unlock()
	}
	if r.c.moved != nil && r.c.moved(keys, write) {
		// A key moved, or being copied, out of the group (migrate.go):
		// Redis's error for a key another node serves, never a redirect,
		// since the script has already run in part.
		return v, errCallNonLocal
	}
	r.inCall = true
	noBlock := r.c.NoBlock
	r.c.NoBlock = true
	v = run(r.c, args)
	r.c.NoBlock = noBlock
	r.inCall = false
	if r.c.monitorOn {
		// As Redis's call() feeds monitors, once the command ran.
		r.c.calls = append(r.c.calls, cloneArgs(args))
	}
	return v, ""
}

// aclCheckCmd is redis.acl_check_cmd: whether the caller's user may run
// the command with these arguments.
func (r *scriptRun) aclCheckCmd(L *lua.LState) int {
	args, bad := luaArgs(L)
	if bad != "" {
		raiseErr(L, bad)
	}
	cmd := Lookup(args[0])
	if cmd == nil {
		raiseErr(L, "Invalid command passed to redis.acl_check_cmd()")
	}
	L.Push(lua.LBool(r.c.allowsCall(cmd, args)))
	return 1
}

func luaSHA1Hex(L *lua.LState) int {
	if L.GetTop() != 1 {
		raiseErr(L, "wrong number of arguments")
	}
	L.Push(lua.LString(SHA1Hex([]byte(L.ToString(1)))))
	return 1
}

func luaErrorReply(L *lua.LState) int {
	s, ok := L.Get(1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errTable(L, "wrong number or type of arguments"))
		return 1
	}
	text := string(s)
	if !strings.HasPrefix(text, "-") {
		text = "-" + text
	}
	L.Push(errTable(L, text))
	return 1
}

func luaStatusReply(L *lua.LState) int {
	s, ok := L.Get(1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errTable(L, "wrong number or type of arguments"))
		return 1
	}
	t := L.NewTable()
	t.RawSetString("ok", s)
	L.Push(t)
	return 1
}

// luaLog is redis.log: it goes to the process log at debug level (a
// replica logs it too, as each replica runs the script).
func luaLog(L *lua.LState) int {
	n := L.GetTop()
	if n < 2 {
		raiseErr(L, "redis.log() requires two arguments or more.")
	}
	lv, ok := L.Get(1).(lua.LNumber)
	if !ok {
		raiseErr(L, "First argument must be a number (log level).")
	}
	if lv < 0 || lv > 3 {
		raiseErr(L, "Invalid debug level.")
	}
	parts := make([]string, 0, n-1)
	for i := 2; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString, lua.LNumber:
			parts = append(parts, lua.LVAsString(v))
		}
	}
	slog.Debug("script log", "level", int(lv), "msg", strings.Join(parts, " "))
	return 0
}

func (r *scriptRun) setresp(L *lua.LState) int {
	if L.GetTop() != 1 {
		raiseErr(L, "redis.setresp() requires one argument.")
	}
	n, _ := L.Get(1).(lua.LNumber)
	if n != 2 && n != 3 {
		raiseErr(L, "RESP version must be 2 or 3.")
	}
	r.resp = int(n)
	return 0
}

// luaSetRepl is redis.set_repl: accepted and checked, without effect
// (the whole script is the log entry).
func luaSetRepl(L *lua.LState) int {
	if L.GetTop() != 1 {
		raiseErr(L, "redis.set_repl() requires two arguments.")
	}
	n, _ := L.Get(1).(lua.LNumber)
	if int(n)&^3 != 0 {
		raiseErr(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
	}
	return 0
}

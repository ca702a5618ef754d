package fsm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
)

// The Lua runtime of EVAL: a fresh, sandboxed gopher-lua state per script
// run, so that nothing one script does can leak into the next one and
// every replica runs each script from the same starting point.
//
// Determinism:
//   - no io, os, package, require, dofile, loadfile, print, coroutine
//     (a coroutine would run outside the instruction budget) and no clock;
//   - math.random is Redis's lrand48 generator seeded from the entry;
//   - tostring of tables and functions (and string.format's %s of them)
//     prints a per-run sequence number, not a memory address;
//   - table iteration (pairs, next) follows insertion order in gopher-lua;
//   - an execution budget counts Lua instructions: gopher-lua's main loop
//     asks the state's context for Done() once per instruction, and
//     budgetCtx answers with a closed channel once the budget is spent, so
//     a runaway script stops at the same instruction on every replica.

// The script budget is the number of Lua instructions one script (EVAL,
// FCALL) may execute. A script that goes beyond it stops with an error;
// the writes it made before stay applied, as with any script error in
// Redis. Since a script's outcome depends on it, it is replicated state:
// the group setting SettingScriptBudget, set through the group's log, so
// every replica uses the value of the entry's log position (a node-local
// value would let replicas diverge during a rolling config change).

// DefaultScriptBudget is the script budget of a group whose setting is
// unset or not a positive decimal number (roughly 1 to 3 seconds of CPU).
const DefaultScriptBudget = 100_000_000

// scriptBudgetOf is the script budget that settings hold. It is total, as
// Apply must be: a value the log holds but that is not a positive number
// means the default, on every replica alike.
func scriptBudgetOf(settings map[string]string) int64 {
	v := settings[SettingScriptBudget]
	if v == "" { // the usual case, without ParseInt's error
		return DefaultScriptBudget
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return DefaultScriptBudget
	}
	return n
}

// loadBudget is the budget of a library's top-level code at FUNCTION LOAD
// and RESTORE: a tenth of the script budget (10,000,000 by default), as
// Redis's FUNCTION LOAD timeout (500 ms) is a tenth of its busy-script
// threshold (5 s).
func loadBudget(scriptBudget int64) int64 { return max(scriptBudget/10, 1) }

// reloadBudget is the budget of libraries a group already accepted, loaded
// again from a snapshot or another node's FUNCTION DUMP: none, as Redis
// loads an RDB's libraries without a timeout. Each ran within the budget
// of its own log position, which the setting may have lowered since, and
// a replica that refused them could not restore its group's snapshot.
const reloadBudget = math.MaxInt64

// ScriptBudgetEntry is the settings entry that sets the group's script
// budget to n instructions; n <= 0 removes the setting, so the group goes
// back to DefaultScriptBudget.
func ScriptBudgetEntry(n int64) *Entry {
	if n <= 0 {
		return SettingsEntry(SettingScriptBudget, "")
	}
	return SettingsEntry(SettingScriptBudget, strconv.FormatInt(n, 10))
}

// Memory bounds of one script run.
const (
	luaCallStack   = 1024     // nested Lua calls
	luaRegistry    = 1024     // initial value stack slots
	luaRegistryMax = 1 << 20  // value stack slots at most
	luaMaxString   = 64 << 20 // longest string string.rep and the libraries build
)

// Redis version a script sees (redis.REDIS_VERSION).
const (
	luaRedisVersion    = "7.2.0"
	luaRedisVersionNum = 0x070200
)

// compiledScript is a script compiled once and run many times.
type compiledScript struct {
	proto    *lua.FunctionProto
	noWrites bool // shebang flag no-writes
}

// compileScript parses a script body, with Redis's "#!lua flags=…" shebang.
func compileScript(body []byte) (*compiledScript, error) {
	cs := &compiledScript{}
	src := body
	if bytes.HasPrefix(body, []byte("#!")) {
		line, rest, _ := bytes.Cut(body, []byte("\n"))
		parts := strings.Fields(string(line[2:]))
		if len(parts) == 0 || parts[0] != "lua" {
			engine := ""
			if len(parts) > 0 {
				engine = parts[0]
			}
			return nil, resp.Errorf("ERR Could not find engine '%s'", engine)
		}
		for _, p := range parts[1:] {
			v, ok := strings.CutPrefix(p, "flags=")
			if !ok {
				return nil, resp.Errorf("ERR Unknown lua shebang option: %s", p)
			}
			for _, f := range strings.Split(v, ",") {
				switch f {
				case "no-writes":
					cs.noWrites = true
				case "", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys":
					// allow-cross-slot-keys is accepted but keys must still
					// hash to one slot: a group may not own the other slots.
				default:
					return nil, resp.Errorf("ERR Unexpected flag in script shebang: %s", f)
				}
			}
		}
		// Keep line numbers: the shebang line becomes an empty line.
		src = append([]byte("\n"), rest...)
	}
	proto, err := compileLua(src, "user_script", "ERR Error compiling script (new function)")
	if err != nil {
		return nil, err
	}
	cs.proto = proto
	return cs, nil
}

func oneLine(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(strings.TrimSpace(s))
}

// budgetCtx is the context gopher-lua polls once per instruction.
type budgetCtx struct {
	context.Context
	n, limit int64
	exceeded bool
}

var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

var errBudgetCtx = errors.New("script execution budget exceeded")

func (b *budgetCtx) Done() <-chan struct{} {
	b.n++
	if b.n > b.limit {
		b.exceeded = true
		return closedCh
	}
	return nil
}

func (b *budgetCtx) Err() error {
	if b.exceeded {
		return errBudgetCtx
	}
	return nil
}

// scriptRun is one execution of a script (EVAL) or function (FCALL).
type scriptRun struct {
	c        *Ctx
	sha      string // the script's SHA1, or the function's name, in error replies
	source   string // the chunk errors point into: "@user_script" or "@user_function"
	readOnly bool
	resp     int // protocol of redis.call replies seen by the script (redis.setresp)
	slot     int // the slot the script's keys hash to, -1 while none declared
	budget   *budgetCtx
	rand     lrand48
	ids      map[any]int // tostring numbers of tables and functions
	inCall   bool
}

// runScript runs a compiled script with KEYS and ARGV and returns its reply.
func runScript(c *Ctx, sha string, cs *compiledScript, keys, argv [][]byte, readOnly bool) resp.Value {
	r := newScriptRun(c, sha, "@user_script", keys, readOnly || cs.noWrites, c.scriptBudget)
	L := r.newState()
	defer L.Close()
	L.G.Global.RawSetString("KEYS", luaStrings(L, keys))
	L.G.Global.RawSetString("ARGV", luaStrings(L, argv))
	return r.invoke(L, L.NewFunctionFromProto(cs.proto))
}

// newScriptRun prepares one run: c is nil while a function library loads
// (FUNCTION LOAD runs no command and draws no random number).
func newScriptRun(c *Ctx, name, source string, keys [][]byte, readOnly bool, budget int64) *scriptRun {
	r := &scriptRun{c: c, sha: name, source: source, readOnly: readOnly, resp: 2, slot: -1,
		budget: &budgetCtx{Context: context.Background(), limit: budget}}
	if len(keys) > 0 {
		r.slot = int(slots.Of(keys[0]))
	}
	if c != nil {
		r.rand.seed(int32(c.Rand.Uint32()))
	}
	return r
}

// newState makes the run's sandboxed Lua state, counting instructions
// against its budget from here on.
func (r *scriptRun) newState() *lua.LState {
	L := lua.NewState(lua.Options{SkipOpenLibs: true, CallStackSize: luaCallStack, RegistrySize: luaRegistry,
		RegistryMaxSize: luaRegistryMax, MinimizeStackMemory: true})
	r.setup(L)
	L.SetContext(r.budget)
	return L
}

// invoke calls fn with args under the error handler and converts its
// result (or error) into the reply.
func (r *scriptRun) invoke(L *lua.LState, fn *lua.LFunction, args ...lua.LValue) resp.Value {
	L.Push(fn)
	for _, a := range args {
		L.Push(a)
	}
	err := L.PCall(len(args), 1, L.NewFunction(r.errorHandler))
	if r.budget.exceeded {
		return r.budgetError()
	}
	if err != nil {
		return r.errorReply(err)
	}
	return r.toReply(L, L.Get(-1), 0)
}

func (r *scriptRun) budgetError() resp.Value {
	return resp.Err(resp.Errorf("ERR Script exceeded the execution budget of %d Lua instructions script: %s", r.budget.limit, r.sha))
}

// errorHandler is called where an error is raised, with the error object:
// like Redis's __redis__err__handler it turns the error into a table
// {err=…, source=…, line=…} naming the Lua line that raised it.
func (r *scriptRun) errorHandler(L *lua.LState) int {
	obj := L.Get(1)
	t, ok := obj.(*lua.LTable)
	if !ok {
		t = L.NewTable()
		t.RawSetString("err", lua.LString("ERR "+luaErrString(obj)))
	}
	for level := 1; ; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			break
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
			break
		}
		if dbg.What == "G" || dbg.CurrentLine < 0 {
			continue
		}
		t.RawSetString("source", lua.LString(r.source))
		t.RawSetString("line", lua.LString(strconv.Itoa(dbg.CurrentLine)))
		break
	}
	L.Push(t)
	return 1
}

func luaErrString(v lua.LValue) string {
	switch v := v.(type) {
	case lua.LString:
		return string(v)
	case lua.LNumber:
		return lua.LVAsString(v)
	case *lua.LNilType:
		return "nil"
	}
	return v.Type().String()
}

// luaErrorObject is the value a Lua error was raised with (a string, or
// a Redis error table), or the error's text for other errors.
func luaErrorObject(err error) lua.LValue {
	var ae *lua.ApiError
	if errors.As(err, &ae) && ae.Object != nil {
		return ae.Object
	}
	return lua.LString(err.Error())
}

// errorReply renders a script's error as Redis 7.2 does:
// "<err> script: <sha>, on @user_script:<line>."
func (r *scriptRun) errorReply(err error) resp.Value {
	obj := luaErrorObject(err)
	t, ok := obj.(*lua.LTable)
	if !ok {
		return resp.Err(resp.Errorf("ERR Error running script %s, %.100s", r.sha, oneLine(luaErrString(obj))))
	}
	msg := "ERR unknown error"
	if s, ok := t.RawGetString("err").(lua.LString); ok {
		msg = string(s)
	}
	src, ok1 := t.RawGetString("source").(lua.LString)
	line, ok2 := t.RawGetString("line").(lua.LString)
	if ok1 && ok2 {
		msg = fmt.Sprintf("%s script: %s, on %s:%s.", msg, r.sha, src, line)
	}
	return resp.Value{Kind: resp.KindError, Str: []byte(oneLine(msg))}
}

// setup opens the libraries, the redis API and the globals protection.
func (r *scriptRun) setup(L *lua.LState) {
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{"", lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	g := L.G.Global
	for _, name := range []string{"dofile", "loadfile", "print", "_printregs", "module", "require", "_GOPHER_LUA_VERSION",
		"getfenv", "setfenv", "newproxy"} {
		g.RawSetString(name, lua.LNil)
	}
	g.RawSetString("pcall", L.NewFunction(r.pcall))
	g.RawSetString("tostring", L.NewFunction(r.tostring))
	g.RawSetString("gcinfo", L.NewFunction(func(L *lua.LState) int { L.Push(lua.LNumber(0)); return 1 }))
	if str, ok := g.RawGetString("string").(*lua.LTable); ok {
		str.RawSetString("rep", L.NewFunction(luaStringRep))
		orig := str.RawGetString("format").(*lua.LFunction)
		str.RawSetString("format", L.NewFunction(r.stringFormat(orig)))
		str.RawSetString("dump", lua.LNil)
	}
	if m, ok := g.RawGetString("math").(*lua.LTable); ok {
		m.RawSetString("random", L.NewFunction(r.mathRandom))
		m.RawSetString("randomseed", L.NewFunction(r.mathRandomseed))
	}
	g.RawSetString("redis", r.redisTable(L))
	g.RawSetString("cjson", openCjson(L))
	g.RawSetString("cmsgpack", openCmsgpack(L))
	g.RawSetString("bit", openBit(L))
	g.RawSetString("struct", openStruct(L))

	// Creating a global and reading a missing one are errors, as in Redis 7
	// (the state is fresh for every run, so nothing leaks between scripts).
	L.SetMetatable(g, protectedMeta(L))
}

// protectedMeta is the metatable of a protected table: reading a missing
// name and writing any are errors, as on Redis 7's globals.
func protectedMeta(L *lua.LState) *lua.LTable {
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", luaErrString(L.Get(2)))
		return 0
	}))
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Attempt to modify a readonly table")
		return 0
	}))
	mt.RawSetString("__metatable", lua.LFalse)
	return mt
}

func luaStrings(L *lua.LState, items [][]byte) *lua.LTable {
	t := L.CreateTable(len(items), 0)
	for i, it := range items {
		t.RawSetInt(i+1, lua.LString(it))
	}
	return t
}

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
		"breakpoint":         func(L *lua.LState) int { L.Push(lua.LFalse); return 1 },
		"debug":              func(L *lua.LState) int { return 0 },
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
func errTable(L *lua.LState, text string) *lua.LTable {
	if t, ok := strings.CutPrefix(text, "-"); ok {
		text = t
		if !strings.Contains(text, " ") {
			text = "ERR " + text
		}
	} else {
		text = "ERR " + text
	}
	t := L.NewTable()
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
	switch {
	case math.IsInf(f, 1):
		return []byte("inf")
	case math.IsInf(f, -1):
		return []byte("-inf")
	case math.IsNaN(f):
		return []byte("nan")
	}
	return strconv.AppendFloat(nil, f, 'g', 17, 64)
}

// scriptOnlyCommands are answered by the script runtime itself: they are
// node commands in the cluster, not data commands of a group.
var scriptOnlyCommands = map[string]func(r *scriptRun, args [][]byte) resp.Value{
	"ping": func(_ *scriptRun, args [][]byte) resp.Value {
		switch len(args) {
		case 1:
			return resp.Status("PONG")
		case 2:
			return resp.Bulk(args[1])
		}
		return errReply(resp.ErrWrongArgs("ping"))
	},
	"echo": func(_ *scriptRun, args [][]byte) resp.Value {
		if len(args) != 2 {
			return errReply(resp.ErrWrongArgs("echo"))
		}
		return resp.Bulk(args[1])
	},
	// TIME is the entry's time: the same on every replica.
	"time": func(r *scriptRun, args [][]byte) resp.Value {
		if len(args) != 1 {
			return errReply(resp.ErrWrongArgs("time"))
		}
		ms := r.c.Now
		return resp.Array(resp.BulkString(strconv.FormatInt(ms/1000, 10)), resp.BulkString(strconv.FormatInt(ms%1000*1000, 10)))
	},
}

// call is redis.call (raise true) and redis.pcall (raise false).
func (r *scriptRun) call(L *lua.LState, raise bool) int {
	fail := func(text string) int {
		if raise {
			raiseErr(L, text)
		}
		L.Push(errTable(L, text))
		return 1
	}
	if r.budget.exceeded {
		L.RaiseError("%s", errBudgetCtx.Error())
	}
	args, bad := luaArgs(L)
	if bad != "" {
		return fail(bad)
	}
	if r.inCall {
		return fail("luaRedisGenericCommand() recursive call detected. Are you doing funny stuff with Lua debug hooks?")
	}
	v := r.exec(args)
	if v.Kind == resp.KindError {
		return fail("-" + string(v.Str))
	}
	L.Push(r.toLua(L, v))
	return 1
}

// exec runs one command for the script, with Redis's checks (script.c
// scriptCall): known command, arity, allowed in scripts, writes allowed,
// keys in the script's slot.
func (r *scriptRun) exec(args [][]byte) resp.Value {
	name := strings.ToLower(string(args[0]))
	if f, ok := scriptOnlyCommands[name]; ok {
		return f(r, args)
	}
	cmd := Lookup(args[0])
	if cmd == nil {
		return errf("ERR Unknown Redis command called from script")
	}
	if !cmd.Meta.ArityOK(len(args)) {
		return errf("ERR Wrong number of args calling Redis command from script")
	}
	m := cmd.Meta
	if m.Flags&(resp.FlagNoScript|resp.FlagPubSub) != 0 {
		return errf("ERR This Redis command is not allowed from script")
	}
	write := m.Flags&resp.FlagWrite != 0
	if write && r.readOnly {
		return errf("ERR Write commands are not allowed from read-only scripts.")
	}
	keys := m.KeysOf(args)
	if write && len(keys) == 0 {
		// A keyless write (FLUSHALL…) would reach one group only.
		return errf("ERR This Redis command is not allowed from script")
	}
	for _, k := range keys {
		s := int(slots.Of(k))
		switch {
		case r.slot == -1:
			// No key was declared: the script's group is not bound to a
			// slot, so it may not touch keys (Redis Cluster's error for
			// keys the node does not serve).
			return errf("ERR Script attempted to access a non local key in a cluster node")
		case s != r.slot:
			return errf("ERR Script attempted to access keys that do not hash to the same slot")
		}
	}
	if r.c.moved != nil && r.c.moved(keys, write) {
		// A key moved, or being copied, out of the group (migrate.go):
		// Redis's error for a key another node serves, never a redirect,
		// since the script has already run in part.
		return errf("ERR Script attempted to access a non local key in a cluster node")
	}
	r.inCall = true
	noBlock := r.c.NoBlock
	r.c.NoBlock = true
	v := run(r.c, args)
	r.c.NoBlock = noBlock
	r.inCall = false
	return v
}

// aclCheckCmd is redis.acl_check_cmd: every command is allowed (no ACLs).
func (r *scriptRun) aclCheckCmd(L *lua.LState) int {
	args, bad := luaArgs(L)
	if bad != "" {
		raiseErr(L, bad)
	}
	if _, ok := scriptOnlyCommands[strings.ToLower(string(args[0]))]; !ok && Lookup(args[0]) == nil {
		raiseErr(L, "Invalid command passed to redis.acl_check_cmd()")
	}
	L.Push(lua.LTrue)
	return 1
}

// toLua converts a command's reply for the script (RESP2 or RESP3 rules).
func (r *scriptRun) toLua(L *lua.LState, v resp.Value) lua.LValue {
	resp3 := r.resp == 3
	switch v.Kind {
	case resp.KindNull, resp.KindNullArray:
		if resp3 {
			return lua.LNil
		}
		return lua.LFalse
	case resp.KindStatus:
		t := L.NewTable()
		t.RawSetString("ok", lua.LString(v.Str))
		return t
	case resp.KindError:
		return errTable(L, "-"+string(v.Str))
	case resp.KindInt:
		return lua.LNumber(v.Int)
	case resp.KindBulk:
		return lua.LString(v.Str)
	case resp.KindVerbatim:
		format, text := "txt", v.Str
		if len(v.Str) >= 4 {
			format, text = string(v.Str[:3]), v.Str[4:]
		}
		if !resp3 {
			return lua.LString(text)
		}
		inner := L.NewTable()
		inner.RawSetString("string", lua.LString(text))
		inner.RawSetString("format", lua.LString(format))
		t := L.NewTable()
		t.RawSetString("verbatim_string", inner)
		return t
	case resp.KindDouble:
		if !resp3 {
			return lua.LString(resp.FormatDouble(v.Float, false))
		}
		t := L.NewTable()
		t.RawSetString("double", lua.LNumber(v.Float))
		return t
	case resp.KindBool:
		if !resp3 {
			return lua.LNumber(v.Int)
		}
		return lua.LBool(v.Int != 0)
	case resp.KindBigNumber:
		if !resp3 {
			return lua.LString(v.Str)
		}
		t := L.NewTable()
		t.RawSetString("big_number", lua.LString(v.Str))
		return t
	case resp.KindMap:
		if !resp3 {
			return r.luaArray(L, v.Elems)
		}
		m := L.NewTable()
		for i := 0; i+1 < len(v.Elems); i += 2 {
			m.RawSet(r.toLua(L, v.Elems[i]), r.toLua(L, v.Elems[i+1]))
		}
		t := L.NewTable()
		t.RawSetString("map", m)
		return t
	case resp.KindSet:
		if !resp3 {
			return r.luaArray(L, v.Elems)
		}
		s := L.NewTable()
		for _, e := range v.Elems {
			s.RawSet(r.toLua(L, e), lua.LTrue)
		}
		t := L.NewTable()
		t.RawSetString("set", s)
		return t
	case resp.KindPairs:
		if !resp3 {
			return r.luaArray(L, v.Elems)
		}
		t := L.CreateTable(len(v.Elems)/2, 0)
		for i := 0; i+1 < len(v.Elems); i += 2 {
			t.RawSetInt(i/2+1, r.luaArray(L, v.Elems[i:i+2]))
		}
		return t
	}
	return r.luaArray(L, v.Elems) // arrays, push
}

func (r *scriptRun) luaArray(L *lua.LState, elems []resp.Value) *lua.LTable {
	t := L.CreateTable(len(elems), 0)
	for i, e := range elems {
		t.RawSetInt(i+1, r.toLua(L, e))
	}
	return t
}

// maxReplyDepth bounds the nesting of a script's reply (Redis: the Lua
// stack limit).
const maxReplyDepth = 1000

// toReply converts a script's return value into a reply (Redis's
// luaReplyToRedisReply).
func (r *scriptRun) toReply(L *lua.LState, v lua.LValue, depth int) resp.Value {
	if depth > maxReplyDepth {
		return errf("ERR reached lua stack limit")
	}
	switch v := v.(type) {
	case lua.LString:
		return resp.Bulk([]byte(v))
	case lua.LBool:
		if r.resp == 2 {
			if v {
				return one
			}
			return resp.Null()
		}
		return resp.Bool(bool(v))
	case lua.LNumber:
		return resp.Int(luaToInt64(float64(v)))
	case *lua.LTable:
		if e, ok := v.RawGetString("err").(lua.LString); ok {
			return resp.Value{Kind: resp.KindError, Str: []byte(crlfToSpaces(string(e)))}
		}
		if s, ok := v.RawGetString("ok").(lua.LString); ok {
			return resp.Status(crlfToSpaces(string(s)))
		}
		if d, ok := v.RawGetString("double").(lua.LNumber); ok {
			return resp.Double(float64(d))
		}
		if b, ok := v.RawGetString("big_number").(lua.LString); ok {
			return resp.Value{Kind: resp.KindBigNumber, Str: []byte(crlfToSpaces(string(b)))}
		}
		if vt, ok := v.RawGetString("verbatim_string").(*lua.LTable); ok {
			f, ok1 := vt.RawGetString("format").(lua.LString)
			s, ok2 := vt.RawGetString("string").(lua.LString)
			if ok1 && ok2 {
				return resp.Verbatim(string(f), []byte(s))
			}
		}
		if m, ok := v.RawGetString("map").(*lua.LTable); ok {
			var kvs []resp.Value
			luaForEach(m, func(k, val lua.LValue) {
				kvs = append(kvs, r.toReply(L, k, depth+1), r.toReply(L, val, depth+1))
			})
			return resp.Map(kvs...)
		}
		if s, ok := v.RawGetString("set").(*lua.LTable); ok {
			var elems []resp.Value
			luaForEach(s, func(k, _ lua.LValue) { elems = append(elems, r.toReply(L, k, depth+1)) })
			return resp.Set(elems...)
		}
		var elems []resp.Value
		for i := 1; ; i++ {
			e := v.RawGetInt(i)
			if e == lua.LNil {
				break
			}
			elems = append(elems, r.toReply(L, e, depth+1))
		}
		return resp.Array(elems...)
	}
	return resp.Null()
}

// luaToInt64 is C's (long long) cast of a Lua number, made deterministic
// for NaN and out-of-range values.
func luaToInt64(f float64) int64 {
	// x86-64's conversion gives the "integer indefinite" value for NaN and
	// out-of-range numbers; Redis on x86-64 replies with it.
	if math.IsNaN(f) || f >= math.MaxInt64 || f < math.MinInt64 {
		return math.MinInt64
	}
	return int64(f)
}

// luaNumberString is Lua 5.1's number to string conversion ("%.14g").
func luaNumberString(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	return fmtG(f, 14)
}

func crlfToSpaces(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }

// pcall is Redis's pcall: an error table with an err string is returned
// as that string (Redis 7 keeps Lua 5.1's string errors for pcall).
func (r *scriptRun) pcall(L *lua.LState) int {
	nargs := L.GetTop() - 1
	if nargs < 0 {
		L.ArgError(1, "value expected")
	}
	err := L.PCall(nargs, lua.MultRet, nil)
	if r.budget.exceeded {
		L.RaiseError("%s", errBudgetCtx.Error())
	}
	if err == nil {
		L.Insert(lua.LTrue, 1)
		return L.GetTop()
	}
	obj := luaErrorObject(err)
	if t, ok := obj.(*lua.LTable); ok {
		if s, ok := t.RawGetString("err").(lua.LString); ok {
			obj = s
		}
	}
	L.SetTop(0)
	L.Push(lua.LFalse)
	L.Push(obj)
	return 2
}

// tostring prints tables, functions and userdata with a per-run number
// instead of a memory address, so that the text is the same on every replica.
func (r *scriptRun) tostring(L *lua.LState) int {
	v := L.CheckAny(1)
	L.Push(r.toStringValue(L, v))
	return 1
}

func (r *scriptRun) toStringValue(L *lua.LState, v lua.LValue) lua.LValue {
	switch tv := v.(type) {
	case *lua.LTable, *lua.LFunction, *lua.LUserData, *lua.LState:
		if mt, ok := L.GetMetaField(v, "__tostring").(*lua.LFunction); ok {
			L.Push(mt)
			L.Push(v)
			L.Call(1, 1)
			return L.Get(-1)
		}
		if r.ids == nil {
			r.ids = map[any]int{}
		}
		id, ok := r.ids[v]
		if !ok {
			id = len(r.ids) + 1
			r.ids[v] = id
		}
		return lua.LString(fmt.Sprintf("%s: 0x%08x", v.Type().String(), id))
	case lua.LNumber:
		return lua.LString(luaNumberString(float64(tv)))
	}
	return L.ToStringMeta(v)
}

// stringFormat wraps string.format so that %s of a table prints
// tostring's deterministic text.
func (r *scriptRun) stringFormat(orig *lua.LFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		n := L.GetTop()
		L.Push(orig)
		for i := 1; i <= n; i++ {
			v := L.Get(i)
			switch v.(type) {
			case *lua.LTable, *lua.LFunction, *lua.LUserData, *lua.LState:
				v = r.toStringValue(L, v)
			}
			L.Push(v)
		}
		L.Call(n, 1)
		return 1
	}
}

func luaStringRep(L *lua.LState) int {
	s := L.CheckString(1)
	n := L.CheckInt(2)
	if n <= 0 || len(s) == 0 {
		L.Push(lua.LString(""))
		return 1
	}
	if int64(len(s))*int64(n) > luaMaxString {
		L.RaiseError("string.rep: result longer than %d bytes", luaMaxString)
	}
	L.Push(lua.LString(strings.Repeat(s, n)))
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

// lrand48 is Redis's redisLrand48 (rand.c): the 48-bit linear
// congruential generator of POSIX lrand48, the same on every platform.
type lrand48 struct{ x uint64 }

const (
	lrandA   = 0x5DEECE66D
	lrandC   = 0xB
	lrandMax = math.MaxInt32
)

func (g *lrand48) seed(s int32) { g.x = (uint64(uint32(s))<<16 | 0x330E) & (1<<48 - 1) }

func (g *lrand48) next() int32 {
	g.x = (lrandA*g.x + lrandC) & (1<<48 - 1)
	return int32(g.x >> 17)
}

// mathRandom is Lua 5.1's math.random over lrand48, as Redis does.
func (r *scriptRun) mathRandom(L *lua.LState) int {
	f := float64(r.rand.next()%lrandMax) / float64(lrandMax)
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(f))
	case 1:
		u := L.CheckInt(1)
		if u < 1 {
			L.ArgError(1, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(f*float64(u)) + 1))
	case 2:
		l, u := L.CheckInt(1), L.CheckInt(2)
		if l > u {
			L.ArgError(2, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(f*float64(u-l+1)) + float64(l)))
	default:
		L.RaiseError("wrong number of arguments")
	}
	return 1
}

func (r *scriptRun) mathRandomseed(L *lua.LState) int {
	r.rand.seed(int32(L.CheckInt(1)))
	return 0
}

// compileLua compiles Lua source named name; a syntax error becomes the
// error reply prefix: message, as Redis words it.
func compileLua(src []byte, name, prefix string) (*lua.FunctionProto, error) {
	chunk, err := parse.Parse(bytes.NewReader(src), name)
	if err != nil {
		return nil, resp.Errorf("%s: %s", prefix, oneLine(err.Error()))
	}
	proto, err := lua.Compile(chunk, name)
	if err != nil {
		return nil, resp.Errorf("%s: %s", prefix, oneLine(err.Error()))
	}
	return proto, nil
}

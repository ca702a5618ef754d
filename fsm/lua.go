package fsm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
)

// The Lua runtime of EVAL: a fresh, sandboxed gopher-lua state per script
// run, so that nothing one script does can leak into the next one and
// every replica runs each script from the same starting point. Fresh
// states are built ahead of need, off the apply path (lua_prebuilt.go).
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
//
// The parts: lua_sandbox.go sets up a run's state (libraries, protected
// globals, deterministic tostring and math.random), lua_redis.go is the
// redis.* API, lua_reply.go converts between replies and Lua values, and
// lua_budget.go counts instructions.

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
	proto *lua.FunctionProto
	flags ScriptFlags
}

// ScriptFlags are the flags of an EVAL script's "#!lua flags=…" shebang.
type ScriptFlags struct {
	Shebang    bool // the script has a shebang: Redis checks its flags
	NoWrites   bool
	AllowOOM   bool
	NoCluster  bool
	AllowStale bool
	CrossSlot  bool // allow-cross-slot-keys: accepted, keys must still share a slot
}

// ParseShebang reads the flags of an EVAL script's shebang as Redis 7.2's
// evalExtractShebangFlags does, and the length of the shebang line.
func ParseShebang(body []byte) (ScriptFlags, int, error) {
	var f ScriptFlags
	if !bytes.HasPrefix(body, []byte("#!")) {
		return f, 0, nil
	}
	end := bytes.IndexByte(body, '\n')
	if end < 0 {
		return f, 0, resp.NewError("ERR Invalid script shebang")
	}
	parts := strings.Fields(string(body[:end]))
	if parts[0] != "#!lua" {
		return f, 0, resp.Errorf("ERR Unexpected engine in script shebang: %s", parts[0])
	}
	f.Shebang = true
	for _, p := range parts[1:] {
		v, ok := strings.CutPrefix(p, "flags=")
		if !ok {
			return f, 0, resp.Errorf("ERR Unknown lua shebang option: %s", p)
		}
		if v == "" {
			continue
		}
		for _, name := range strings.Split(v, ",") {
			if !f.set(name) {
				return f, 0, resp.Errorf("ERR Unexpected flag in script shebang: %s", name)
			}
		}
	}
	return f, end, nil
}

// set sets the flag named name, false when Redis knows no such flag.
func (f *ScriptFlags) set(name string) bool {
	switch name {
	case "no-writes":
		f.NoWrites = true
	case "allow-oom":
		f.AllowOOM = true
	case "no-cluster":
		f.NoCluster = true
	case "allow-stale":
		f.AllowStale = true
	case "allow-cross-slot-keys":
		f.CrossSlot = true
	default:
		return false
	}
	return true
}

// compileScript parses a script body, with Redis's "#!lua flags=…" shebang.
func compileScript(body []byte) (*compiledScript, error) {
	cs, _, err := compileScriptChunk(body)
	return cs, err
}

// compileScriptChunk is compileScript that also returns the syntax tree
// (the Lua debugger's scopes: ldb_locals.go).
func compileScriptChunk(body []byte) (*compiledScript, []ast.Stmt, error) {
	flags, n, err := ParseShebang(body)
	if err != nil {
		return nil, nil, err
	}
	if first, line := bytes.TrimPrefix(body[n:], []byte("\n")), 1+min(n, 1); bytes.HasPrefix(first, []byte("\x1b")) {
		// Redis's Lua never loads precompiled code: its lexer meets ESC.
		return nil, nil, resp.Errorf("ERR Error compiling script (new function): user_script:%d: unexpected symbol near 'char(27)'", line)
	}
	// Keep line numbers: the shebang line is skipped, its line feed kept.
	proto, chunk, err := compileLuaChunk(body[n:], "user_script", "ERR Error compiling script (new function)")
	if err != nil {
		return nil, nil, err
	}
	return &compiledScript{proto: proto, flags: flags}, chunk, nil
}

// checkRun refuses to run a script as Redis 7.2's scriptPrepareForRun
// does for a script with a shebang: never on a cluster when no-cluster,
// never by EVAL_RO or EVALSHA_RO unless no-writes.
func (cs *compiledScript) checkRun(roCommand bool) error {
	switch f := cs.flags; {
	case !f.Shebang:
		return nil
	case f.NoCluster:
		return errNoCluster
	case roCommand && !f.NoWrites:
		return errWriteFlagRO
	}
	return nil
}

func oneLine(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(strings.TrimSpace(s))
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
	state    *lua.LState // its sandboxed state, built ahead (lua_prebuilt.go)
}

// runScript runs a compiled script with KEYS and ARGV and returns its reply.
func runScript(c *Ctx, sha string, cs *compiledScript, keys, argv [][]byte, readOnly bool) resp.Value {
	r := newScriptRun(c, sha, "@user_script", keys, readOnly || cs.flags.NoWrites, c.scriptBudget)
	L := r.newState()
	defer L.Close()
	defer r.watch(nil)()
	L.G.Global.RawSetString("KEYS", luaStrings(L, keys))
	L.G.Global.RawSetString("ARGV", luaStrings(L, argv))
	return r.invoke(L, L.NewFunctionFromProto(cs.proto))
}

// newScriptRun prepares one run: c is nil while a function library loads
// (FUNCTION LOAD runs no command and draws no random number).
func newScriptRun(c *Ctx, name, source string, keys [][]byte, readOnly bool, budget int64) *scriptRun {
	r, L := takeLuaState()
	// The state's functions hold r: fill the run in place.
	*r = scriptRun{c: c, sha: name, source: source, readOnly: readOnly, resp: 2, slot: -1,
		budget: &budgetCtx{Context: context.Background(), limit: budget}, state: L}
	if len(keys) > 0 {
		r.slot = int(slots.Of(keys[0]))
	}
	if c != nil {
		r.rand.seed(int32(c.rand().Uint32()))
	}
	return r
}

// newState returns the run's sandboxed Lua state, counting instructions
// against its budget from here on. The caller closes it: a state serves
// one run only.
func (r *scriptRun) newState() *lua.LState {
	L := r.state
	r.state = nil
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
	if r.budget.killed {
		return r.killedReply(err)
	}
	if err != nil {
		return r.errorReply(err)
	}
	return r.toReply(L, L.Get(-1), 0)
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

// compileLua compiles Lua source named name; a syntax error becomes the
// error reply prefix: message, as Redis words it.
func compileLua(src []byte, name, prefix string) (*lua.FunctionProto, error) {
	proto, _, err := compileLuaChunk(src, name, prefix)
	return proto, err
}

// compileLuaChunk is compileLua that also returns the syntax tree.
func compileLuaChunk(src []byte, name, prefix string) (*lua.FunctionProto, []ast.Stmt, error) {
	chunk, err := parse.Parse(bytes.NewReader(src), name)
	if err != nil {
		return nil, nil, resp.Errorf("%s: %s", prefix, oneLine(err.Error()))
	}
	proto, err := lua.Compile(chunk, name)
	if err != nil {
		return nil, nil, resp.Errorf("%s: %s", prefix, oneLine(err.Error()))
	}
	return proto, chunk, nil
}

package fsm

import (
	"bytes"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/slotraft/slotraft/resp"
)

// Function libraries in Lua: parsing a library's "#!lua name=<lib>"
// shebang, compiling it, and running its top-level code, which registers
// its functions with redis.register_function.
//
// Redis keeps one Lua state for all libraries, so a library's top-level
// locals live on between calls. Here, as for EVAL, every FCALL runs in a
// fresh sandbox (lua.go): it runs the library's top-level code again (in
// the load environment, deterministic) and then calls the function, so a
// call sees the library exactly as FUNCTION LOAD left it, on every replica.
//
// The environment: the library's chunk and every closure it creates share
// one globals table whose metatable's __index is switched, as Redis does:
// while the top-level code runs it reaches only the load API (redis.
// register_function, redis.log, the LOG_* and REDIS_VERSION constants);
// when a function is called it reaches the runtime globals of EVAL scripts
// (without KEYS and ARGV: a function gets its keys and arguments as its two
// parameters).

// funcFlags are a function's flags (the flags of redis.register_function).
type funcFlags uint8

const (
	funcNoWrites funcFlags = 1 << iota
	funcAllowOOM
	funcAllowStale
	funcNoCluster
	funcAllowCrossSlot
)

// funcFlagNames in Redis 7.2's order (script.c scripts_flags_def), which
// FUNCTION LIST follows.
var funcFlagNames = []struct {
	f    funcFlags
	name string
}{
	{funcNoWrites, "no-writes"}, {funcAllowOOM, "allow-oom"}, {funcAllowStale, "allow-stale"},
	{funcNoCluster, "no-cluster"}, {funcAllowCrossSlot, "allow-cross-slot-keys"},
}

// library is one loaded library. It is immutable once loaded.
type library struct {
	name  string
	code  []byte // the whole library, shebang included
	proto *lua.FunctionProto
	funcs []*libFunction // in registration order
}

// libFunction is one registered function of a library.
type libFunction struct {
	lib     *library
	name    string
	desc    []byte
	hasDesc bool
	flags   funcFlags
}

// registration is a function registered while a library's code runs,
// with its Lua callback in that run's state.
type registration struct {
	fn *libFunction
	cb *lua.LFunction
}

const errFunctionNameText = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"

var (
	errMissingMetadata = resp.NewError("ERR Missing library metadata")
	errInvalidMetadata = resp.NewError("ERR Invalid library metadata")
	errNoLibraryName   = resp.NewError("ERR Library name was not given")
	errDupLibraryName  = resp.NewError("ERR Invalid metadata value, name argument was given multiple times")
	errLibraryName     = resp.NewError("ERR " + errFunctionNameText)
	errNoFunctions     = resp.NewError("ERR No functions registered")
)

// libraryMeta is what a library's shebang says.
type libraryMeta struct {
	name string
	body []byte // the code after the shebang line, from its newline on (line numbers are kept)
}

// parseLibraryMeta checks a library's shebang as functionExtractLibMetaData
// does, then its name and engine, with Redis's errors.
func parseLibraryMeta(code []byte) (libraryMeta, error) {
	if !bytes.HasPrefix(code, []byte("#!")) {
		return libraryMeta{}, errMissingMetadata
	}
	nl := bytes.IndexByte(code, '\n')
	if nl < 0 {
		return libraryMeta{}, errInvalidMetadata
	}
	parts, ok := resp.SplitArgs(code[:nl])
	if !ok || len(parts) == 0 {
		return libraryMeta{}, errInvalidMetadata
	}
	engine := ""
	if len(parts[0]) > 2 {
		engine = string(parts[0][2:])
	}
	var name []byte
	for _, p := range parts[1:] {
		if len(p) >= 5 && eq(p[:5], "name=") {
			if name != nil {
				return libraryMeta{}, errDupLibraryName
			}
			name = p[5:]
			continue
		}
		return libraryMeta{}, resp.Errorf("ERR Invalid metadata value given: %s", p)
	}
	if name == nil {
		return libraryMeta{}, errNoLibraryName
	}
	if !validFunctionName(name) {
		return libraryMeta{}, errLibraryName
	}
	if !strings.EqualFold(engine, "lua") {
		return libraryMeta{}, resp.Errorf("ERR Engine '%s' not found", engine)
	}
	return libraryMeta{name: string(name), body: code[nl:]}, nil
}

// validFunctionName: [a-zA-Z0-9_]+, for library and function names.
func validFunctionName(name []byte) bool {
	if len(name) == 0 {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// compileLibrary compiles a library's code after its shebang.
func compileLibrary(body []byte) (*lua.FunctionProto, error) {
	return compileLua(body, "user_function", "ERR Error compiling function")
}

// buildLibrary compiles a library and runs its top-level code once, within
// budget instructions (loadBudget, reloadBudget), to learn its functions
// (FUNCTION LOAD, RESTORE, a snapshot's libraries).
func buildLibrary(meta libraryMeta, code []byte, budget int64) (*library, error) {
	proto, err := compileLibrary(meta.body)
	if err != nil {
		return nil, err
	}
	lib := &library{name: meta.name, code: clone(code), proto: proto}
	r := newScriptRun(nil, meta.name, "@user_function", nil, true, budget)
	L := r.newState()
	defer L.Close()
	regs, _, err := lib.register(L, r)
	if err != nil {
		return nil, err
	}
	if len(regs) == 0 {
		return nil, errNoFunctions
	}
	for _, rg := range regs {
		rg.fn.lib = lib
		lib.funcs = append(lib.funcs, rg.fn)
	}
	return lib, nil
}

// register runs the library's top-level code in L's load environment and
// returns what it registered, and the environment's metatable (whose
// __index a call then points at the runtime globals).
func (lib *library) register(L *lua.LState, r *scriptRun) ([]registration, *lua.LTable, error) {
	var regs []registration
	env, meta := L.NewTable(), L.NewTable()
	meta.RawSetString("__index", loadAPI(L, lib, &regs))
	meta.RawSetString("__newindex", protectedMeta(L).RawGetString("__newindex"))
	meta.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(env, meta)
	fn := L.NewFunctionFromProto(lib.proto)
	fn.Env = env
	L.Push(fn)
	err := L.PCall(0, 0, nil)
	switch {
	case r.budget.exceeded:
		return nil, nil, resp.NewError("ERR Error registering functions: ERR FUNCTION LOAD timeout")
	case err != nil:
		return nil, nil, resp.Errorf("ERR Error registering functions: %s", loadErrorText(err))
	}
	return regs, meta, nil
}

// loadErrorText is the message of an error raised by a library's top-level
// code: a Redis error table's text, or "ERR " and Lua's message.
func loadErrorText(err error) string {
	obj := luaErrorObject(err)
	if t, ok := obj.(*lua.LTable); ok {
		if s, ok := t.RawGetString("err").(lua.LString); ok {
			return oneLine(string(s))
		}
	}
	return "ERR " + oneLine(luaErrString(obj))
}

// loadAPI is what a library's top-level code can reach: only redis, with
// register_function, log and the constants.
func loadAPI(L *lua.LState, lib *library, regs *[]registration) *lua.LTable {
	redis := L.NewTable()
	redis.RawSetString("register_function", L.NewFunction(registerFunction(lib, regs)))
	redis.RawSetString("log", L.NewFunction(luaLog))
	for _, kv := range []struct {
		k string
		v lua.LValue
	}{
		{"LOG_DEBUG", lua.LNumber(0)}, {"LOG_VERBOSE", lua.LNumber(1)}, {"LOG_NOTICE", lua.LNumber(2)},
		{"LOG_WARNING", lua.LNumber(3)}, {"REDIS_VERSION", lua.LString(luaRedisVersion)},
		{"REDIS_VERSION_NUM", lua.LNumber(luaRedisVersionNum)},
	} {
		redis.RawSetString(kv.k, kv.v)
	}
	L.SetMetatable(redis, protectedMeta(L))
	api := L.NewTable()
	api.RawSetString("redis", redis)
	L.SetMetatable(api, protectedMeta(L))
	return api
}

// registerFunction is redis.register_function (function_lua.c): either
// (name, callback) or one table of named arguments.
func registerFunction(lib *library, regs *[]registration) lua.LGFunction {
	return func(L *lua.LState) int {
		var fn *libFunction
		var cb *lua.LFunction
		switch L.GetTop() {
		case 1:
			fn, cb = namedRegisterArgs(L)
		case 2:
			fn, cb = positionalRegisterArgs(L)
		default:
			raiseErr(L, "wrong number of arguments to redis.register_function")
		}
		if !validFunctionName([]byte(fn.name)) {
			raiseErr(L, errFunctionNameText)
		}
		for _, rg := range *regs {
			if rg.fn.name == fn.name {
				raiseErr(L, "Function already exists in the library")
			}
		}
		fn.lib = lib
		*regs = append(*regs, registration{fn: fn, cb: cb})
		return 0
	}
}

func positionalRegisterArgs(L *lua.LState) (*libFunction, *lua.LFunction) {
	name, ok := luaStringArg(L.Get(1))
	if !ok {
		raiseErr(L, "first argument to redis.register_function must be a string")
	}
	cb, ok := L.Get(2).(*lua.LFunction)
	if !ok {
		raiseErr(L, "second argument to redis.register_function must be a function")
	}
	return &libFunction{name: name}, cb
}

func namedRegisterArgs(L *lua.LState) (*libFunction, *lua.LFunction) {
	t, ok := L.Get(1).(*lua.LTable)
	if !ok {
		raiseErr(L, "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
	}
	fn := &libFunction{}
	var cb *lua.LFunction
	hasName := false
	luaForEach(t, func(k, v lua.LValue) {
		key, ok := luaStringArg(k)
		if !ok {
			raiseErr(L, "named argument key given to redis.register_function is not a string")
		}
		switch strings.ToLower(key) {
		case "function_name":
			if fn.name, hasName = luaStringArg(v); !hasName {
				raiseErr(L, "function_name argument given to redis.register_function must be a string")
			}
		case "description":
			d, ok := luaStringArg(v)
			if !ok {
				raiseErr(L, "description argument given to redis.register_function must be a string")
			}
			fn.desc, fn.hasDesc = []byte(d), true
		case "callback":
			if cb, ok = v.(*lua.LFunction); !ok {
				raiseErr(L, "callback argument given to redis.register_function must be a function")
			}
		case "flags":
			ft, ok := v.(*lua.LTable)
			if !ok {
				raiseErr(L, "flags argument to redis.register_function must be a table representing function flags")
			}
			fn.flags = registerFlags(L, ft)
		default:
			raiseErr(L, "unknown argument given to redis.register_function")
		}
	})
	if !hasName {
		raiseErr(L, "redis.register_function must get a function name argument")
	}
	if cb == nil {
		raiseErr(L, "redis.register_function must get a callback argument")
	}
	return fn, cb
}

// registerFlags reads the flags array (1, 2, … up to the first nil).
func registerFlags(L *lua.LState, t *lua.LTable) funcFlags {
	var flags funcFlags
	for i := 1; ; i++ {
		v := t.RawGetInt(i)
		if v == lua.LNil {
			return flags
		}
		s, ok := luaStringArg(v)
		found := false
		for _, fl := range funcFlagNames {
			if ok && strings.EqualFold(s, fl.name) {
				flags |= fl.f
				found = true
				break
			}
		}
		if !found {
			raiseErr(L, "unknown flag given")
		}
	}
}

// luaStringArg is lua_isstring + lua_tostring: strings, and numbers as Lua
// prints them.
func luaStringArg(v lua.LValue) (string, bool) {
	switch v := v.(type) {
	case lua.LString:
		return string(v), true
	case lua.LNumber:
		return luaNumberString(float64(v)), true
	}
	return "", false
}

// runFunction runs fn as called by call (FCALL or FCALL_RO, the function,
// nkeys keys and the arguments).
func runFunction(c *Ctx, fn *libFunction, call [][]byte, nkeys int, readOnly bool) resp.Value {
	keys, argv := call[3:3+nkeys], call[3+nkeys:]
	r := newScriptRun(c, fn.name, "@user_function", keys, readOnly, c.scriptBudget)
	L := r.newState()
	defer L.Close()
	regs, meta, err := fn.lib.register(L, r)
	if r.budget.exceeded {
		return r.budgetError()
	}
	if err != nil {
		return errReply(err)
	}
	var cb *lua.LFunction
	for _, rg := range regs {
		if rg.fn.name == fn.name {
			cb = rg.cb
		}
	}
	if cb == nil { // the library registers differently on a second run: not deterministic
		return errf("ERR Function not found")
	}
	meta.RawSetString("__index", L.Env) // the protected globals (lua_protect.go)
	// Watched from here: the library's registration is short (budgeted)
	// and a kill during it would fail as a registration error.
	defer r.watch(call)()
	return r.invoke(L, cb, luaStrings(L, keys), luaStrings(L, argv))
}

package fsm

import (
	"fmt"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The sandbox of a script run (lua.go): the Lua libraries it may use, its
// protected globals, and the deterministic replacements of pcall,
// tostring, string.format, string.rep and math.random.

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
	// Redis 7.2's globals (script_lua.c's allow lists) less coroutine
	// (below) and newproxy, which gopher-lua lacks; its deny list (dofile,
	// loadfile, print) is absent too.
	for _, name := range []string{"dofile", "loadfile", "print", "_printregs", "module", "require", "_GOPHER_LUA_VERSION",
		"newproxy"} {
		g.RawSetString(name, lua.LNil)
	}
	g.RawSetString("unpack", L.NewFunction(luaUnpack))
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

	// Creating a global, reading a missing one and changing a library are
	// errors, as in Redis 7 (lua_protect.go). The state is fresh for every
	// run anyway, so nothing could leak between scripts.
	protectGlobals(L)
}

// luaStackMax is Lua 5.1's LUAI_MAXCSTACK: lua_checkstack refuses to grow
// a C function's stack beyond it.
const luaStackMax = 8000

// luaUnpack is Lua 5.1's unpack with its limit: Redis's Lua refuses more
// results than the C stack may hold ("too many results to unpack"), and
// gopher-lua's own unpack would push any number of them.
func luaUnpack(L *lua.LState) int {
	t := L.CheckTable(1)
	i := L.OptInt(2, 1)
	e := L.OptInt(3, t.Len())
	if i > e {
		return 0
	}
	n := int64(e) - int64(i) + 1
	if n >= math.MaxInt32 || n+int64(L.GetTop()) > luaStackMax {
		L.RaiseError("too many results to unpack")
	}
	for ; i <= e; i++ {
		L.Push(t.RawGetInt(i))
	}
	return int(n)
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

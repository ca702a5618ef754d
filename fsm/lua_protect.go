package fsm

import (
	lua "github.com/yuin/gopher-lua"
)

// Read-only tables, as Redis 7.2's luaSetTableProtectionRecursively makes
// the globals and every library table (redis, cjson, cmsgpack, bit,
// struct, string, math, table and the string metatable) read-only.
//
// Redis patches its Lua VM with a read-only flag on tables; gopher-lua has
// none, and a raw set of an existing key never consults __newindex. So a
// script sees each protected table through a proxy: an empty table whose
// metatable reads from the real table (__index) and refuses every write
// (__newindex). The real tables hold proxies in place of their nested
// tables, so no path from a script's globals reaches a real table. The
// base functions that bypass metatables (rawset, rawget, setmetatable,
// getmetatable, next, pairs, ipairs, unpack) and the table library's
// mutators are wrapped to see through proxies, or to refuse them, with
// Redis's error texts.

// errReadonly is the VM's error in Redis when a read-only table is written.
const errReadonly = "Attempt to modify a readonly table"

// protection is the proxies of one sandboxed state.
type protection struct {
	proxyOf map[*lua.LTable]*lua.LTable // real table → its proxy
	realOf  map[*lua.LTable]*lua.LTable // proxy → its real table
	refuse  *lua.LFunction              // the proxies' __newindex
}

// protectGlobals makes the globals read-only: missing names are errors,
// every table reachable from the globals is seen through a proxy, and the
// state's environment (of the script's chunk, of loadstring's chunks and
// of functions' callbacks) becomes the globals' proxy.
func protectGlobals(L *lua.LState) {
	p := &protection{proxyOf: map[*lua.LTable]*lua.LTable{}, realOf: map[*lua.LTable]*lua.LTable{}}
	p.refuse = L.NewFunction(func(L *lua.LState) int {
		L.RaiseError(errReadonly)
		return 0
	})
	g := L.G.Global
	p.wrapBase(L, g)
	if t, ok := g.RawGetString(lua.TabLibName).(*lua.LTable); ok {
		p.wrapTableLib(L, t)
	}
	missing := L.NewTable()
	missing.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", luaErrString(L.Get(2)))
		return 0
	}))
	L.SetMetatable(g, missing)
	p.protect(L, missing)
	if mt, ok := L.GetMetatable(lua.LString("")).(*lua.LTable); ok {
		p.protect(L, mt) // its __index, the string table, becomes the proxy
	}
	L.Env = p.protect(L, g)
}

// protect returns t's proxy, made on first use; t's nested tables are
// replaced by their proxies. Iteration uses Next, which follows insertion
// order, so every replica builds the same state.
func (p *protection) protect(L *lua.LState, t *lua.LTable) *lua.LTable {
	if px, ok := p.proxyOf[t]; ok {
		return px
	}
	px := L.NewTable()
	p.proxyOf[t], p.realOf[px] = px, t
	mt := L.NewTable()
	mt.RawSetString("__index", t)
	mt.RawSetString("__newindex", p.refuse)
	L.SetMetatable(px, mt)
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		if nested, ok := v.(*lua.LTable); ok {
			t.RawSet(k, p.protect(L, nested))
		}
	}
	return px
}

// real is the table a value stands for: the real table of a proxy, or
// the value itself.
func (p *protection) real(v lua.LValue) lua.LValue {
	if t, ok := v.(*lua.LTable); ok {
		if r, ok := p.realOf[t]; ok {
			return r
		}
	}
	return v
}

// proxied is the proxy of a real table, or the value itself.
func (p *protection) proxied(v lua.LValue) lua.LValue {
	if t, ok := v.(*lua.LTable); ok && p.proxyOf[t] != nil {
		return p.proxyOf[t]
	}
	return v
}

// refuseProxy raises Redis's error, without a position (the VM raises it
// inside a C function there), when argument 1 is a proxy.
func (p *protection) refuseProxy(L *lua.LState) {
	if t, ok := L.Get(1).(*lua.LTable); ok && p.realOf[t] != nil {
		L.Error(lua.LString(errReadonly), 0)
	}
}

// seeThrough wraps fn so that it gets the real table of a proxy as
// argument 1.
func (p *protection) seeThrough(L *lua.LState, fn lua.LValue) *lua.LFunction {
	return L.NewFunction(func(L *lua.LState) int {
		n := L.GetTop()
		if n >= 1 {
			L.Replace(1, p.real(L.Get(1)))
		}
		L.Insert(fn, 1)
		L.Call(n, lua.MultRet)
		return L.GetTop()
	})
}

// refusing wraps fn so that it refuses a proxy as argument 1.
func (p *protection) refusing(L *lua.LState, fn lua.LValue) *lua.LFunction {
	return L.NewFunction(func(L *lua.LState) int {
		p.refuseProxy(L)
		n := L.GetTop()
		L.Insert(fn, 1)
		L.Call(n, lua.MultRet)
		return L.GetTop()
	})
}

// wrapBase wraps the base functions that bypass metatables.
func (p *protection) wrapBase(L *lua.LState, g *lua.LTable) {
	for _, name := range []string{"rawget", "next", "unpack"} {
		g.RawSetString(name, p.seeThrough(L, g.RawGetString(name)))
	}
	for _, name := range []string{"rawset", "setmetatable"} {
		g.RawSetString(name, p.refusing(L, g.RawGetString(name)))
	}
	next := g.RawGetString("next")
	// pairs and ipairs keep the proxy as their state, so that the real
	// table never reaches the script.
	g.RawSetString("pairs", L.NewFunction(func(L *lua.LState) int {
		t := L.CheckTable(1)
		L.Push(next)
		L.Push(t)
		L.Push(lua.LNil)
		return 3
	}))
	iter := L.NewFunction(func(L *lua.LState) int {
		t, _ := p.real(L.CheckTable(1)).(*lua.LTable)
		i := L.CheckInt(2) + 1
		v := t.RawGetInt(i)
		if v == lua.LNil {
			return 0
		}
		L.Push(lua.LNumber(i))
		L.Push(v)
		return 2
	})
	g.RawSetString("ipairs", L.NewFunction(func(L *lua.LState) int {
		L.Push(iter)
		L.Push(L.CheckTable(1))
		L.Push(lua.LNumber(0))
		return 3
	}))
	g.RawSetString("getmetatable", L.NewFunction(func(L *lua.LState) int {
		var mt lua.LValue
		if t, ok := L.CheckAny(1).(*lua.LTable); ok && p.realOf[t] != nil {
			mt = L.GetMetatable(p.realOf[t])
		} else {
			mt = L.GetMetatable(L.Get(1))
		}
		L.Push(p.proxied(mt))
		return 1
	}))
	// The Go functions' environment is the real globals table.
	getfenv := g.RawGetString("getfenv")
	g.RawSetString("getfenv", L.NewFunction(func(L *lua.LState) int {
		n := L.GetTop()
		L.Insert(getfenv, 1)
		L.Call(n, 1)
		L.Push(p.proxied(L.Get(-1)))
		return 1
	}))
}

// wrapTableLib makes the table library's readers see through proxies and
// its writers refuse them.
func (p *protection) wrapTableLib(L *lua.LState, t *lua.LTable) {
	for _, name := range []string{"concat", "getn", "maxn"} {
		if fn := t.RawGetString(name); fn != lua.LNil {
			t.RawSetString(name, p.seeThrough(L, fn))
		}
	}
	for _, name := range []string{"insert", "remove", "sort"} {
		if fn := t.RawGetString(name); fn != lua.LNil {
			t.RawSetString(name, p.refusing(L, fn))
		}
	}
}

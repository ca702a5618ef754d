package fsm

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"
)

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// luaForEach visits a table's pairs in next() order, which gopher-lua
// keeps in insertion order. LTable.ForEach walks Go maps, in random order,
// and must never be used by the state machine.
func luaForEach(t *lua.LTable, cb func(k, v lua.LValue)) {
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		cb(k, v)
	}
}

// argError raises Lua's "bad argument #n to 'fname' (msg)".
func argError(L *lua.LState, n int, fname, msg string) {
	L.RaiseError("bad argument #%d to '%s' (%s)", n, fname, msg)
}

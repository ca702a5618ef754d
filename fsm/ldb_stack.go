package fsm

import (
	"fmt"
	"strings"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// The debugger's view of the script's call stack: print and trace.

// ldbStack lists the calls on L's stack from the current one out, as
// lua_getstack's levels (their numbers too): gopher-lua answers a level
// of a tail call, which Lua 5.1 reports as "(tail call)" and the debugger
// skips, with a call already listed, which is left out (nil).
func ldbStack(L *lua.LState) []*lua.Debug {
	var out []*lua.Debug
	seen := map[unsafe.Pointer]bool{}
	for level := 0; ; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			return out
		}
		frame, _ := framePC(dbg)
		if seen[frame] {
			dbg = nil
		}
		seen[frame] = true
		out = append(out, dbg)
	}
}

// print is "print <var>": the first local of that name from the current
// call up the stack, else the global KEYS or ARGV (ldbPrint).
func (l *ldb) print(L *lua.LState, name string) {
	for _, dbg := range ldbStack(L) {
		if dbg == nil {
			continue
		}
		found := false
		l.locals(L, dbg, func(local string, v lua.LValue) bool {
			if local != name {
				return true
			}
			l.logMaxLen("<value> " + l.r.ldbValue(v))
			found = true
			return false
		})
		if found {
			return
		}
	}
	if name == "ARGV" || name == "KEYS" {
		l.logMaxLen("<value> " + l.r.ldbValue(L.G.Global.RawGetString(name)))
		return
	}
	l.log("No such variable.")
}

// printAll is "print": every local of the current call (ldbPrintAll).
func (l *ldb) printAll(L *lua.LState) {
	n := 0
	if dbg, ok := L.GetStack(0); ok {
		l.locals(L, dbg, func(name string, v lua.LValue) bool {
			l.logMaxLen(fmt.Sprintf("<value> %s = %s", name, l.r.ldbValue(v)))
			n++
			return true
		})
	}
	if n == 0 {
		l.log("No local variables in the current context.")
	}
}

// locals calls fn with each local variable active in the call dbg at its
// current instruction, in order, until fn returns false. A local is
// active from the instruction after the one that set it up to its
// block's end, as lua_getlocal has it (ldb_locals.go; gopher-lua's own
// GetLocal has other ranges: its names are not used, only its values).
func (l *ldb) locals(L *lua.LState, dbg *lua.Debug, fn func(name string, v lua.LValue) bool) {
	fv, err := L.GetInfo("f", dbg, lua.LNil)
	f, ok := fv.(*lua.LFunction)
	if err != nil || !ok || f.IsG {
		return
	}
	_, pc := framePC(dbg)
	scopes := l.scopes[f.Proto]
	n := 0
	for i, loc := range f.Proto.DbgLocals {
		sc := ldbScope{loc.StartPc, loc.EndPc}
		if scopes != nil {
			sc = scopes[i]
		}
		if sc.start > pc {
			break
		}
		if pc >= sc.end {
			continue
		}
		n++
		_, v := L.GetLocal(dbg, n)
		if !fn(loc.Name, v) {
			return
		}
	}
}

// trace is "trace": the calls of the script's code from the current one
// out, each with its line (ldbTrace).
func (l *ldb) trace(L *lua.LState) {
	stack := ldbStack(L)
	for level, dbg := range stack {
		if dbg == nil {
			continue
		}
		fv, err := L.GetInfo("Snf", dbg, lua.LNil)
		f, ok := fv.(*lua.LFunction)
		if err != nil || !ok || f.IsG || !strings.Contains(dbg.Source, "user_script") {
			continue
		}
		where := "From"
		if level == 0 {
			where = "In"
		}
		_, pc := framePC(dbg)
		l.log(fmt.Sprintf("%s %s:", where, ldbFuncName(dbg.Name)))
		l.logSourceLine(ldbLineOf(f.Proto, pc))
	}
	if len(stack) == 0 {
		l.log("<error> Can't retrieve Lua stack.")
	}
}

// ldbFuncName is the name Redis's trace shows for a call: the name the
// caller called it by, or "top level" when Lua has none (the script
// itself, a function called from Go code such as pcall). gopher-lua names
// those "main chunk" or "<source:line>".
func ldbFuncName(name string) string {
	if name == "" || name == "main chunk" || name == "?" || strings.HasPrefix(name, "<") {
		return "top level"
	}
	return name
}

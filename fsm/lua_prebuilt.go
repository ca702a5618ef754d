package fsm

import (
	"sync/atomic"

	lua "github.com/yuin/gopher-lua"
)

// Building a sandboxed Lua state (opening the libraries, the redis, cjson,
// cmsgpack, bit and struct tables, the protected globals) took 95 % of a
// short script's apply time (issue #16's EVALSHA profile), on the one
// goroutine that applies a group's log. So fresh states are built ahead,
// by a goroutine off that path, and a run takes one ready-made.
//
// Every state is built the same way from nothing and serves one run only,
// so a prebuilt state is exactly the state a run would have built itself:
// replicas still run every script from the same starting point. A state's
// functions are bound to its scriptRun, which the run fills in place
// (newScriptRun).

// prebuiltStates is how many fresh states wait ready; a burst of scripts
// larger than this builds the rest on the apply path, as before.
const prebuiltStates = 8

type luaReady struct {
	r *scriptRun
	L *lua.LState
}

var (
	luaStates   = make(chan luaReady, prebuiltStates)
	luaBuilding atomic.Bool // a builder goroutine is running
)

// takeLuaState returns a fresh state and the scriptRun its functions are
// bound to, and makes sure more are being built.
func takeLuaState() (*scriptRun, *lua.LState) {
	defer refillLuaStates()
	select {
	case s := <-luaStates:
		return s.r, s.L
	default:
		return buildLuaState()
	}
}

// refillLuaStates starts a builder unless one runs; it stops once the
// ready states are enough, so no goroutine outlives the scripts' burst.
func refillLuaStates() {
	if len(luaStates) == cap(luaStates) || !luaBuilding.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer luaBuilding.Store(false)
		for len(luaStates) < cap(luaStates) {
			r, L := buildLuaState()
			select {
			case luaStates <- luaReady{r, L}:
			default:
				L.Close()
				return
			}
		}
	}()
}

// buildLuaState builds a sandboxed state bound to a new, empty scriptRun.
func buildLuaState() (*scriptRun, *lua.LState) {
	r := &scriptRun{}
	L := lua.NewState(lua.Options{SkipOpenLibs: true, CallStackSize: luaCallStack, RegistrySize: luaRegistry,
		RegistryMaxSize: luaRegistryMax, MinimizeStackMemory: true})
	r.setup(L)
	return r, L
}

package fsm

import (
	"fmt"
	"reflect"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1 calls a line hook when a function starts, when the line of the
// instruction about to run differs from the last one's, and on every jump
// back (each turn of a loop written on one line): it compares program
// counters. gopher-lua has no hooks, and its Debug hides the call frame
// and its program counter, which the Lua debugger (ldb_hook.go) needs to
// stop where Redis's stops. They are read here through the offsets
// reflect gives for gopher-lua's own field names, checked once: a
// gopher-lua whose Debug or callFrame lacks them panics at the first
// debugging session (and in TestFramePC), never reads a wrong field.

// frameLayout is where Debug keeps its frame and a frame its Pc.
type frameLayout struct {
	frame uintptr // offset of Debug.frame (a *callFrame)
	pc    uintptr // offset of callFrame.Pc (an int)
}

var luaFrameLayout = func() (l frameLayout) {
	defer func() {
		if p := recover(); p != nil {
			l = frameLayout{frame: ^uintptr(0)}
		}
	}()
	dt := reflect.TypeOf(lua.Debug{})
	ff, ok := dt.FieldByName("frame")
	if !ok || ff.Type.Kind() != reflect.Pointer {
		panic("no frame")
	}
	pf, ok := ff.Type.Elem().FieldByName("Pc")
	if !ok || pf.Type.Kind() != reflect.Int {
		panic("no Pc")
	}
	return frameLayout{frame: ff.Offset, pc: pf.Offset}
}()

// framePC returns the call frame dbg describes (an identity, compared only)
// and the index of the instruction it runs: during the line hook, the one
// about to run; for a caller's frame, its call.
func framePC(dbg *lua.Debug) (frame unsafe.Pointer, pc int) {
	if luaFrameLayout.frame == ^uintptr(0) {
		panic(fmt.Sprintf("fsm: gopher-lua's Debug has no frame with a Pc: the Lua debugger needs them (%T)", dbg))
	}
	frame = *(*unsafe.Pointer)(unsafe.Add(unsafe.Pointer(dbg), luaFrameLayout.frame))
	if frame == nil {
		return nil, -1
	}
	// gopher-lua increments Pc before it polls the context for the
	// instruction (and before a call), so Pc-1 is that instruction.
	return frame, *(*int)(unsafe.Add(frame, luaFrameLayout.pc)) - 1
}

package fsm

import (
	"fmt"
	"strings"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// The debugger's line hook (Redis's luaLdbLineHook). Redis sets a Lua
// hook on line events and on every 100,000th instruction; gopher-lua has
// no hooks, but it asks its context once per instruction whether to stop
// (lua_budget.go), and the debugging session's budget calls hook there.
// It raises the events Lua 5.1 would: a line event when a function starts,
// when the line about to run differs from the last one of the same call,
// and on a jump back (traceexec, ldo.c); a count event every 100,000
// instructions. Only the script's own code ("user_script") stops.

// hook runs before each instruction of a debugging session's script.
func (l *ldb) hook() {
	l.count++
	if l.inHook || l.L == nil {
		return // the debugger's own Lua code (eval, redis) runs unhooked, as in Redis
	}
	L := l.L
	dbg, ok := L.GetStack(0)
	if !ok {
		return
	}
	frame, pc := framePC(dbg)
	if frame == nil || pc < 0 {
		return
	}
	fv, err := L.GetInfo("Sf", dbg, lua.LNil)
	fn, isFn := fv.(*lua.LFunction)
	if err != nil || !isFn || fn.IsG {
		return
	}
	countEvent := l.count%ldbCountEvery == 0
	lineEvent := l.lineEvent(frame, pc, fn.Proto)
	line := ldbLineOf(fn.Proto, pc)
	if countEvent {
		l.event(L, dbg.Source, line, true)
	}
	if lineEvent {
		l.event(L, dbg.Source, line, false)
	}
}

// lineEvent reports whether Lua 5.1 calls the line hook before instruction
// pc of frame: at a function's first instruction, on a jump back, or when
// the line changes. A frame entered from another (a return from a call)
// compares with the instruction before pc, the call, as Lua compares with
// the call's saved program counter.
func (l *ldb) lineEvent(frame unsafe.Pointer, pc int, p *lua.FunctionProto) bool {
	prev := l.lastPC
	if frame != l.lastFrame {
		prev = pc - 1
	}
	l.lastFrame, l.lastPC = frame, pc
	return pc == 0 || pc <= prev || ldbLineOf(p, pc) != ldbLineOf(p, prev)
}

// ldbLineOf is the source line of instruction pc as Lua 5.1 numbers it,
// where gopher-lua numbers it otherwise:
//   - a main chunk's final return: gopher-lua's line is the one after the
//     last (where it read the end of the input), Lua's the line of the
//     last token, the line of the instruction before;
//   - a closure: gopher-lua's line is where its function starts, Lua's
//     where it ends (where Lua makes the closure);
//   - a jump back (a while loop's) or a jump to an earlier line (from the
//     end of an if's then block past its else): gopher-lua's line is the
//     loop's "end" or the "if", Lua's that of the last token before it,
//     the instruction before's.
func ldbLineOf(p *lua.FunctionProto, pc int) int {
	if pc < 0 || pc >= len(p.DbgSourcePositions) {
		return -1
	}
	if p.LineDefined == 0 && pc == len(p.Code)-1 && pc > 0 {
		pc--
	}
	line := ldbRawLine(p, pc)
	if inst := p.Code[pc]; opCode(inst) == lua.OP_JMP && pc > 0 {
		if prev := ldbRawLine(p, pc-1); opSbx(inst) < 0 || line < prev {
			return prev
		}
	}
	return line
}

// ldbRawLine is gopher-lua's line of instruction pc, a closure's moved to
// its function's end.
func ldbRawLine(p *lua.FunctionProto, pc int) int {
	if inst := p.Code[pc]; opCode(inst) == lua.OP_CLOSURE && opBx(inst) < len(p.FunctionPrototypes) {
		return p.FunctionPrototypes[opBx(inst)].LastLineDefined
	}
	return p.DbgSourcePositions[pc]
}

// event is one call of Redis's hook: it stops the script when it steps,
// is at a breakpoint, called redis.breakpoint(), or (count events) has run
// longer than the time limit since it last resumed.
func (l *ldb) event(L *lua.LState, source string, line int, count bool) {
	l.currentLine = line
	bp := l.isBreakpoint(line) || l.luabp
	if !strings.Contains(source, "user_script") {
		return
	}
	timeout := false
	if count && !l.step && !bp {
		if l.clock == nil || l.clock()-l.started < l.timeLimit {
			return
		}
		timeout, l.step = true, true
	}
	if !l.step && !bp {
		return
	}
	reason := "step over"
	switch {
	case bp && l.luabp:
		reason = "redis.breakpoint() called"
	case bp:
		reason = "break point"
	case timeout:
		reason = "timeout reached, infinite loop?"
	}
	l.step, l.luabp = false, false
	l.logMust(fmt.Sprintf("* Stopped at %d, stop reason = %s", line, reason))
	l.logMust(l.sourceLineText(line))
	l.send()
	if err := l.replUnhooked(L); err != nil && timeout {
		// The client is gone while the script loops: end it, or it would
		// run until the budget ends it with nobody to see it.
		raiseErr(L, "timeout during Lua debugging with client closing connection")
	}
	if l.clock != nil {
		l.started = l.clock()
	}
}

// replUnhooked runs the REPL with the hook off, whatever the commands
// raise.
func (l *ldb) replUnhooked(L *lua.LState) error {
	l.inHook = true
	defer func() { l.inHook = false }()
	return l.repl(L)
}

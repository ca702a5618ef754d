package fsm

import (
	"bytes"
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/slotraft/slotraft/resp"
)

// The debugger's commands, as Redis's ldbRepl runs them: each logs its
// output and sends it, except step, next and continue, which resume the
// script, and abort, which fails it.

var ldbHelp = []string{
	"Redis Lua debugger help:",
	"[h]elp               Show this help.",
	"[s]tep               Run current line and stop again.",
	"[n]ext               Alias for step.",
	"[c]ontinue           Run till next breakpoint.",
	"[l]ist               List source code around current line.",
	"[l]ist [line]        List source code around [line].",
	"                     line = 0 means: current position.",
	"[l]ist [line] [ctx]  In this form [ctx] specifies how many lines",
	"                     to show before/after [line].",
	"[w]hole              List all source code. Alias for 'list 1 1000000'.",
	"[p]rint              Show all the local variables.",
	"[p]rint <var>        Show the value of the specified variable.",
	"                     Can also show global vars KEYS and ARGV.",
	"[b]reak              Show all breakpoints.",
	"[b]reak <line>       Add a breakpoint to the specified line.",
	"[b]reak -<line>      Remove breakpoint from the specified line.",
	"[b]reak 0            Remove all breakpoints.",
	"[t]race              Show a backtrace.",
	"[e]val <code>        Execute some Lua code (in a different callframe).",
	"[r]edis <cmd>        Execute a Redis command.",
	"[m]axlen [len]       Trim logged Redis replies and Lua var dumps to len.",
	"                     Specifying zero as <len> means unlimited.",
	"[a]bort              Stop the execution of the script. In sync",
	"                     mode dataset changes will be retained.",
	"",
	"Debugger functions you can call from Lua scripts:",
	"redis.debug()        Produce logs in the debugger console.",
	"redis.breakpoint()   Stop execution like if there was a breakpoint in the",
	"                     next line of code.",
}

// run runs one debugger command; true when it resumes the script.
func (l *ldb) run(L *lua.LState, argv [][]byte) (resume bool) {
	is := func(short, long string) bool { return eq(argv[0], short) || eq(argv[0], long) }
	switch {
	case is("h", "help"):
		for _, line := range ldbHelp {
			l.log(line)
		}
	case is("s", "step"), is("n", "next"):
		l.step = true
		return true
	case is("c", "continue"):
		return true
	case is("t", "trace"):
		l.trace(L)
	case is("m", "maxlen"):
		l.setMaxlen(argv)
	case is("b", "break"):
		l.breakpoints(argv)
	case is("e", "eval"):
		l.eval(argv)
	case is("a", "abort"):
		raiseErr(L, "script aborted for user request")
	case len(argv) > 1 && is("r", "redis"):
		l.redis(argv)
	case is("p", "print"):
		if len(argv) == 2 {
			l.print(L, string(argv[1]))
		} else {
			l.printAll(L)
		}
	case is("l", "list"):
		around, ctx := l.currentLine, 5
		if len(argv) > 1 {
			if n := cAtoi(argv[1]); n > 0 {
				around = n
			}
		}
		if len(argv) > 2 {
			ctx = cAtoi(argv[2])
		}
		l.list(around, ctx)
	case is("w", "whole"):
		l.list(1, 1000000)
	default:
		l.log("<error> Unknown Redis Lua debugger command or wrong number of arguments.")
	}
	l.send()
	return false
}

// list logs the lines within ctx of around, or all of them for around 0.
func (l *ldb) list(around, ctx int) {
	for j := 1; j <= len(l.src); j++ {
		if d := around - j; around != 0 && (d > ctx || -d > ctx) {
			continue
		}
		l.logSourceLine(j)
	}
}

// breakpoints is "break": list them, add (b 3), remove (b -3) or clear
// (b 0), each argument in turn (ldbBreak).
func (l *ldb) breakpoints(argv [][]byte) {
	if len(argv) == 1 {
		if len(l.bp) == 0 {
			l.log("No breakpoints set. Use 'b <line>' to add one.")
			return
		}
		l.log(fmt.Sprintf("%d breakpoints set:", len(l.bp)))
		for _, b := range l.bp {
			l.logSourceLine(b)
		}
		return
	}
	for _, arg := range argv[1:] {
		n, err := resp.ParseInt(arg)
		switch {
		case err != nil:
			l.log(fmt.Sprintf("Invalid argument:'%s'", arg))
		case n == 0:
			l.bp = nil
			l.log("All breakpoints removed.")
		case n > 0 && len(l.bp) == ldbMaxBreakpoints:
			l.log("Too many breakpoints set.")
		case n > 0 && n <= int64(len(l.src)) && !l.isBreakpoint(int(n)):
			l.bp = append(l.bp, int(n))
			l.list(int(n), 1)
		case n > 0:
			l.log("Wrong line number.") // out of range, or set already, as Redis says
		case l.removeBreakpoint(-n):
			l.log("Breakpoint removed.")
		default:
			l.log("No breakpoint in the specified line.")
		}
	}
}

// removeBreakpoint removes the breakpoint at line, keeping the others in
// order. (Redis's ldbDelBreakpoint moves bytes where it means ints, so
// removing one but the last one there also changes the next one's line:
// not copied.)
func (l *ldb) removeBreakpoint(line int64) bool {
	for i, b := range l.bp {
		if int64(b) == line {
			l.bp = append(l.bp[:i], l.bp[i+1:]...)
			return true
		}
	}
	return false
}

// setMaxlen is "maxlen [len]": show or set the length logged replies and
// values are trimmed to; 0 is no limit, 1 to 60 are 60 (ldbMaxlen).
func (l *ldb) setMaxlen(argv [][]byte) {
	if len(argv) == 2 {
		n := cAtoi(argv[1])
		l.hintSent = true // the user knows about this command
		if n != 0 && n <= 60 {
			n = 60
		}
		l.maxlen = n
	}
	if l.maxlen != 0 {
		l.log(fmt.Sprintf("<value> replies are truncated at %d bytes.", l.maxlen))
	} else {
		l.log("<value> replies are unlimited.")
	}
}

// eval is "eval <code>": the code as an expression ("return <code>") or,
// if that does not compile, as statements, run in its own call frame
// (ldbEval). It sees the globals, not the script's locals.
func (l *ldb) eval(argv [][]byte) {
	code := string(bytes.Join(argv[1:], []byte(" ")))
	proto, err := compileLDBChunk("return " + code)
	if err != nil {
		if proto, err = compileLDBChunk(code); err != nil {
			l.log("<error> " + err.Error())
			return
		}
	}
	T := l.luaThread()
	defer T.SetTop(0)
	T.Push(T.NewFunctionFromProto(proto))
	if err := T.PCall(0, 1, nil); err != nil {
		l.log("<error> " + ldbErrorText(err))
		return
	}
	l.logMaxLen("<retval> " + l.r.ldbValue(T.Get(-1)))
}

// compileLDBChunk compiles code as the chunk "@ldb_eval" (its errors name
// ldb_eval). The syntax errors are gopher-lua's words.
func compileLDBChunk(code string) (*lua.FunctionProto, error) {
	chunk, err := parse.Parse(strings.NewReader(code), "ldb_eval")
	if err != nil {
		return nil, err
	}
	return lua.Compile(chunk, "ldb_eval")
}

// ldbErrorText is what Lua's tostring makes of an error: its message, or
// for a Redis error table its err field.
func ldbErrorText(err error) string {
	switch o := luaErrorObject(err).(type) {
	case *lua.LTable:
		if s, ok := o.RawGetString("err").(lua.LString); ok {
			return string(s)
		}
		return "table"
	default:
		return luaErrString(o)
	}
}

// redis is "redis <cmd> …": the command run by redis.call, logged as if
// the script stepped (ldbRedis). Its error is logged, not raised.
func (l *ldb) redis(argv [][]byte) {
	T := l.luaThread()
	defer T.SetTop(0)
	call := T.GetField(T.GetGlobal("redis"), "call")
	T.Push(call)
	for _, a := range argv[1:] {
		T.Push(lua.LString(a))
	}
	l.step = true
	_ = T.PCall(len(argv)-1, 1, nil)
	l.step = false
}

// luaThread is the thread the debugger runs Lua code on: it shares the
// script's globals and budget but has its own stack, so it cannot disturb
// the registers of the instruction the script stopped before.
func (l *ldb) luaThread() *lua.LState {
	if l.thread == nil {
		T, cancel := l.L.NewThread()
		if cancel != nil {
			cancel()
		}
		T.SetContext(l.L.Context())
		l.thread = T
	}
	return l.thread
}

package fsm

import (
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/slotraft/slotraft/resp"
)

// What the script's redis.* API does for the debugger: redis.breakpoint
// and redis.debug, which do nothing outside a debugging session, and the
// lines a session logs while it steps: "<redis>" for each command the
// script calls, "<reply>" for its reply, "<error>" for each error the API
// makes (eval.c, script_lua.c).

// breakpoint is redis.breakpoint(): in a debugging session the script
// stops at its next line, and it returns true; false otherwise.
func (r *scriptRun) breakpoint(L *lua.LState) int {
	l := r.budget.ldb
	if l != nil {
		l.luabp = true
	}
	L.Push(lua.LBool(l != nil))
	return 1
}

// debugLog is redis.debug(…): in a debugging session, a "<debug>" line
// with the current line and the arguments as the debugger shows values;
// nothing otherwise.
func (r *scriptRun) debugLog(L *lua.LState) int {
	l := r.budget.ldb
	if l == nil {
		return 0
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<debug> line %d: ", l.currentLine)
	for i := 1; i <= L.GetTop(); i++ {
		if i > 1 {
			b.WriteString(", ")
		}
		b.WriteString(r.ldbValue(L.Get(i)))
	}
	l.log(b.String())
	return 0
}

// stepping is the session's debugger while it logs what the script's
// calls do: when the script runs the line it stepped to, or the
// debugger's redis command (Redis's ldbIsEnabled); nil otherwise.
func (r *scriptRun) stepping() *ldb {
	if l := r.budget.ldb; l != nil && l.step {
		return l
	}
	return nil
}

// logCommand logs a command the script calls: "<redis>" and its first ten
// arguments as they are.
func (l *ldb) logCommand(args [][]byte) {
	var b strings.Builder
	b.WriteString("<redis>")
	for j, a := range args {
		if j == 10 {
			fmt.Fprintf(&b, " ... (%d more)", len(args)-j-1)
			break
		}
		b.WriteByte(' ')
		b.Write(a)
	}
	l.log(b.String())
}

// logReply logs the reply of a command the script called, as the script's
// protocol has it.
func (l *ldb) logReply(v resp.Value, proto int) {
	l.logMaxLen("<reply> " + ldbReply(v, proto))
}

// logError logs an error the redis.* API makes, as it is worded before
// the ERR code is added (luaPushErrorBuff).
func (l *ldb) logError(text string) {
	if l.step {
		l.log("<error> " + text)
	}
}

// endText is the error a session ended from outside fails its script
// with (DebugEnd).
func (l *ldb) endText() string {
	if l.end != nil {
		if s := l.end.reason.Load(); s != nil {
			return *s
		}
	}
	return errScriptKilled
}

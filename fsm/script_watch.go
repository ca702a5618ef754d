package fsm

import (
	"sync/atomic"

	lua "github.com/yuin/gopher-lua"

	"github.com/slotraft/slotraft/resp"
)

// The script watch tells the node which scripts run in a group, so that
// it can answer -BUSY for the group while one runs too long and stop a
// read-only one on SCRIPT KILL or FUNCTION KILL (Redis's busy scripts).
//
// Only a script run outside Apply (EVAL_RO, FCALL_RO, a no-writes EVAL
// routed as a read) can be killed: a run inside Apply is replicated, every
// replica must end it the same way, and a kill is one node's wish at one
// moment. Such a run ends by itself or by the instruction budget, which
// every replica counts alike (lua_budget.go). fsm itself reads no clock:
// the hook, the node's, times the runs.

// ScriptRun is what the script hook (FSM.SetScriptHook) learns of a script
// run that starts.
type ScriptRun struct {
	Function bool // FCALL or FCALL_RO; otherwise EVAL and its kin
	// Name and Call, for a function: its name and the command that calls
	// it (FUNCTION STATS shows them). Call is valid until the run ends:
	// the hook copies it to keep it.
	Name string
	Call [][]byte
	// InApply: the run is part of a log entry, on every replica; it
	// cannot be killed, and counts as having written (Redis's
	// SCRIPT_WRITE_DIRTY), since its effects are replicated as a whole.
	InApply bool
	// Kill, for a run outside Apply, stops the script at its next
	// instruction when set; nil for a run inside Apply.
	Kill *atomic.Bool
}

// errScriptKilled is the error a killed script raises, Redis 7.2's text
// (script_lua.c luaMaskCountHook); the reply adds the script and line.
const errScriptKilled = "ERR Script killed by user with SCRIPT KILL..."

// SetScriptHook makes every script run call fn as it starts and the
// function fn returns as it ends. fn is called in Apply too: it must not
// change what the script does, only record it. Call it before Raft starts.
func (f *FSM) SetScriptHook(fn func(ScriptRun) (done func())) { f.state.scriptHook = fn }

// watch tells the hook that r starts, a function called by call (nil for
// a script); the returned function tells it that r ended. A run outside
// Apply gets a kill switch its budget polls.
func (r *scriptRun) watch(call [][]byte) (done func()) {
	hook := r.c.scriptHook
	if hook == nil {
		return func() {}
	}
	run := ScriptRun{Function: call != nil, InApply: r.c.Index != 0, Call: call}
	if call != nil {
		run.Name = r.sha // a function's name (newScriptRun)
	}
	if !run.InApply {
		run.Kill = new(atomic.Bool)
		r.budget.kill = run.Kill
	}
	return hook(run)
}

// killedReply is the reply of a killed run, as Redis's: the error table
// the error handler made names the Lua line the script was at.
func (r *scriptRun) killedReply(err error) resp.Value {
	text := errScriptKilled
	if r.budget.ldb != nil {
		text = r.budget.ldb.endText() // a debugging session says why it ended (ldb_copy.go)
	}
	if err != nil {
		if t, ok := luaErrorObject(err).(*lua.LTable); ok {
			t.RawSetString("err", lua.LString(text))
			return r.errorReply(err)
		}
	}
	return resp.Err(resp.Errorf("%s script: %s", text, r.sha))
}

package fsm

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync/atomic"

	"github.com/slotraft/slotraft/resp"
)

// The script budget is the number of Lua instructions one script (EVAL,
// FCALL) may execute. A script that goes beyond it stops with an error;
// the writes it made before stay applied, as with any script error in
// Redis. Since a script's outcome depends on it, it is replicated state:
// the group setting SettingScriptBudget, set through the group's log, so
// every replica uses the value of the entry's log position (a node-local
// value would let replicas diverge during a rolling config change).

// DefaultScriptBudget is the script budget of a group whose setting is
// unset or not a positive decimal number (roughly 1 to 3 seconds of CPU).
const DefaultScriptBudget = 100_000_000

// scriptBudgetOf is the script budget that settings hold. It is total, as
// Apply must be: a value the log holds but that is not a positive number
// means the default, on every replica alike.
func scriptBudgetOf(settings map[string]string) int64 {
	v := settings[SettingScriptBudget]
	if v == "" { // the usual case, without ParseInt's error
		return DefaultScriptBudget
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return DefaultScriptBudget
	}
	return n
}

// loadBudget is the budget of a library's top-level code at FUNCTION LOAD
// and RESTORE: a tenth of the script budget (10,000,000 by default), as
// Redis's FUNCTION LOAD timeout (500 ms) is a tenth of its busy-script
// threshold (5 s).
func loadBudget(scriptBudget int64) int64 { return max(scriptBudget/10, 1) }

// reloadBudget is the budget of libraries a group already accepted, loaded
// again from a snapshot or another node's FUNCTION DUMP: none, as Redis
// loads an RDB's libraries without a timeout. Each ran within the budget
// of its own log position, which the setting may have lowered since, and
// a replica that refused them could not restore its group's snapshot.
const reloadBudget = math.MaxInt64

// ScriptBudgetEntry is the settings entry that sets the group's script
// budget to n instructions; n <= 0 removes the setting, so the group goes
// back to DefaultScriptBudget.
func ScriptBudgetEntry(n int64) *Entry {
	if n <= 0 {
		return SettingsEntry(SettingScriptBudget, "")
	}
	return SettingsEntry(SettingScriptBudget, strconv.FormatInt(n, 10))
}

// budgetCtx is the context gopher-lua polls once per instruction. kill,
// set for a run outside Apply only (script_watch.go), stops it on SCRIPT
// KILL or FUNCTION KILL; a run in Apply never reads it, so every replica
// stops at the same instruction.
type budgetCtx struct {
	context.Context
	n, limit int64
	exceeded bool
	kill     *atomic.Bool
	killed   bool
	// ldb, in a Lua debugging session only, is its debugger, whose line
	// hook runs before every instruction (ldb_hook.go); nil otherwise, so
	// an ordinary run pays one comparison for it.
	ldb *ldb
}

var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

var errBudgetCtx = errors.New("script execution budget exceeded")

var errKilledCtx = errors.New("script killed")

func (b *budgetCtx) Done() <-chan struct{} {
	b.n++
	if b.n > b.limit {
		b.exceeded = true
		return closedCh
	}
	if b.kill != nil && (b.killed || b.kill.Load()) {
		b.killed = true // it stays killed: a pcall cannot catch the kill for good
		return closedCh
	}
	if b.ldb != nil {
		b.ldb.hook()
	}
	return nil
}

func (b *budgetCtx) Err() error {
	switch {
	case b.exceeded:
		return errBudgetCtx
	case b.killed:
		return errKilledCtx
	}
	return nil
}

func (r *scriptRun) budgetError() resp.Value {
	return resp.Err(resp.Errorf("ERR Script exceeded the execution budget of %d Lua instructions script: %s", r.budget.limit, r.sha))
}

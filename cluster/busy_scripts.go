package cluster

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotraft/slotraft/fsm"
)

// The node's record of the Lua scripts running in the groups it hosts
// (fsm.FSM.SetScriptHook), for Redis's busy scripts: the front end answers
// -BUSY for a group whose script has run longer than busy-reply-threshold,
// and SCRIPT KILL or FUNCTION KILL stop one that runs outside Apply.
//
// What a script blocks: one inside Apply holds its group's state lock on
// every replica, so nothing of that group can be read or applied there
// until it ends; one outside Apply (a read-only script on the leader)
// holds the read lock, so the group's next entry waits, and with it every
// read that comes after (a Go RWMutex lets no new reader in while a writer
// waits). Either way the group, and only it, is busy on this node.

// RunningScript describes a script running on this node.
type RunningScript struct {
	Group    uint32
	Started  time.Time
	Function bool // FCALL or FCALL_RO; otherwise EVAL and its kin
	// Name and Command, for a function: its name and the command that
	// called it (FUNCTION STATS's running_script).
	Name    string
	Command [][]byte
	// Written: the script runs inside Apply, replicated, so it counts as
	// having written (Redis's SCRIPT_WRITE_DIRTY) and cannot be killed.
	Written bool
}

// KillResult is what SCRIPT KILL or FUNCTION KILL did (Node.KillScripts).
type KillResult int

const (
	KillNotBusy    KillResult = iota // no script has run past the threshold
	KillWrongKind                    // only scripts of the other kind (functions for SCRIPT KILL)
	KillReplicated                   // only scripts inside Apply of groups this node follows
	KillUnkillable                   // scripts inside Apply of a group led here, none killable
	KillDone                         // the killable scripts of the kind asked for are stopping
)

// busyScripts is the record; its zero value is empty.
type busyScripts struct {
	count atomic.Int32 // len(runs), read without the lock on every command
	mu    sync.Mutex
	seq   uint64
	runs  map[uint64]*scriptRec
}

type scriptRec struct {
	RunningScript
	kill *atomic.Bool // nil inside Apply
}

// start records a run of group gid that starts now and returns the
// function that removes it (the script hook's contract).
func (b *busyScripts) start(gid uint32, r fsm.ScriptRun) func() {
	rec := &scriptRec{RunningScript: RunningScript{Group: gid, Started: time.Now(), Function: r.Function,
		Name: r.Name, Written: r.InApply}, kill: r.Kill}
	for _, a := range r.Call { // r.Call lives only as long as the run
		rec.Command = append(rec.Command, bytes.Clone(a))
	}
	b.mu.Lock()
	if b.runs == nil {
		b.runs = map[uint64]*scriptRec{}
	}
	b.seq++
	id := b.seq
	b.runs[id] = rec
	b.count.Add(1)
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		delete(b.runs, id)
		b.count.Add(-1)
		b.mu.Unlock()
	}
}

// timedOut returns the runs that started at least threshold ago, in no
// particular order; none when threshold <= 0 (Redis's 0: never busy).
func (b *busyScripts) timedOut(threshold time.Duration) []*scriptRec {
	if threshold <= 0 || b.count.Load() == 0 {
		return nil
	}
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*scriptRec
	for _, r := range b.runs {
		if now.Sub(r.Started) >= threshold { // Sub saturates: any threshold is safe
			out = append(out, r)
		}
	}
	return out
}

// BusyScript is the script that makes group gid busy on this node: the
// oldest one running there for at least threshold (threshold <= 0: none).
func (n *Node) BusyScript(gid uint32, threshold time.Duration) (RunningScript, bool) {
	return n.scripts.oldest(threshold, func(r *scriptRec) bool { return r.Group == gid })
}

// AnyBusyScript is the oldest script running on this node for at least
// threshold, in any group (SHUTDOWN without NOSAVE is refused then).
func (n *Node) AnyBusyScript(threshold time.Duration) (RunningScript, bool) {
	return n.scripts.oldest(threshold, func(*scriptRec) bool { return true })
}

// oldest is the oldest run that match accepts among those that started at
// least threshold ago.
func (b *busyScripts) oldest(threshold time.Duration, match func(*scriptRec) bool) (RunningScript, bool) {
	var old *scriptRec
	for _, r := range b.timedOut(threshold) {
		if match(r) && (old == nil || r.Started.Before(old.Started)) {
			old = r
		}
	}
	if old == nil {
		return RunningScript{}, false
	}
	return old.RunningScript, true
}

// StopScripts stops every script running outside Apply on this node,
// whatever its age or kind, as SHUTDOWN NOSAVE does in Redis: the node is
// about to stop, and its groups' Apply, which Close waits for, would wait
// for their read locks as long as such a script runs.
func (n *Node) StopScripts() { n.scripts.killAll() }

func (b *busyScripts) killAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.runs {
		if r.kill != nil {
			r.kill.Store(true)
		}
	}
}

// KillScripts stops the scripts of one kind (functions or not) that have
// run for at least threshold outside Apply, as SCRIPT KILL (function
// false) or FUNCTION KILL does. Redis runs one script at a time; here
// several groups, and several reads of one group, may each run one, so
// every killable one of that kind is stopped. Each answers its caller
// with the killed-script error at its next instruction.
func (n *Node) KillScripts(function bool, threshold time.Duration) KillResult {
	runs := n.scripts.timedOut(threshold)
	if len(runs) == 0 {
		return KillNotBusy
	}
	res := KillWrongKind
	for _, r := range runs {
		got := KillWrongKind
		switch {
		case r.kill != nil && r.Function == function:
			r.kill.Store(true)
			got = KillDone
		case r.Written && n.leads(r.Group):
			got = KillUnkillable
		case r.Written: // Redis's replica running its master's script
			got = KillReplicated
		}
		res = max(res, got) // the most telling outcome, in the constants' order
	}
	return res
}

// leads reports whether this node leads group gid.
func (n *Node) leads(gid uint32) bool {
	g, ok := n.Group(gid)
	return ok && g.IsLeader()
}

// SetScriptBudget sets group gid's script budget, the number of Lua
// instructions after which a script stops (fsm.ScriptBudgetEntry; n <= 0
// restores the default): it is what ends a script that runs inside Apply,
// which no SCRIPT KILL may stop.
func (n *Node) SetScriptBudget(ctx context.Context, gid uint32, budget int64) error {
	return n.proposeTo(ctx, gid, fsm.ScriptBudgetEntry(budget))
}

package fsm

import (
	"io"
	"maps"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotraft/slotraft/acl"
	"github.com/slotraft/slotraft/resp"
)

// A Lua debugging session (SCRIPT DEBUG YES) runs its EVAL as Redis's
// forked debugging child does: against a copy of the dataset taken when
// it starts, whose changes are thrown away when it ends. Here the copy is
// a DebugCopy of the group's state, taken in O(1) (copy-on-write,
// store.Fork) under the state's lock at one applied log index — the node
// takes it after a read barrier, so it holds every write acknowledged
// before the EVAL — and never goes through the log: no replica sees the
// session, and Apply goes on while the client steps through the script.
//
// The copy shares structures with the live store until either side
// changes them, so the commands the script calls run under the live
// state's write lock, one at a time, as short as the same command in
// Apply; the script's own Lua code and the debugger's waits for the
// client hold no lock.

// DebugCopy is a private copy of a group's state for one debugging
// session. It is used by one goroutine.
type DebugCopy struct {
	st   *State
	live *sync.RWMutex
}

// DebugCopy takes a copy of the state as of the last applied entry.
func (s *State) DebugCopy() *DebugCopy {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &State{group: s.group, store: s.store.Fork(), lastNow: s.lastNow, blk: newBlockState(),
		settings: s.settings, accessHook: s.accessHook}
	st.mig.out = maps.Clone(s.mig.out)
	if len(s.mig.frozen) > 0 {
		st.mig.frozen = make(map[uint16]map[string]struct{}, len(s.mig.frozen))
		for slot, keys := range s.mig.frozen {
			st.mig.frozen[slot] = maps.Clone(keys)
		}
	}
	return &DebugCopy{st: st, live: &s.mu}
}

// DebugOpts are a debugging session's connection to its client and its
// bounds.
type DebugOpts struct {
	// Conn is the client's connection: Read returns what it sends (an
	// error once it is gone or the session is ended), Write sends it the
	// debugger's output.
	Conn io.ReadWriter
	// End ends the session from another goroutine; nil if nothing will.
	End *DebugEnd
	// User is whom the script calls commands as (nil: allowed everything).
	User *acl.User
	// Clock is a monotonic clock; with it, a script that runs TimeLimit
	// (0: 5 s, Redis's default) without stopping stops, as Redis's does
	// after busy-reply-threshold. Without it, it never does.
	Clock     func() time.Duration
	TimeLimit time.Duration
}

// DebugEnd ends a debugging session from another goroutine: the script
// fails at its next instruction with the reason's error, as a killed
// script does, and the session ends.
type DebugEnd struct {
	flag   atomic.Bool
	reason atomic.Pointer[string]
}

// End ends the session with reason, a Redis error text ("ERR …"); the
// first reason given wins.
func (e *DebugEnd) End(reason string) {
	e.reason.CompareAndSwap(nil, &reason)
	e.flag.Store(true)
}

// Kill ends the session as SCRIPT KILL ends a script, with its error.
func (e *DebugEnd) Kill() { e.End(errScriptKilled) }

// Ended reports whether End or Kill was called.
func (e *DebugEnd) Ended() bool { return e.flag.Load() }

// debugIndex is the log index the session's changes carry: past any
// real one, so nothing in the copy mistakes them for applied entries.
const debugIndex = math.MaxUint64

// Eval runs args (EVAL or EVAL_RO: name, script, numkeys, keys…, args…)
// as a debugging session at time now and returns the EVAL's reply. The
// session has ended when it returns: the client has had the debugger's
// last lines and "<endsession>", and the caller sends it the reply, then
// closes the connection, as Redis does. Any error the EVAL has (numkeys,
// compilation, shebang) ends the session before it starts.
func (d *DebugCopy) Eval(now int64, args [][]byte, readOnly bool, opts DebugOpts) resp.Value {
	l := newLDB(args[1], opts)
	v := d.eval(max(now, d.st.lastNow), args, readOnly, opts.User, l)
	l.logMust("<endsession>")
	l.send()
	return v
}

func (d *DebugCopy) eval(now int64, args [][]byte, readOnly bool, user *acl.User, l *ldb) resp.Value {
	nkeys, err := ParseNumKeys(args)
	if err != nil {
		return errReply(err)
	}
	body := args[1]
	cs, chunk, err := compileScriptChunk(body)
	if err != nil {
		return errReply(err)
	}
	l.scopes = scriptScopes(chunk, cs.proto)
	if err := cs.checkRun(readOnly); err != nil {
		return errReply(err)
	}
	st := d.st
	c := &Ctx{Store: st.store, Now: now, Index: debugIndex, seed: [2]uint64{uint64(now), debugIndex},
		scriptBudget: scriptBudgetOf(st.settings), user: user, shared: d.live, pos: noPos}
	if readOnly {
		c.Index = 0 // a read: no expired key is deleted either
	}
	c.moved = st.movedCheck(c)
	c.withAccess(st.accessSettings(), true) // the copy records no accesses
	keys, argv := args[3:3+nkeys], args[3+nkeys:]
	r := newScriptRun(c, SHA1Hex(body), "@user_script", keys, readOnly || cs.flags.NoWrites, c.scriptBudget)
	r.budget.ldb, l.r = l, r
	if l.end != nil {
		r.budget.kill = &l.end.flag
	}
	L := r.newState()
	defer L.Close()
	l.L = L
	L.G.Global.RawSetString("KEYS", luaStrings(L, keys))
	L.G.Global.RawSetString("ARGV", luaStrings(L, argv))
	return r.invoke(L, L.NewFunctionFromProto(cs.proto))
}

package server

import (
	"strconv"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// maxmemory: the CONFIG parameters reach the node's evictor
// (cluster/eviction.go), and writes that may grow memory are refused with
// -OOM while the node is over its limit with nothing to evict (or under
// noeviction), where Redis's processCommand refuses them.

// errOOM is Redis's shared.oomerr.
var errOOM = resp.NewError("OOM command not allowed when used memory > 'maxmemory'.")

// evictionConfig is the node's eviction setting from the CONFIG values.
func (s *Server) evictionConfig() cluster.EvictionConfig {
	num := func(name string) int64 {
		n, _ := strconv.ParseInt(s.configValue(name), 10, 64)
		return n
	}
	mm, _ := strconv.ParseUint(s.configValue("maxmemory"), 10, 64)
	policy, _ := store.EvictPolicyNamed(s.configValue("maxmemory-policy")) // the CONFIG enum's names
	return cluster.EvictionConfig{
		MaxMemory: int64(min(mm, 1<<62)),
		Policy:    policy,
		Samples:   int(num("maxmemory-samples")),
		Tenacity:  int(num("maxmemory-eviction-tenacity")),
		Access:    store.AccessParams{LogFactor: int(num("lfu-log-factor")), DecayTime: int(num("lfu-decay-time"))},
	}
}

// refreshEviction hands the node the CONFIG values when they changed.
func (s *Server) refreshEviction() {
	if c := s.evictionConfig(); c != s.n.Eviction() {
		s.n.SetEviction(c)
	}
}

// errExecAbortOOM is EXEC's reply when its transaction holds a command
// that may grow memory while the node is out of memory (Redis's
// execCommandAbort of a rejected EXEC).
var errExecAbortOOM = resp.NewError("EXECABORT Transaction discarded because of: OOM command not allowed when used memory > 'maxmemory'.")

// queuedUnlessOOM answers a command to be queued in MULTI: refused with
// -OOM, whatever the command, while the node is out of memory (queuing
// could grow memory without bound, Redis's reasoning).
func (s *Server) queuedUnlessOOM() resp.Value {
	if s.n.OutOfMemory() {
		return resp.Err(errOOM)
	}
	return resp.Queued()
}

// txOutOfMemory reports whether EXEC must refuse tx: a queued command may
// grow memory and the node is out of memory.
func (s *Server) txOutOfMemory(tx *txState) bool {
	for _, q := range tx.queued {
		if q.cmd.meta.Is(resp.FlagDenyOOM) {
			return s.n.OutOfMemory()
		}
	}
	return false
}

// errScriptOOM is scriptPrepareForRun's refusal of a script whose
// shebang does not say allow-oom (script.c).
var errScriptOOM = resp.NewError("OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'")

// oomRefused returns the -OOM reply when cmd must be refused here: it may
// grow memory and the node is out of memory. A script that may write
// counts as one: it runs inside Apply, where the node's memory cannot be
// asked (Redis checks each command a script without shebang calls); an
// EVAL or EVALSHA whose shebang says allow-oom or no-writes runs, one
// without either gets Redis's text for it.
func (s *Server) oomRefused(cmd *command, args [][]byte) (resp.Value, bool) {
	script := cmd.data != nil && cmd.data.Script != nil && !cmd.meta.Is(resp.FlagReadOnly)
	if !cmd.meta.Is(resp.FlagDenyOOM) && !script || !s.n.OutOfMemory() {
		return resp.Value{}, false
	}
	if script && !cmd.data.Script.Function {
		if f := s.scriptFlags(cmd, args); f.Shebang {
			return resp.Err(errScriptOOM), !f.AllowOOM && !f.NoWrites
		}
	}
	return resp.Err(errOOM), true
}

// cmdClientNoTouch is CLIENT NO-TOUCH on|off: the client's reads stop (or
// go back to) recording accesses; TOUCH still records them, as in Redis.
// Its writes record them whatever the setting: they run in Apply, which
// knows nothing of the client.
func cmdClientNoTouch(_ *Server, c *client, args [][]byte) resp.Value {
	var on bool
	switch {
	case resp.EqualFold(args[2], "on"):
		on = true
	case !resp.EqualFold(args[2], "off"):
		return resp.Err(resp.ErrSyntax)
	}
	c.mu.Lock()
	c.noTouch = on
	c.mu.Unlock()
	return resp.OK()
}

// infoEviction is INFO stats' eviction fields: keys evicted by this
// node's groups, no client ever evicted, the milliseconds spent over
// maxmemory in total and since the node last went over.
func (s *Server) infoEviction() [][2]string {
	st := s.n.EvictionStats()
	return [][2]string{
		kv("evicted_keys", st.EvictedKeys),
		kv("evicted_clients", 0),
		kv("total_eviction_exceeded_time", st.OverTotal.Milliseconds()),
		kv("current_eviction_exceeded_time", st.OverNow.Milliseconds()),
	}
}

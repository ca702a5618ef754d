package server

import (
	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
)

// Lua scripting at the node: routing of EVAL, EVALSHA, EVAL_RO and
// EVALSHA_RO, and the SCRIPT command. The scripts themselves run inside
// the groups' state machines (fsm/script.go, fsm/lua.go).
//
// A script with keys goes where its keys go (CROSSSLOT, MOVED as for any
// command); EVAL and EVALSHA are proposed, EVAL_RO and EVALSHA_RO are
// linearizable reads. A script without keys runs in the first group this
// node leads (it may not touch keys, so any group answers the same).
// SCRIPT LOAD and SCRIPT FLUSH are proposed to every group this node leads,
// so each group's replicated cache — which survives failovers and restarts
// through the log and snapshots — knows the script, as a Redis Cluster
// master's cache knows it for its slots.

// routeScript routes the script commands whose routing differs from the
// generic one: a bad numkeys is answered here, keyless scripts go to a
// group led here, and EVALSHA whose group lacks the script but another
// group led here has it is rewritten into EVAL with the script's body.
// ok is false when the generic routing applies.
func (s *Server) routeScript(c *client, cmd *command, args [][]byte) (r route, ok bool) {
	spec := cmd.data.Script
	switch {
	case spec == nil:
		return route{}, false
	case spec.Function:
		return s.routeFcall(c, cmd, args) // function.go
	}
	n, err := fsm.ParseNumKeys(args)
	if err != nil {
		return route{cmd: cmd, reply: resp.Err(err)}, true
	}
	readOnly := cmd.meta.Is(resp.FlagReadOnly)
	if n == 0 {
		if g := s.firstNotBusy(s.ledGroups()); g != nil && !readOnly {
			if r, ok := s.routeNoWrites(cmd, args, g); ok {
				return r, true
			}
		}
		return s.routeKeylessScript(c, cmd, readOnly), true
	}
	slot := slots.Of(args[3])
	for _, k := range args[4 : 3+n] {
		if slots.Of(k) != slot {
			return route{}, false // CROSSSLOT from the generic routing
		}
	}
	g := s.n.GroupOf(slot)
	if g == nil || !g.IsLeader() {
		return route{}, false
	}
	if r, ok := s.routeNoWrites(cmd, args, g); ok {
		return r, true
	}
	if spec.WithBody == nil {
		return route{}, false
	}
	if body, found := s.scriptBodyElsewhere(g, string(args[1])); found {
		args[0], args[1] = []byte(spec.WithBody.Meta.Name), body
		if readOnly {
			return route{kind: routeRead, cmd: s.table.lookup(args[0]), group: g}, true
		}
	}
	return route{}, false
}

// scriptBodyElsewhere finds the body of sha in another group led here when
// g's cache does not have it.
func (s *Server) scriptBodyElsewhere(g *cluster.Group, sha string) ([]byte, bool) {
	if _, has := s.scriptBodyIn(g, sha); has {
		return nil, false
	}
	for _, other := range s.ledGroups() {
		if body, ok := s.scriptBodyIn(other, sha); ok && other != g {
			return body, true
		}
	}
	return nil, false
}

// scriptBodyIn is the body g's cache holds under sha; none while g is
// busy with a script (busy.go), whose lock it would wait for: the command
// is then refused with -BUSY where it is routed to g.
func (s *Server) scriptBodyIn(g *cluster.Group, sha string) (body []byte, ok bool) {
	if _, busy := s.n.BusyScript(g.ID(), s.busyThreshold()); busy {
		return nil, false
	}
	_ = g.ReadStale(func(st fsm.Reader) { body, ok = st.ScriptBody(sha) })
	return body, ok
}

// routeNoWrites sends an EVAL or EVALSHA whose shebang says no-writes to
// g as a read (its *_RO twin), as Redis runs it: not through the log, and
// not refused when out of memory. Only once g's cache holds the script:
// until then EVAL goes through the log, which caches it (EVALSHA would
// not find it otherwise).
func (s *Server) routeNoWrites(cmd *command, args [][]byte, g *cluster.Group) (route, bool) {
	twin := cmd.data.Script.ReadOnly
	if twin == nil {
		return route{}, false
	}
	sha := string(args[1])
	if cmd.data.Script.WithBody == nil { // EVAL
		sha = fsm.SHA1Hex(args[1])
	}
	body, ok := s.scriptBodyIn(g, sha)
	if !ok {
		return route{}, false
	}
	if f, _, _ := fsm.ParseShebang(body); !f.NoWrites {
		return route{}, false
	}
	args[0] = []byte(twin.Meta.Name)
	return route{kind: routeRead, cmd: s.table.lookup(args[0]), group: g}, true
}

// scriptFlags are the shebang flags of the script an EVAL or EVALSHA
// runs; EVALSHA's body comes from the cache of a group led here.
func (s *Server) scriptFlags(cmd *command, args [][]byte) fsm.ScriptFlags {
	body := args[1]
	if cmd.data.Script.WithBody != nil {
		body = nil
		for _, g := range s.ledGroups() {
			if b, ok := s.scriptBodyIn(g, string(args[1])); ok {
				body = b
				break
			}
		}
	}
	f, _, _ := fsm.ParseShebang(body)
	return f
}

// routeKeylessScript sends a script without keys to the first group led
// here (a READONLY read may use any local replica).
func (s *Server) routeKeylessScript(c *client, cmd *command, readOnly bool) route {
	if g := s.firstNotBusy(s.ledGroups()); g != nil { // busy.go
		if readOnly {
			return route{kind: routeRead, cmd: cmd, group: g}
		}
		return route{kind: routeWrite, cmd: cmd, group: g}
	}
	if readOnly && c.isReadonly() {
		for _, g := range s.n.Groups() {
			if g.Local() {
				return route{kind: routeStale, cmd: cmd, group: g}
			}
		}
	}
	return route{cmd: cmd, reply: resp.Err(resp.ErrClusterDown)}
}

var scriptHelp = []string{
	"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"DEBUG (YES|SYNC|NO)",
	"    Set the debug mode for subsequent scripts executed.",
	"EXISTS <sha1> [<sha1> ...]",
	"    Return information about the existence of the scripts in the script cache.",
	"FLUSH [ASYNC|SYNC]",
	"    Flush the Lua scripts cache. Very dangerous on replicas.",
	"    When called without the optional mode argument, the behavior is determined by the",
	"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
	"    * ASYNC: Asynchronously flush the scripts cache.",
	"    * SYNC: Synchronously flush the scripts cache.",
	"KILL",
	"    Kill the currently executing Lua script.",
	"LOAD <script>",
	"    Load a script into the scripts cache without executing it.",
	"HELP",
	"    Prints this help.",
}

func scriptCommands() []*command {
	acl := []string{"slow", "scripting"}
	sub := func(name string, arity int, flags resp.Flag, since, summary, complexity string, tips []string, run nodeHandler) *command {
		m := subMeta("script", name, arity, flags, acl, since, summary, complexity)
		m.Tips = tips
		return &command{meta: m, node: run}
	}
	allNodes := []string{"request_policy:all_nodes", "response_policy:all_succeeded"}
	subs := []*command{
		sub("debug", 3, resp.FlagNoScript, "3.2.0", "Sets the debug mode of server-side Lua scripts.", "O(1)", nil,
			cmdScriptDebug), // script_debug.go
		sub("exists", -3, resp.FlagNoScript, "2.6.0", "Determines whether server-side Lua scripts exist in the script cache.",
			"O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation).",
			[]string{"request_policy:all_shards", "response_policy:agg_logical_and"}, cmdScriptExists),
		sub("flush", -2, resp.FlagNoScript, "2.6.0", "Removes all server-side Lua scripts from the script cache.",
			"O(N) with N being the number of scripts in cache", allNodes, cmdScriptFlush),
		sub("help", 2, resp.FlagLoading|resp.FlagStale, "5.0.0", "Returns helpful text about the different subcommands.", "O(1)", nil,
			func(*Server, *client, [][]byte) resp.Value { return statusLines(scriptHelp) }),
		sub("kill", 2, resp.FlagNoScript|resp.FlagAllowBusy, "2.6.0", "Terminates a server-side Lua script during execution.", "O(1)",
			[]string{"request_policy:all_shards", "response_policy:one_succeeded"},
			cmdKill(false)), // busy.go
		sub("load", 3, resp.FlagNoScript|resp.FlagStale, "2.6.0", "Loads a server-side Lua script to the script cache.",
			"O(N) with N being the length in bytes of the script body.", allNodes, cmdScriptLoad),
	}
	meta := &resp.Command{Name: "script", Arity: -2, Group: "scripting", Since: "2.6.0",
		Summary: "A container for Lua scripts management commands.", Complexity: "Depends on subcommand."}
	return []*command{container(meta, subs...)}
}

func statusLines(lines []string) resp.Value { return stringsArray(lines, resp.Status) }

// stringsArray is an array of ss, each rendered by each.
func stringsArray(ss []string, each func(string) resp.Value) resp.Value {
	out := make([]resp.Value, len(ss))
	for i, l := range ss {
		out[i] = each(l)
	}
	return resp.Array(out...)
}

// cmdScriptLoad proposes SCRIPT LOAD to every group led here. A node that
// leads no group checks that the script compiles and answers its SHA1.
func cmdScriptLoad(s *Server, _ *client, args [][]byte) resp.Value {
	sha, err := fsm.CheckScript(args[2])
	if err != nil {
		return resp.Err(err)
	}
	for _, g := range s.ledGroups() {
		if v := s.propose(nil, g, [][][]byte{{[]byte("script"), []byte("load"), args[2]}})[0]; v.IsError() {
			return v
		}
	}
	return resp.BulkString(sha)
}

// cmdScriptFlush proposes SCRIPT FLUSH to every group led here.
func cmdScriptFlush(s *Server, _ *client, args [][]byte) resp.Value {
	if len(args) > 3 || (len(args) == 3 && !resp.EqualFold(args[2], "async") && !resp.EqualFold(args[2], "sync")) {
		return resp.Err(resp.NewError("ERR SCRIPT FLUSH only support SYNC|ASYNC option"))
	}
	for _, g := range s.ledGroups() {
		if v := s.propose(nil, g, [][][]byte{{[]byte("script"), []byte("flush")}})[0]; v.IsError() {
			return v
		}
	}
	return resp.OK()
}

// cmdScriptExists answers 1 for a script that a group led here has (after
// a linearizable read barrier); EVALSHA finds it from any slot led here,
// since the router rewrites it into EVAL for a group that lacks it.
func cmdScriptExists(s *Server, _ *client, args [][]byte) resp.Value {
	out := make([]resp.Value, len(args)-2)
	for i := range out {
		out[i] = resp.Int(0)
	}
	err := s.viewLed(func(_ *cluster.Group, st fsm.Reader) {
		for i, a := range args[2:] {
			if st.HasScript(string(a)) {
				out[i] = resp.Int(1)
			}
		}
	})
	if err != nil {
		return resp.Err(err)
	}
	return resp.Array(out...)
}

// routeFcall routes FCALL and FCALL_RO whose routing differs from the
// generic one: without keys, or with a numkeys the group will refuse, they
// run in a group led here (which answers "Function not found" before a
// numkeys error, as Redis does). ok is false when the generic routing
// applies.
func (s *Server) routeFcall(c *client, cmd *command, args [][]byte) (route, bool) {
	if n, err := fsm.ParseNumKeys(args); err != nil || n == 0 {
		return s.routeKeylessScript(c, cmd, cmd.meta.Is(resp.FlagReadOnly)), true
	}
	return route{}, false
}

package server

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
)

// Redis Functions for clients: the FUNCTION command and the routing of
// FCALL and FCALL_RO. The libraries live in every slot group's replicated
// state (fsm/function.go) so that FCALL works on any key and survives
// failovers and restarts; FCALL runs inside its keys' group like EVAL.
//
// FUNCTION LOAD, DELETE, FLUSH and RESTORE go to every group of the
// cluster (cluster.Node.ApplyFunctions). A group that refuses the change (for
// example because it already has a library of that name) answers Redis's
// error; the reply is Redis's when every group answered alike, otherwise
// an error naming the groups that failed; retrying converges.
//
// FUNCTION LIST, DUMP and STATS read the first group this node leads
// (linearizable read): all groups hold the same libraries. A node that
// leads no group asks a group's leader for its FUNCTION DUMP payload and
// answers from that.

var functionHelp = []string{
	"LOAD [REPLACE] <FUNCTION CODE>",
	"    Create a new library with the given library name and code.",
	"DELETE <LIBRARY NAME>",
	"    Delete the given library.",
	"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
	"    Return general information on all the libraries:",
	"    * Library name",
	"    * The engine used to run the Library",
	"    * Functions list",
	"    * Library code (if WITHCODE is given)",
	"    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
	"STATS",
	"    Return information about the current function running:",
	"    * Function name",
	"    * Command used to run the function",
	"    * Duration in MS that the function is running",
	"    If no function is running, return nil",
	"    In addition, returns a list of available engines.",
	"KILL",
	"    Kill the current running function.",
	"FLUSH [ASYNC|SYNC]",
	"    Delete all the libraries.",
	"    When called without the optional mode argument, the behavior is determined by the",
	"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
	"    * ASYNC: Asynchronously flush the libraries.",
	"    * SYNC: Synchronously flush the libraries.",
	"DUMP",
	"    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
	"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
	"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
	"    control how to handle existing libraries (default APPEND):",
	"    * FLUSH: delete all existing libraries.",
	"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
	"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
	"      libraries with the new libraries (notice that even on this option there is a chance of failure",
	"      in case of functions name collision with another library).",
}

func functionCommands() []*command {
	acl := []string{"slow", "scripting"}
	allShards := []string{"request_policy:all_shards", "response_policy:all_succeeded"}
	sub := func(name string, arity int, flags resp.Flag, summary, complexity string, tips []string, run nodeHandler) *command {
		m := subMeta("function", name, arity, flags, acl, "7.0.0", summary, complexity)
		m.Group, m.Tips = "scripting", tips
		return &command{meta: m, node: run}
	}
	subs := []*command{
		sub("delete", 3, resp.FlagWrite|resp.FlagNoScript, "Deletes a library and its functions.", "O(1)", allShards, cmdFunctionWrite),
		sub("dump", 2, resp.FlagNoScript, "Dumps all libraries into a serialized binary payload.",
			"O(N) where N is the number of functions", nil, cmdFunctionRead),
		sub("flush", -2, resp.FlagWrite|resp.FlagNoScript, "Deletes all libraries and functions.",
			"O(N) where N is the number of functions deleted", allShards, cmdFunctionWrite),
		sub("help", 2, resp.FlagLoading|resp.FlagStale, "Returns helpful text about the different subcommands.", "O(1)", nil,
			func(*Server, *client, [][]byte) resp.Value { return helpReply("FUNCTION", functionHelp) }),
		sub("kill", 2, resp.FlagNoScript|resp.FlagAllowBusy, "Terminates a function during execution.", "O(1)",
			[]string{"request_policy:all_shards", "response_policy:one_succeeded"},
			cmdKill(true)), // busy.go
		sub("list", -2, resp.FlagNoScript, "Returns information about all libraries.",
			"O(N) where N is the number of functions", []string{"nondeterministic_output_order"}, cmdFunctionRead),
		sub("load", -3, resp.FlagWrite|resp.FlagDenyOOM|resp.FlagNoScript, "Creates a library.",
			"O(1) (considering compilation time is redundant)", allShards, cmdFunctionWrite),
		sub("restore", -3, resp.FlagWrite|resp.FlagDenyOOM|resp.FlagNoScript, "Restores all libraries from a payload.",
			"O(N) where N is the number of functions on the payload", allShards, cmdFunctionWrite),
		sub("stats", 2, resp.FlagNoScript|resp.FlagAllowBusy, "Returns information about a function during execution.", "O(1)",
			[]string{"nondeterministic_output", "request_policy:all_shards", "response_policy:special"}, cmdFunctionRead),
	}
	meta := &resp.Command{Name: "function", Arity: -2, Group: "scripting", Since: "7.0.0",
		Summary: "A container for function commands.", Complexity: "Depends on subcommand."}
	return []*command{container(meta, subs...)}
}

// cmdFunctionWrite is FUNCTION LOAD, DELETE, FLUSH and RESTORE.
func cmdFunctionWrite(s *Server, _ *client, args [][]byte) resp.Value {
	op := cloneArgs(args[1:]) // proposals and calls may outlive the connection's buffer
	if err := fsm.CheckFunctionWrite(op); err != nil {
		return resp.Err(err)
	}
	if s.n.Unmet() {
		return unmetFunctionWrite(op)
	}
	return functionReply(op, s.n.ApplyFunctions(s.ctx, op))
}

// errUnmetFunctions: a node that has not met a cluster hosts no slot group
// to keep libraries in.
var errUnmetFunctions = resp.NewError("ERR this node has not met a cluster yet (CLUSTER MEET): it has no slot group to keep function libraries in; load them in the cluster")

// unmetFunctionWrite is a FUNCTION change on a node that has not met a
// cluster and holds no libraries: FLUSH and a RESTORE of no libraries
// change nothing, DELETE finds no library, the rest is refused.
func unmetFunctionWrite(op [][]byte) resp.Value {
	switch {
	case resp.EqualFold(op[0], "flush"):
		return resp.OK()
	case resp.EqualFold(op[0], "delete"):
		return resp.Err(resp.NewError("ERR Library not found"))
	case resp.EqualFold(op[0], "restore"):
		if n, err := fsm.FunctionPayloadLibraries(op[1]); err == nil && n == 0 {
			return resp.OK()
		}
	}
	return resp.Err(errUnmetFunctions)
}

func cloneArgs(args [][]byte) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = append([]byte(nil), a...)
	}
	return out
}

// functionReply combines the groups' answers: Redis's reply when they all
// succeeded (or those that failed had applied the change already), the
// common error when they all failed alike (then nothing changed), and
// otherwise an error naming the groups that failed.
func functionReply(op [][]byte, rs []cluster.GroupAnswer) resp.Value {
	var ok, failed []cluster.GroupAnswer
	for _, r := range rs {
		if r.Reached && !r.Reply.IsError() {
			ok = append(ok, r)
		} else {
			failed = append(failed, r)
		}
	}
	switch {
	case len(failed) == 0 && len(ok) > 0:
		return ok[0].Reply
	case len(ok) == 0 && len(failed) > 0 && sameErrors(failed):
		return failed[0].Reply
	case len(ok) > 0 && allApplied(failed):
		return ok[0].Reply
	case len(rs) == 0:
		return resp.Err(resp.ErrClusterDown)
	}
	return resp.Err(partialError(op, ok, failed))
}

func sameErrors(rs []cluster.GroupAnswer) bool {
	for _, r := range rs {
		if !r.Reached || string(r.Reply.Str) != string(rs[0].Reply.Str) {
			return false
		}
	}
	return true
}

func allApplied(rs []cluster.GroupAnswer) bool {
	for _, r := range rs {
		if !r.Applied {
			return false
		}
	}
	return true
}

// partialError says which groups did not take the change.
func partialError(op [][]byte, ok, failed []cluster.GroupAnswer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "ERR FUNCTION %s did not succeed in every slot group:", strings.ToUpper(string(op[0])))
	for i, r := range failed {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " group %d: %.200s", r.Group, strings.TrimPrefix(string(r.Reply.Str), "ERR "))
	}
	if len(ok) > 0 {
		ids := make([]string, len(ok))
		for i, r := range ok {
			ids[i] = strconv.FormatUint(uint64(r.Group), 10)
		}
		fmt.Fprintf(&b, " (it succeeded in groups %s)", strings.Join(ids, ", "))
	}
	b.WriteString("; the libraries may differ between groups: retry the command")
	return resp.NewError(strings.NewReplacer("\r", " ", "\n", " ").Replace(b.String()))
}

// cmdFunctionRead is FUNCTION LIST, DUMP and STATS (whose running_script
// busy.go fills in).
func cmdFunctionRead(s *Server, _ *client, args [][]byte) resp.Value {
	op := args[1:]
	if err := fsm.CheckFunctionRead(op); err != nil {
		return resp.Err(err)
	}
	if resp.EqualFold(op[0], "stats") {
		return s.functionStats(op)
	}
	if s.n.Unmet() {
		return fsm.FunctionReadPayload(fsm.FunctionDumpEmpty(), op)
	}
	v, err := s.functionRead(op)
	if err != nil {
		return resp.Err(err)
	}
	return v
}

// functionStats is FUNCTION STATS, allowed while a script is busy: read
// without a read barrier or the group's lock, which the script may hold
// (its counts are nondeterministic output in Redis too).
func (s *Server) functionStats(op [][]byte) resp.Value {
	if err := s.statsBusyError(); err != nil {
		return resp.Err(err)
	}
	if g := s.firstNotBusy(s.ledGroups()); g != nil {
		return s.withRunningScript(g.State().FunctionStats())
	}
	v, err := s.functionRead(op)
	if err != nil {
		return resp.Err(err)
	}
	return s.withRunningScript(v)
}

// functionRead answers a FUNCTION read from a group led here, or from
// another node's libraries when none is.
func (s *Server) functionRead(op [][]byte) (resp.Value, error) {
	if g := s.firstNotBusy(s.ledGroups()); g != nil { // busy.go
		var v resp.Value
		err := s.viewGroup(g, func(st fsm.Reader) { v = st.FunctionRead(op) })
		return v, err
	}
	dump, err := s.n.RemoteFunctionDump(s.ctx)
	if err != nil {
		return resp.Value{}, err
	}
	return fsm.FunctionReadPayload(dump, op), nil
}

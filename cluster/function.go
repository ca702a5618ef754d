package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slotraft/slotraft/cluster/transport"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
)

// Redis Functions at the node: the FUNCTION command and the routing of
// FCALL and FCALL_RO. The libraries live in every slot group's replicated
// state (fsm/function.go) so that FCALL works on any key and survives
// failovers and restarts; FCALL runs inside its keys' group like EVAL.
//
// FUNCTION LOAD, DELETE, FLUSH and RESTORE go to every group of the
// cluster: as an EntryFunctions log entry to each group this node leads,
// and over the bus (svcFunction) to the leader of each other group, which
// proposes it there. A group that refuses the change (for example because
// it already has a library of that name) answers Redis's error; the reply
// is Redis's when every group answered alike, otherwise an error naming
// the groups that failed. Every change is idempotent once applied — a group
// that already reflects it (same library code, library already gone…)
// counts as a success next to groups that succeeded — so retrying a command
// that reached only some groups converges.
//
// FUNCTION LIST, DUMP and STATS read the first group this node leads
// (linearizable read): all groups hold the same libraries. A node that
// leads no group asks a group's leader for its FUNCTION DUMP payload and
// answers from that.

// A fan-out retries the groups it could not reach (no leader known yet,
// leadership moving) every functionRetry for functionRetryFor, about an
// election's time; a group without a leader for longer is reported.
const (
	functionRetry    = 100 * time.Millisecond
	functionRetryFor = 3 * time.Second
)

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
	sub := func(name string, arity int, flags resp.Flag, summary, complexity string, tips []string, run nodeHandler) subcommand {
		m := subMeta("function", name, arity, flags, acl, "7.0.0", summary, complexity)
		m.Group, m.Tips = "scripting", tips
		return subcommand{meta: m, run: run}
	}
	subs := []subcommand{
		sub("delete", 3, resp.FlagWrite|resp.FlagNoScript, "Deletes a library and its functions.", "O(1)", allShards, cmdFunctionWrite),
		sub("dump", 2, resp.FlagNoScript, "Dumps all libraries into a serialized binary payload.",
			"O(N) where N is the number of functions", nil, cmdFunctionRead),
		sub("flush", -2, resp.FlagWrite|resp.FlagNoScript, "Deletes all libraries and functions.",
			"O(N) where N is the number of functions deleted", allShards, cmdFunctionWrite),
		sub("help", 2, resp.FlagLoading|resp.FlagStale, "Returns helpful text about the different subcommands.", "O(1)", nil,
			func(*Server, *client, [][]byte) resp.Value { return helpReply("FUNCTION", functionHelp) }),
		sub("kill", 2, resp.FlagNoScript|resp.FlagAllowBusy, "Terminates a function during execution.", "O(1)",
			[]string{"request_policy:all_shards", "response_policy:one_succeeded"},
			func(*Server, *client, [][]byte) resp.Value { return resp.Err(errNotBusy) }),
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
	return []*command{container(meta, subs)}
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

// groupResult is one group's answer to a FUNCTION change.
type groupResult struct {
	group   uint32
	reply   resp.Value // the group's reply, or why it could not be reached
	reached bool       // the group applied the entry (reply is its answer)
	applied bool       // reply is an error but the group already reflects the change
}

// cmdFunctionWrite is FUNCTION LOAD, DELETE, FLUSH and RESTORE.
func cmdFunctionWrite(s *Server, _ *client, args [][]byte) resp.Value {
	op := cloneArgs(args[1:]) // proposals and calls may outlive the connection's buffer
	if err := fsm.CheckFunctionWrite(op); err != nil {
		return resp.Err(err)
	}
	return functionReply(op, s.fanOutFunction(op))
}

func cloneArgs(args [][]byte) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = append([]byte(nil), a...)
	}
	return out
}

// fanOutFunction applies op to every group, retrying the groups that have
// no reachable leader for functionRetryFor, and returns one result per
// group in id order.
func (s *Server) fanOutFunction(op [][]byte) []groupResult {
	ctx, cancel := context.WithTimeout(s.ctx, requestTimeout)
	defer cancel()
	retryUntil := time.Now().Add(functionRetryFor)
	f := &fanOut{op: op, results: map[uint32]groupResult{}, lastErr: map[uint32]error{}, unsure: map[uint32]bool{}}
	pending := s.n.Groups()
	for round := 0; len(pending) > 0; round++ {
		if round > 0 && (time.Now().After(retryUntil) || !pauseCtx(ctx, functionRetry)) {
			break
		}
		s.functionRound(ctx, f, pending)
		pending = slices.DeleteFunc(pending, func(g *Group) bool { _, done := f.results[g.id]; return done })
	}
	out := make([]groupResult, 0, len(f.results)+len(pending))
	for _, g := range s.n.Groups() {
		r, ok := f.results[g.id]
		if !ok {
			why := f.lastErr[g.id]
			if why == nil {
				why = errors.New("no answer")
			}
			r = groupResult{group: g.id, reply: resp.Err(fmt.Errorf("not reached: %w", why))}
		}
		out = append(out, r)
	}
	return out
}

// fanOut is one FUNCTION change's progress through the groups.
type fanOut struct {
	op      [][]byte
	mu      sync.Mutex
	results map[uint32]groupResult
	lastErr map[uint32]error // why a group did not answer yet
	// unsure: an earlier try may have applied op to the group without its
	// answer reaching here (outcome unknown, a call lost on the way).
	unsure map[uint32]bool
}

func (f *fanOut) fail(id uint32, err error, unsure bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastErr[id] = err
	f.unsure[id] = f.unsure[id] || unsure
}

// add records a group's answer. An error from a group that already
// reflects op, after a try whose outcome was unknown, is that try's
// success.
func (f *fanOut) add(r groupResult) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.applied && f.unsure[r.group] {
		r.reply, r.applied = fsm.FunctionSuccessReply(f.op), false
	}
	f.results[r.group] = r
}

// pauseCtx waits d, or less if ctx ends (then false).
func pauseCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

var outcomeUnknownText = resp.ErrorText(resp.ErrOutcomeUnknown)

// functionRound tries every pending group once, all in parallel: the
// groups led here by proposing, the others by calling their leader.
func (s *Server) functionRound(ctx context.Context, f *fanOut, pending []*Group) {
	var wg sync.WaitGroup
	byPeer := map[string][]*Group{}
	for _, g := range pending {
		if g.IsLeader() {
			wg.Go(func() {
				if r, err := s.applyFunctionLocal(ctx, g, f.op); err != nil {
					f.fail(g.id, err, errors.Is(err, resp.ErrOutcomeUnknown))
				} else {
					f.add(r)
				}
			})
			continue
		}
		leader, ok := s.n.Leader(g)
		if !ok || leader.ID == s.n.Self().ID {
			f.fail(g.id, errors.New("no leader known"), false)
			continue
		}
		byPeer[leader.ID] = append(byPeer[leader.ID], g)
	}
	for peer, groups := range byPeer {
		wg.Go(func() {
			rs, err := s.callFunction(ctx, peer, groups, f.op)
			if err != nil {
				var re *transport.RemoteError
				for _, g := range groups {
					f.fail(g.id, err, !errors.As(err, &re)) // a call lost on the way may have been served
				}
			}
			for _, r := range rs {
				if r.reached {
					f.add(r)
				} else {
					f.fail(r.group, errors.New(string(r.reply.Str)), string(r.reply.Str) == outcomeUnknownText)
				}
			}
		})
	}
	wg.Wait()
}

// applyFunctionLocal proposes op to g, a group led here, as an
// EntryFunctions entry. An error means g did not answer (never proposed,
// or outcome unknown: a retry is safe, the change being idempotent).
func (s *Server) applyFunctionLocal(ctx context.Context, g *Group, op [][]byte) (groupResult, error) {
	if !g.IsLeader() {
		return groupResult{}, ErrNotLeader
	}
	cmds := [][][]byte{op}
	replies, err := g.submit(ctx, &proposal{entry: &fsm.Entry{Type: fsm.EntryFunctions, Cmds: cmds}, cmds: cmds,
		done: make(chan proposeResult, 1)})
	if err != nil {
		return groupResult{}, err
	}
	r := groupResult{group: g.id, reply: replies[0], reached: true}
	if r.reply.IsError() {
		_ = g.ReadStale(func(st *fsm.State) { r.applied = st.FunctionApplied(op) })
	}
	return r, nil
}

// callFunction asks peer to apply op to groups (which it leads, as far as
// this node knows). Groups it does not lead come back not reached.
func (s *Server) callFunction(ctx context.Context, peer string, groups []*Group, op [][]byte) ([]groupResult, error) {
	ids := make([]uint32, len(groups))
	for i, g := range groups {
		ids[i] = g.id
	}
	out, err := s.n.call(ctx, peer, svcFunction, encodeFunctionRequest(functionRequest{groups: ids, op: op}))
	if err != nil {
		return nil, err
	}
	rs, err := decodeFunctionResponse(out)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		if !slices.Contains(ids, r.group) {
			return nil, fmt.Errorf("function rpc: answer for group %d, not asked", r.group)
		}
	}
	return rs, nil
}

// handleFunctionRPC registers svcFunction; NewServer calls it.
func (s *Server) handleFunctionRPC() { s.n.rpc.handle(svcFunction, s.serveFunctionRPC) }

// serveFunctionRPC applies a change to the asked groups this node leads,
// or answers a read (the FUNCTION DUMP payload of the first asked group
// led here).
func (s *Server) serveFunctionRPC(ctx context.Context, _ string, payload []byte) ([]byte, error) {
	req, err := decodeFunctionRequest(payload)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	if fsm.IsFunctionRead(req.op[0]) {
		return encodeFunctionResponse(s.serveFunctionDump(ctx, req.groups)), nil
	}
	out := make([]groupResult, len(req.groups))
	var wg sync.WaitGroup
	for i, id := range req.groups {
		wg.Go(func() {
			out[i] = groupResult{group: id, reply: resp.Err(ErrNotLeader)}
			if g := s.groupByID(id); g != nil {
				if r, err := s.applyFunctionLocal(ctx, g, req.op); err == nil {
					out[i] = r
				} else {
					out[i].reply = resp.Err(err)
				}
			}
		})
	}
	wg.Wait()
	return encodeFunctionResponse(out), nil
}

func (s *Server) serveFunctionDump(ctx context.Context, ids []uint32) []groupResult {
	for _, id := range ids {
		g := s.groupByID(id)
		if g == nil || !g.IsLeader() {
			continue
		}
		var dump []byte
		if err := g.Read(ctx, func(st *fsm.State) { dump = st.FunctionDump() }); err == nil {
			return []groupResult{{group: id, reply: resp.Bulk(dump), reached: true}}
		}
	}
	return nil
}

func (s *Server) groupByID(id uint32) *Group {
	for _, g := range s.n.Groups() {
		if g.id == id {
			return g
		}
	}
	return nil
}

// functionReply combines the groups' answers: Redis's reply when they all
// succeeded (or those that failed had applied the change already), the
// common error when they all failed alike (then nothing changed), and
// otherwise an error naming the groups that failed.
func functionReply(op [][]byte, rs []groupResult) resp.Value {
	var ok, failed []groupResult
	for _, r := range rs {
		if r.reached && !r.reply.IsError() {
			ok = append(ok, r)
		} else {
			failed = append(failed, r)
		}
	}
	switch {
	case len(failed) == 0 && len(ok) > 0:
		return ok[0].reply
	case len(ok) == 0 && len(failed) > 0 && sameErrors(failed):
		return failed[0].reply
	case len(ok) > 0 && allApplied(failed):
		return ok[0].reply
	case len(rs) == 0:
		return resp.Err(resp.ErrClusterDown)
	}
	return resp.Err(partialError(op, ok, failed))
}

func sameErrors(rs []groupResult) bool {
	for _, r := range rs {
		if !r.reached || string(r.reply.Str) != string(rs[0].reply.Str) {
			return false
		}
	}
	return true
}

func allApplied(rs []groupResult) bool {
	for _, r := range rs {
		if !r.applied {
			return false
		}
	}
	return true
}

// partialError says which groups did not take the change.
func partialError(op [][]byte, ok, failed []groupResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "ERR FUNCTION %s did not succeed in every slot group:", strings.ToUpper(string(op[0])))
	for i, r := range failed {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " group %d: %.200s", r.group, strings.TrimPrefix(string(r.reply.Str), "ERR "))
	}
	if len(ok) > 0 {
		ids := make([]string, len(ok))
		for i, r := range ok {
			ids[i] = strconv.FormatUint(uint64(r.group), 10)
		}
		fmt.Fprintf(&b, " (it succeeded in groups %s)", strings.Join(ids, ", "))
	}
	b.WriteString("; the libraries may differ between groups: retry the command")
	return resp.NewError(strings.NewReplacer("\r", " ", "\n", " ").Replace(b.String()))
}

// cmdFunctionRead is FUNCTION LIST, DUMP and STATS.
func cmdFunctionRead(s *Server, _ *client, args [][]byte) resp.Value {
	op := args[1:]
	if err := fsm.CheckFunctionRead(op); err != nil {
		return resp.Err(err)
	}
	if led := s.ledGroups(); len(led) > 0 {
		var v resp.Value
		if err := s.viewGroup(led[0], func(st *fsm.State) { v = st.FunctionRead(op) }); err != nil {
			return resp.Err(err)
		}
		return v
	}
	dump, err := s.remoteFunctionDump()
	if err != nil {
		return resp.Err(err)
	}
	return fsm.FunctionReadPayload(dump, op)
}

// remoteFunctionDump fetches the FUNCTION DUMP payload of a group led
// elsewhere.
func (s *Server) remoteFunctionDump() ([]byte, error) {
	ctx, cancel := context.WithTimeout(s.ctx, requestTimeout)
	defer cancel()
	for _, g := range s.n.Groups() {
		leader, ok := s.n.Leader(g)
		if !ok || leader.ID == s.n.Self().ID {
			continue
		}
		rs, err := s.callFunction(ctx, leader.ID, []*Group{g}, [][]byte{[]byte("dump")})
		if err == nil && len(rs) == 1 && rs[0].reached && rs[0].reply.Kind == resp.KindBulk {
			return rs[0].reply.Str, nil
		}
	}
	return nil, resp.ErrClusterDown
}

// The svcFunction payloads. A request is
//
//	version (1) | uvarint number of groups | uvarint group ids |
//	uvarint number of arguments | per argument a uvarint length and the bytes
//
// (the arguments are a FUNCTION subcommand without FUNCTION); a response is
//
//	version (1) | uvarint number of results | per result: uvarint group id,
//	a kind byte, a uvarint length and the bytes
//
// with kinds: 0 status reply, 1 bulk reply, 2 error reply, 3 error reply of
// a group that already reflects the change, 4 not reached (the text says why).
const functionRPCVersion = 1

const (
	resultStatus byte = iota
	resultBulk
	resultError
	resultApplied
	resultNotReached
)

var errBadFunctionRPC = errors.New("function rpc: bad payload")

type functionRequest struct {
	groups []uint32
	op     [][]byte
}

func encodeFunctionRequest(r functionRequest) []byte {
	b := []byte{functionRPCVersion}
	b = binary.AppendUvarint(b, uint64(len(r.groups)))
	for _, id := range r.groups {
		b = binary.AppendUvarint(b, uint64(id))
	}
	b = binary.AppendUvarint(b, uint64(len(r.op)))
	for _, a := range r.op {
		b = binary.AppendUvarint(b, uint64(len(a)))
		b = append(b, a...)
	}
	return b
}

func decodeFunctionRequest(b []byte) (functionRequest, error) {
	d, err := newRPCDecoder(b)
	if err != nil {
		return functionRequest{}, err
	}
	var r functionRequest
	n := d.count()
	for range n {
		r.groups = append(r.groups, d.groupID())
	}
	n = d.count()
	for range n {
		r.op = append(r.op, d.bytes())
	}
	if err := d.end(); err != nil {
		return functionRequest{}, err
	}
	if len(r.op) == 0 {
		return functionRequest{}, fmt.Errorf("%w: no arguments", errBadFunctionRPC)
	}
	return r, nil
}

func encodeFunctionResponse(rs []groupResult) []byte {
	b := []byte{functionRPCVersion}
	b = binary.AppendUvarint(b, uint64(len(rs)))
	for _, r := range rs {
		kind := resultStatus
		switch {
		case !r.reached:
			kind = resultNotReached
		case r.reply.IsError() && r.applied:
			kind = resultApplied
		case r.reply.IsError():
			kind = resultError
		case r.reply.Kind == resp.KindBulk:
			kind = resultBulk
		}
		b = binary.AppendUvarint(b, uint64(r.group))
		b = append(b, kind)
		b = binary.AppendUvarint(b, uint64(len(r.reply.Str)))
		b = append(b, r.reply.Str...)
	}
	return b
}

func decodeFunctionResponse(b []byte) ([]groupResult, error) {
	d, err := newRPCDecoder(b)
	if err != nil {
		return nil, err
	}
	n := d.count()
	out := make([]groupResult, 0, n)
	for range n {
		r := groupResult{group: d.groupID(), reached: true}
		kind := d.byte()
		text := d.bytes()
		switch kind {
		case resultStatus:
			r.reply = resp.Status(string(text))
		case resultBulk:
			r.reply = resp.Bulk(text)
		case resultError, resultApplied:
			r.reply = resp.Value{Kind: resp.KindError, Str: text}
			r.applied = kind == resultApplied
		case resultNotReached:
			r.reply = resp.Value{Kind: resp.KindError, Str: text}
			r.reached = false
		default:
			d.fail()
		}
		out = append(out, r)
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	return out, nil
}

// rpcDecoder reads the payloads above; every length is checked against the
// bytes left, and the first error sticks.
type rpcDecoder struct {
	b   []byte
	err error
}

func newRPCDecoder(b []byte) (*rpcDecoder, error) {
	if len(b) == 0 || b[0] != functionRPCVersion {
		return nil, fmt.Errorf("%w: unknown version", errBadFunctionRPC)
	}
	return &rpcDecoder{b: b[1:]}, nil
}

func (d *rpcDecoder) fail() {
	if d.err == nil {
		d.err = errBadFunctionRPC
	}
}

func (d *rpcDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a number of items that take at least one byte each.
func (d *rpcDecoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return 0
	}
	return int(n)
}

func (d *rpcDecoder) groupID() uint32 {
	v := d.uvarint()
	if v > 1<<32-1 {
		d.fail()
	}
	return uint32(v)
}

func (d *rpcDecoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *rpcDecoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	out := d.b[:n:n]
	d.b = d.b[n:]
	return out
}

func (d *rpcDecoder) end() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail()
	}
	return d.err
}

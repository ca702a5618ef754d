package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/slotraft/slotraft/cluster/transport"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// Redis Functions across the slot groups: the node's half of the FUNCTION
// command (the front end has the command itself). The libraries live in
// every slot group's replicated state (fsm/function.go), so a FUNCTION
// LOAD, DELETE, FLUSH or RESTORE goes to every group of the cluster: as an
// EntryFunctions log entry to each group this node leads, and over the bus
// (svcFunction) to the leader of each other group, which proposes it
// there. Every change is idempotent once applied — a group that already
// reflects it (same library code, library already gone…) counts as a
// success next to groups that succeeded — so retrying a change that
// reached only some groups converges.

// A fan-out retries the groups it could not reach (no leader known yet,
// leadership moving) every functionRetry for functionRetryFor, about an
// election's time; a group without a leader for longer is reported.
const (
	functionRetry    = 100 * time.Millisecond
	functionRetryFor = 3 * time.Second
)

// GroupAnswer is one group's answer to a FUNCTION change (ApplyFunctions).
type GroupAnswer struct {
	Group   uint32
	Reply   resp.Value // the group's reply, or why it could not be reached
	Reached bool       // the group applied the entry (Reply is its answer)
	Applied bool       // Reply is an error but the group already reflects the change
	unsure  bool       // not reached, but the change may have been applied (outcome unknown)
}

// ApplyFunctions applies op (a FUNCTION write subcommand without FUNCTION,
// checked by fsm.CheckFunctionWrite) to every slot group, retrying the
// groups that have no reachable leader for functionRetryFor, and returns
// one answer per group in id order.
func (n *Node) ApplyFunctions(ctx context.Context, op [][]byte) []GroupAnswer {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	retryUntil := time.Now().Add(functionRetryFor)
	f := &fanOut{op: op, results: map[uint32]GroupAnswer{}, why: map[uint32]string{}, unsure: map[uint32]bool{}}
	pending := n.Groups()
	for round := 0; len(pending) > 0; round++ {
		if round > 0 && (time.Now().After(retryUntil) || !pauseCtx(ctx, functionRetry)) {
			break
		}
		n.functionRound(ctx, f, pending)
		pending = slices.DeleteFunc(pending, func(g *Group) bool { _, done := f.results[g.id]; return done })
	}
	out := make([]GroupAnswer, 0, len(f.results)+len(pending))
	for _, g := range n.Groups() {
		r, ok := f.results[g.id]
		if !ok {
			why := f.why[g.id]
			if why == "" {
				why = "no answer"
			}
			r = GroupAnswer{Group: g.id, Reply: resp.Err(resp.Errorf("ERR not reached: %s", why))}
		}
		out = append(out, r)
	}
	return out
}

// fanOut is one FUNCTION change's progress through the groups.
type fanOut struct {
	op      [][]byte
	mu      sync.Mutex
	results map[uint32]GroupAnswer
	why     map[uint32]string // why a group did not answer yet
	// unsure: an earlier try may have applied op to the group without its
	// answer reaching here (outcome unknown, a call lost on the way).
	unsure map[uint32]bool
}

func (f *fanOut) fail(id uint32, why string, unsure bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.why[id] = why
	f.unsure[id] = f.unsure[id] || unsure
}

// add records a group's answer. An error from a group that already
// reflects op, after a try whose outcome was unknown, is that try's
// success.
func (f *fanOut) add(r GroupAnswer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Applied && f.unsure[r.Group] {
		r.Reply, r.Applied = fsm.FunctionSuccessReply(f.op), false
	}
	f.results[r.Group] = r
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

// functionRound tries every pending group once, all in parallel: the
// groups led here by proposing, the others by calling their leader.
func (n *Node) functionRound(ctx context.Context, f *fanOut, pending []*Group) {
	var wg sync.WaitGroup
	byPeer := map[string][]*Group{}
	for _, g := range pending {
		if g.IsLeader() {
			wg.Go(func() {
				if r, err := n.applyFunctionLocal(ctx, g, f.op); err != nil {
					f.fail(g.id, err.Error(), errors.Is(err, resp.ErrOutcomeUnknown))
				} else {
					f.add(r)
				}
			})
			continue
		}
		leader, ok := n.Leader(g)
		if !ok || leader.ID == n.Self().ID {
			f.fail(g.id, "no leader known", false)
			continue
		}
		byPeer[leader.ID] = append(byPeer[leader.ID], g)
	}
	for peer, groups := range byPeer {
		wg.Go(func() {
			rs, err := n.callFunction(ctx, peer, groups, f.op)
			if err != nil {
				var re *transport.RemoteError
				for _, g := range groups {
					f.fail(g.id, err.Error(), !errors.As(err, &re)) // a call lost on the way may have been served
				}
			}
			for _, r := range rs {
				if r.Reached {
					f.add(r)
				} else {
					f.fail(r.Group, string(r.Reply.Str), r.unsure)
				}
			}
		})
	}
	wg.Wait()
}

// applyFunctionLocal proposes op to g, a group led here, as an
// EntryFunctions entry. An error means g did not answer (never proposed,
// or outcome unknown: a retry is safe, the change being idempotent).
func (n *Node) applyFunctionLocal(ctx context.Context, g *Group, op [][]byte) (GroupAnswer, error) {
	if !g.IsLeader() {
		return GroupAnswer{}, ErrNotLeader
	}
	outcomes, err := g.proposeSpecial(ctx, &fsm.Entry{Type: fsm.EntryFunctions, Cmds: [][][]byte{op}})
	if err != nil {
		return GroupAnswer{}, err
	}
	if len(outcomes) != 1 {
		return GroupAnswer{}, fmt.Errorf("%w: %d outcomes for one FUNCTION op", resp.ErrOutcomeUnknown, len(outcomes))
	}
	r := GroupAnswer{Group: g.id, Reply: outcomes[0].Reply, Reached: true}
	if r.Reply.IsError() {
		_ = g.ReadStale(func(st fsm.Reader) { r.Applied = st.FunctionApplied(op) })
	}
	return r, nil
}

// applyFunctionTo applies op to the one group g: proposed here if it is
// led here, else by its leader (svcFunction). An error means g did not
// answer; a retry is safe, the change being idempotent.
func (n *Node) applyFunctionTo(ctx context.Context, g *Group, op [][]byte) (GroupAnswer, error) {
	if g.IsLeader() {
		return n.applyFunctionLocal(ctx, g, op)
	}
	leader, ok := n.Leader(g)
	if !ok || leader.ID == n.Self().ID {
		return GroupAnswer{}, fmt.Errorf("group %d has no leader known", g.id)
	}
	rs, err := n.callFunction(ctx, leader.ID, []*Group{g}, op)
	switch {
	case err != nil:
		return GroupAnswer{}, err
	case len(rs) != 1:
		return GroupAnswer{}, fmt.Errorf("group %d: %d answers", g.id, len(rs))
	case !rs[0].Reached:
		return GroupAnswer{}, fmt.Errorf("group %d: %s", g.id, rs[0].Reply.Str)
	}
	return rs[0], nil
}

// callFunction asks peer to apply op to groups (which it leads, as far as
// this node knows). Groups it does not lead come back not reached.
func (n *Node) callFunction(ctx context.Context, peer string, groups []*Group, op [][]byte) ([]GroupAnswer, error) {
	ids := make([]uint32, len(groups))
	for i, g := range groups {
		ids[i] = g.id
	}
	out, err := n.call(ctx, peer, svcFunction, encodeFunctionRequest(functionRequest{groups: ids, op: op}))
	if err != nil {
		return nil, err
	}
	rs, err := decodeFunctionResponse(out)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		if !slices.Contains(ids, r.Group) {
			return nil, fmt.Errorf("function rpc: answer for group %d, not asked", r.Group)
		}
	}
	return rs, nil
}

// serveFunctionRPC applies a change to the asked groups this node leads,
// or answers a read (the FUNCTION DUMP payload of the first asked group
// led here).
func (n *Node) serveFunctionRPC(ctx context.Context, _ string, payload []byte) ([]byte, error) {
	req, err := decodeFunctionRequest(payload)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	stop := context.AfterFunc(n.ctx, cancel)
	defer stop()
	if fsm.IsFunctionRead(req.op[0]) {
		return encodeFunctionResponse(n.serveFunctionDump(ctx, req.groups)), nil
	}
	out := make([]GroupAnswer, len(req.groups))
	var wg sync.WaitGroup
	for i, id := range req.groups {
		wg.Go(func() {
			out[i] = GroupAnswer{Group: id, Reply: resp.Err(ErrNotLeader)}
			if g := n.state().groupByID(id); g != nil {
				if r, err := n.applyFunctionLocal(ctx, g, req.op); err == nil {
					out[i] = r
				} else {
					out[i].Reply, out[i].unsure = resp.Err(err), errors.Is(err, resp.ErrOutcomeUnknown)
				}
			}
		})
	}
	wg.Wait()
	return encodeFunctionResponse(out), nil
}

func (n *Node) serveFunctionDump(ctx context.Context, ids []uint32) []GroupAnswer {
	for _, id := range ids {
		g := n.state().groupByID(id)
		if g == nil || !g.IsLeader() {
			continue
		}
		var dump []byte
		if err := g.Read(ctx, func(st fsm.Reader) { dump = st.FunctionDump() }); err == nil {
			return []GroupAnswer{{Group: id, Reply: resp.Bulk(dump), Reached: true}}
		}
	}
	return nil
}

// RemoteFunctionDump fetches the FUNCTION DUMP payload of a group led
// elsewhere (every group holds the same libraries), for a node that leads
// none.
func (n *Node) RemoteFunctionDump(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	for _, g := range n.Groups() {
		leader, ok := n.Leader(g)
		if !ok || leader.ID == n.Self().ID {
			continue
		}
		rs, err := n.callFunction(ctx, leader.ID, []*Group{g}, [][]byte{[]byte("dump")})
		if err == nil && len(rs) == 1 && rs[0].Reached && rs[0].Reply.Kind == resp.KindBulk {
			return rs[0].Reply.Str, nil
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
// a group that already reflects the change, 4 not reached (the text says
// why), 5 not reached but maybe applied (outcome unknown; the text says why).
const functionRPCVersion = 1

const (
	resultStatus byte = iota
	resultBulk
	resultError
	resultApplied
	resultNotReached
	resultUnknown
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
	d, err := newFunctionDecoder(b)
	if err != nil {
		return functionRequest{}, err
	}
	var r functionRequest
	n, err := d.Count("groups")
	for i := 0; i < n && err == nil; i++ {
		var id uint32
		id, err = readGroupID(d)
		r.groups = append(r.groups, id)
	}
	if err == nil {
		n, err = d.Count("arguments")
	}
	for i := 0; i < n && err == nil; i++ {
		var a []byte
		a, err = d.Bytes("argument")
		r.op = append(r.op, a)
	}
	if err == nil {
		err = d.End()
	}
	if err == nil && len(r.op) == 0 {
		err = fmt.Errorf("%w: no arguments", errBadFunctionRPC)
	}
	if err != nil {
		return functionRequest{}, err
	}
	return r, nil
}

func encodeFunctionResponse(rs []GroupAnswer) []byte {
	b := []byte{functionRPCVersion}
	b = binary.AppendUvarint(b, uint64(len(rs)))
	for _, r := range rs {
		kind := resultStatus
		switch {
		case !r.Reached && r.unsure:
			kind = resultUnknown
		case !r.Reached:
			kind = resultNotReached
		case r.Reply.IsError() && r.Applied:
			kind = resultApplied
		case r.Reply.IsError():
			kind = resultError
		case r.Reply.Kind == resp.KindBulk:
			kind = resultBulk
		}
		b = binary.AppendUvarint(b, uint64(r.Group))
		b = append(b, kind)
		b = binary.AppendUvarint(b, uint64(len(r.Reply.Str)))
		b = append(b, r.Reply.Str...)
	}
	return b
}

func decodeFunctionResponse(b []byte) ([]GroupAnswer, error) {
	d, err := newFunctionDecoder(b)
	if err != nil {
		return nil, err
	}
	n, err := d.Count("results")
	if err != nil {
		return nil, err
	}
	out := make([]GroupAnswer, 0, n)
	for range n {
		r, err := readGroupAnswer(d)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := d.End(); err != nil {
		return nil, err
	}
	return out, nil
}

// readGroupAnswer reads one result of a response: group id, kind, text.
func readGroupAnswer(d *store.Decoder) (GroupAnswer, error) {
	id, err := readGroupID(d)
	var kind byte
	if err == nil {
		kind, err = d.Byte("result kind")
	}
	var text []byte
	if err == nil {
		text, err = d.Bytes("result text")
	}
	if err != nil {
		return GroupAnswer{}, err
	}
	r := GroupAnswer{Group: id, Reached: true}
	switch kind {
	case resultStatus:
		r.Reply = resp.Status(string(text))
	case resultBulk:
		r.Reply = resp.Bulk(text)
	case resultError, resultApplied:
		r.Reply = resp.Value{Kind: resp.KindError, Str: text}
		r.Applied = kind == resultApplied
	case resultNotReached, resultUnknown:
		r.Reply = resp.Value{Kind: resp.KindError, Str: text}
		r.Reached, r.unsure = false, kind == resultUnknown
	default:
		return GroupAnswer{}, fmt.Errorf("%w: result kind %d", errBadFunctionRPC, kind)
	}
	return r, nil
}

// newFunctionDecoder checks a payload's version and reads what follows it.
func newFunctionDecoder(b []byte) (*store.Decoder, error) {
	if len(b) == 0 || b[0] != functionRPCVersion {
		return nil, fmt.Errorf("%w: unknown version", errBadFunctionRPC)
	}
	return store.NewDecoder(b, 1, errBadFunctionRPC), nil
}

func readGroupID(d *store.Decoder) (uint32, error) {
	v, err := d.Uvarint("group id")
	if err == nil && v > math.MaxUint32 {
		err = fmt.Errorf("%w: group id %d out of range", errBadFunctionRPC, v)
	}
	return uint32(v), err
}

package server

import (
	"context"
	"strings"
	"time"

	"github.com/slotraft/slotraft/cluster/meta"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
	"github.com/slotraft/slotraft/store"
)

// CLUSTER ADDSLOTS[RANGE], DELSLOTS[RANGE], FLUSHSLOTS and RESET. In Redis
// Cluster an operator assigns slots to nodes by hand; in a slotraft cluster
// that bootstrapped itself every slot belongs to a slot group from the
// start, and slots move between groups with CLUSTER SETSLOT or SLOTRAFT
// MOVE-SLOTS. So the arguments are checked as Redis checks them, a slot
// already assigned is "busy" for ADDSLOTS exactly as in Redis, and what
// would leave slots without an owner is refused with slotraft's reason.
// A node started with --meet takes slots by hand as Redis does
// (cluster_meet.go): before it meets a cluster ADDSLOTS and DELSLOTS edit
// the slots it claims, afterwards ADDSLOTS assigns unassigned slots.

var (
	errSlotRange  = resp.NewError("ERR Invalid or out of range slot")
	errNoUnassign = resp.NewError("ERR slotraft keeps every slot assigned to a slot group: move slots with CLUSTER SETSLOT or SLOTRAFT MOVE-SLOTS")
	errNoAssign   = resp.NewError("ERR slotraft assigns slots to slot groups itself (at bootstrap); move them with CLUSTER SETSLOT or SLOTRAFT MOVE-SLOTS")
	errNoReset    = resp.NewError("ERR a slotraft node leaves its cluster through the others: CLUSTER FORGET its id on another node (or SLOTRAFT LEAVE, or SHUTDOWN)")
)

func clusterSlotOpsCommands(sub func(name string, arity int, flags resp.Flag, since, summary, complexity string, run nodeHandler) *command) []*command {
	const as = resp.FlagAdmin | resp.FlagStale
	return []*command{
		adminACL(sub("addslots", -3, as, "3.0.0", "Assigns new hash slots to a node.", "O(N) where N is the total number of hash slot arguments", cmdClusterAddSlots)),
		adminACL(sub("addslotsrange", -4, as, "7.0.0", "Assigns new hash slot ranges to a node.", "O(N) where N is the total number of the slots between the start slot and end slot arguments.", cmdClusterAddSlots)),
		adminACL(sub("delslots", -3, as, "3.0.0", "Sets hash slots as unbound for a node.", "O(N) where N is the total number of hash slot arguments", cmdClusterAddSlots)),
		adminACL(sub("delslotsrange", -4, as, "7.0.0", "Sets hash slot ranges as unbound for a node.", "O(N) where N is the total number of the slots between the start slot and end slot arguments.", cmdClusterAddSlots)),
		adminACL(sub("flushslots", 2, as, "3.0.0", "Deletes all slots information from a node.", "O(1)", cmdClusterFlushSlots)),
		adminACL(sub("reset", -2, as, "3.0.0", "Resets a node.", "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.", cmdClusterReset)),
	}
}

// cmdClusterAddSlots is ADDSLOTS, ADDSLOTSRANGE, DELSLOTS and DELSLOTSRANGE:
// Redis's checks in Redis's order (every slot parses, ranges go up, each
// slot's state, none twice), then: on an unmet node the slots it claims
// change; in a cluster placed by hand ADDSLOTS gives unassigned slots to
// the group this node leads; otherwise slotraft's refusal.
func cmdClusterAddSlots(s *Server, _ *client, args [][]byte) resp.Value {
	del := resp.EqualFold(args[1], "delslots") || resp.EqualFold(args[1], "delslotsrange")
	ranges, errv := slotArgs(args, resp.EqualFold(args[1], "addslotsrange") || resp.EqualFold(args[1], "delslotsrange"))
	if errv != nil {
		return *errv
	}
	if s.n.Unmet() {
		return claimSlots(s, ranges, !del)
	}
	m := s.n.Map()
	assigned := func(slot uint16) bool { _, ok := m.GroupOf(slot); return ok }
	if err := checkSlotArgs(ranges, !del, assigned); err != nil {
		return resp.Err(err)
	}
	switch {
	case del:
		return resp.Err(errNoUnassign)
	case !m.Manual:
		return resp.Err(errNoAssign)
	}
	ctx, cancel := context.WithTimeout(s.ctx, requestTimeout)
	defer cancel()
	if err := s.n.ClaimSlots(ctx, ranges); err != nil {
		return nodeError(err)
	}
	return resp.OK()
}

// checkSlotArgs is Redis's check of each slot of ADDSLOTS (add) or
// DELSLOTS: busy or unassigned as assigned says, none named twice.
func checkSlotArgs(ranges []slots.Range, add bool, assigned func(uint16) bool) *resp.Error {
	seen := make([]bool, slots.Count)
	for _, r := range ranges {
		for slot := r.Start; ; slot++ {
			switch {
			case !add && !assigned(slot):
				return resp.Errorf("ERR Slot %d is already unassigned", slot)
			case add && assigned(slot):
				return resp.Errorf("ERR Slot %d is already busy", slot)
			case seen[slot]:
				return resp.Errorf("ERR Slot %d specified multiple times", slot)
			}
			seen[slot] = true
			if slot == r.End {
				break
			}
		}
	}
	return nil
}

// slotArgs parses the slots (or start/end pairs) of args[2:] as Redis does.
func slotArgs(args [][]byte, pairs bool) ([]slots.Range, *resp.Value) {
	fail := func(v resp.Value) ([]slots.Range, *resp.Value) { return nil, &v }
	if pairs && len(args)%2 == 1 {
		return fail(resp.Err(resp.ErrWrongArgs("cluster|" + strings.ToLower(string(args[1])))))
	}
	step := 1
	if pairs {
		step = 2
	}
	var out []slots.Range
	for j := 2; j+step <= len(args); j += step {
		start, err := parseSlotArg(args[j])
		if err != nil {
			return fail(resp.Err(errSlotRange))
		}
		end := start
		if pairs {
			if end, err = parseSlotArg(args[j+1]); err != nil {
				return fail(resp.Err(errSlotRange))
			}
			if start > end {
				return fail(resp.Err(resp.Errorf("ERR start slot number %d is greater than end slot number %d", start, end)))
			}
		}
		out = append(out, slots.Range{Start: start, End: end})
	}
	return out, nil
}

func parseSlotArg(b []byte) (uint16, error) {
	n, err := resp.ParseInt(b)
	if err != nil || n < 0 || n >= slots.Count {
		return 0, errSlotRange
	}
	return uint16(n), nil
}

// cmdClusterFlushSlots: Redis's refusal while the node holds keys, else
// slotraft's.
func cmdClusterFlushSlots(s *Server, _ *client, _ [][]byte) resp.Value {
	if s.n.Unmet() {
		return clearClaims(s)
	}
	if s.ledKeys() > 0 {
		return resp.Err(resp.NewError("ERR DB must be empty to perform CLUSTER FLUSHSLOTS."))
	}
	return resp.Err(errNoUnassign)
}

// cmdClusterReset is CLUSTER RESET [SOFT|HARD]: Redis's checks, then +OK
// on a node being removed from the cluster (what redis-cli --cluster
// del-node sends last), slotraft's refusal otherwise.
func cmdClusterReset(s *Server, _ *client, args [][]byte) resp.Value {
	switch {
	case len(args) > 3:
		return resp.Err(resp.ErrSubcommandSyntax(args[0], args[1]))
	case len(args) == 3 && !resp.EqualFold(args[2], "hard") && !resp.EqualFold(args[2], "soft"):
		return resp.Err(resp.ErrSyntax)
	}
	if s.n.Unmet() {
		return clearClaims(s)
	}
	t := s.topology()
	if master, _, _ := t.nodeRole(t.self.ID); master && s.ledKeys() > 0 {
		return resp.Err(resp.NewError("ERR CLUSTER RESET can't be called with master nodes containing keys"))
	}
	if s.beingRemoved(t.self.ID) {
		return resp.OK()
	}
	return resp.Err(errNoReset)
}

// resetWait bounds how long CLUSTER RESET waits for this node's map to
// show it leaving: redis-cli --cluster del-node sends it right after the
// CLUSTER FORGETs that other nodes proposed.
const resetWait = 3 * time.Second

// beingRemoved reports whether the map shows node id draining or removed,
// waiting up to resetWait for it.
func (s *Server) beingRemoved(id string) bool {
	return s.awaitMap(resetWait, func() (bool, bool) {
		nd, ok := s.n.Map().Node(id)
		leaving := ok && (nd.State == meta.Draining || nd.State == meta.Removed)
		return leaving, leaving
	})
}

// clearClaims empties an unmet node's claimed slots (FLUSHSLOTS, RESET).
func clearClaims(s *Server) resp.Value {
	if err := s.n.UpdateClaims(func([]slots.Range) ([]slots.Range, error) { return nil, nil }); err != nil {
		return nodeError(err)
	}
	return resp.OK()
}

// ledKeys is the number of keys in the groups this node leads (DBSIZE).
func (s *Server) ledKeys() int {
	n := 0
	for _, g := range s.ledGroups() {
		_ = g.ReadStale(func(st fsm.Reader) { st.View(func(kv store.Reader) { n += kv.Len() }) })
	}
	return n
}

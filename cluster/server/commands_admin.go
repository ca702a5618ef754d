package server

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/resp"
)

// SLOTRAFT is the container of slotraft's own administration commands, the
// ones `slotraft admin` sends. They speak JSON in a bulk string so tools
// other than our CLI can read them too.

func adminCommands() []*command {
	flags := resp.FlagAdmin | resp.FlagNoScript | resp.FlagLoading | resp.FlagStale
	acl := []string{"admin", "slow", "dangerous"}
	subs := []*command{
		{meta: subMeta("slotraft", "status", 2, flags, acl, "slotraft",
			"Returns the cluster's nodes, groups, leaders, replicas and lag as JSON.",
			"O(N) where N is the number of nodes and groups"), node: cmdSlotraftStatus},
		{meta: subMeta("slotraft", "leave", 2, flags, acl, "slotraft",
			"Makes the node leave: it hands off its leaderships, waits until no group needs it for a quorum, then its process exits.",
			"O(N) where N is the number of groups"), node: cmdSlotraftLeave},
		{meta: subMeta("slotraft", "transfer-leader", 4, flags, acl, "slotraft",
			"Makes a replica the preferred leader of a slot group (recorded in the group's log) and waits until it leads.",
			"O(1)"), node: cmdSlotraftTransferLeader},
		{meta: subMeta("slotraft", "remove-node", 3, flags, acl, "slotraft",
			"Removes a node from the cluster: a live one after draining its replicas and leaderships, one gone for good at once; its replicas are replaced on other nodes.",
			"O(N) where N is the number of groups"), node: cmdSlotraftRemoveNode},
		{meta: subMeta("slotraft", "move-slots", -4, flags, acl, "slotraft",
			"Records migrations of slots to a slot group; the slots move online. Returns how many were recorded.",
			"O(N) where N is the number of slots"), node: cmdSlotraftMoveSlots},
		{meta: subMeta("slotraft", "rebalance", 2, flags, acl, "slotraft",
			"Asks the placement controller to spread the slots evenly over the slot groups.",
			"O(1)"), node: cmdSlotraftRebalance},
		{meta: subMeta("slotraft", "migrations", 2, flags, acl, "slotraft",
			"Returns the progress of slot migrations as JSON.",
			"O(N) where N is the number of nodes and migrations"), node: cmdSlotraftMigrations},
		backupCommand(flags, acl), // backup.go
		{meta: subMeta("slotraft", "help", 2, resp.FlagLoading|resp.FlagStale, []string{"slow"}, "slotraft",
			"Returns helpful text about the different subcommands.", "O(1)"), node: cmdSlotraftHelp},
	}
	meta := &resp.Command{Name: "slotraft", Arity: -2, Group: "server", Since: "slotraft",
		Summary: "A container for slotraft's administration commands.", Complexity: "Depends on subcommand."}
	return []*command{container(meta, subs...)}
}

func cmdSlotraftStatus(s *Server, _ *client, _ [][]byte) resp.Value {
	ctx, cancel := context.WithTimeout(s.ctx, 2*cluster.StatusTimeout)
	defer cancel()
	b, err := json.Marshal(s.n.Status(ctx))
	if err != nil {
		return resp.Err(err)
	}
	return resp.Bulk(b)
}

func cmdSlotraftLeave(s *Server, _ *client, _ [][]byte) resp.Value {
	s.n.RequestLeave()
	return resp.OK()
}

func cmdSlotraftTransferLeader(s *Server, _ *client, args [][]byte) resp.Value {
	gid, err := strconv.ParseUint(string(args[2]), 10, 32)
	if err != nil {
		return resp.Err(resp.NewError("ERR invalid group id"))
	}
	ctx, cancel := context.WithTimeout(s.ctx, requestTimeout+cluster.TransferWait)
	defer cancel()
	if err := s.n.TransferLeader(ctx, uint32(gid), string(args[3])); err != nil {
		return nodeError(err)
	}
	return resp.OK()
}

func cmdSlotraftRemoveNode(s *Server, _ *client, args [][]byte) resp.Value {
	ctx, cancel := context.WithTimeout(s.ctx, requestTimeout)
	defer cancel()
	draining, err := s.n.RemoveNode(ctx, string(args[2]))
	switch {
	case err != nil:
		return nodeError(err)
	case draining:
		return resp.Status("DRAINING")
	}
	return resp.OK()
}

func cmdSlotraftHelp(_ *Server, _ *client, _ [][]byte) resp.Value {
	return helpReply("SLOTRAFT", []string{
		"STATUS",
		"    Return the cluster's nodes, slot groups, leaders, replicas and replication lag as JSON.",
		"TRANSFER-LEADER <group> <node-id>",
		"    Make <node-id> the preferred leader of slot group <group> (kept in the group's log) and wait until it leads.",
		"REMOVE-NODE <node-id>",
		"    Remove a node from the cluster: one that is gone for good at once; a live one after draining its replicas and leaderships to other nodes.",
		"MOVE-SLOTS <group> <slot|start-end> [<slot|start-end> ...]",
		"    Move slots to a slot group, online; returns how many migrations were recorded.",
		"REBALANCE",
		"    Spread the slots evenly over the slot groups, online.",
		"MIGRATIONS",
		"    Return the progress of slot migrations as JSON.",
		"LEAVE",
		"    Hand off this node's leaderships, wait until no group needs it for its quorum, then stop its process.",
		"BACKUP START <group> | NEXT <id> <count> | END <id>",
		"    Read a point-in-time copy of a slot group led here, key by key (what `slotraft admin backup` does).",
	})
}

// nodeError is the reply to a node operation that failed: its text with
// ERR in front, unless it has an error code already (a *resp.Error, or a
// text another node answered with one), and on one line.
func nodeError(err error) resp.Value {
	var re *resp.Error
	if errors.As(err, &re) {
		return resp.Err(re)
	}
	msg := strings.NewReplacer("\r", " ", "\n", " ").Replace(err.Error())
	if !strings.HasPrefix(msg, "ERR ") {
		msg = "ERR " + msg
	}
	return resp.Err(resp.NewError(msg))
}

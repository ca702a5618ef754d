package cluster

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/slotraft/slotraft/resp"
)

// SLOTRAFT is the container of slotraft's own administration commands, the
// ones `slotraft admin` sends. They speak JSON in a bulk string so tools
// other than our CLI can read them too.

func adminCommands() []*command {
	flags := resp.FlagAdmin | resp.FlagNoScript | resp.FlagLoading | resp.FlagStale
	acl := []string{"admin", "slow", "dangerous"}
	subs := []subcommand{
		{meta: subMeta("slotraft", "status", 2, flags, acl, "slotraft",
			"Returns the cluster's nodes, groups, leaders, replicas and lag as JSON.",
			"O(N) where N is the number of nodes and groups"), run: cmdSlotraftStatus},
		{meta: subMeta("slotraft", "leave", 2, flags, acl, "slotraft",
			"Makes the node leave: it hands off its leaderships, waits until no group needs it for a quorum, then its process exits.",
			"O(N) where N is the number of groups"), run: cmdSlotraftLeave},
		{meta: subMeta("slotraft", "transfer-leader", 4, flags, acl, "slotraft",
			"Makes a replica the preferred leader of a slot group (recorded in the group's log) and waits until it leads.",
			"O(1)"), run: cmdSlotraftTransferLeader},
		{meta: subMeta("slotraft", "remove-node", 3, flags, acl, "slotraft",
			"Removes a node that is gone for good from the cluster map; its replicas are replaced on other nodes.",
			"O(N) where N is the number of groups"), run: cmdSlotraftRemoveNode},
		{meta: subMeta("slotraft", "help", 2, resp.FlagLoading|resp.FlagStale, []string{"slow"}, "slotraft",
			"Returns helpful text about the different subcommands.", "O(1)"), run: cmdSlotraftHelp},
	}
	meta := &resp.Command{Name: "slotraft", Arity: -2, Group: "server", Since: "slotraft",
		Summary: "A container for slotraft's administration commands.", Complexity: "Depends on subcommand."}
	return []*command{container(meta, subs)}
}

func cmdSlotraftStatus(s *Server, _ *client, _ [][]byte) resp.Value {
	ctx, cancel := context.WithTimeout(s.ctx, 2*statusTimeout)
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
	ctx, cancel := context.WithTimeout(s.ctx, requestTimeout+transferWait)
	defer cancel()
	if err := s.n.TransferLeader(ctx, uint32(gid), string(args[3])); err != nil {
		return resp.Err(resp.NewError("ERR " + err.Error()))
	}
	return resp.OK()
}

func cmdSlotraftRemoveNode(s *Server, _ *client, args [][]byte) resp.Value {
	ctx, cancel := context.WithTimeout(s.ctx, requestTimeout)
	defer cancel()
	if err := s.n.RemoveNode(ctx, string(args[2])); err != nil {
		return resp.Err(resp.NewError("ERR " + err.Error()))
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
		"    Remove a node that is gone for good (not alive in gossip) from the cluster map; its replicas are replaced.",
		"LEAVE",
		"    Hand off this node's leaderships, wait until no group needs it for its quorum, then stop its process.",
	})
}

package server

import (
	"context"
	"errors"
	"net"
	"strconv"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
)

// CLUSTER MEET and CLUSTER REPLICATE, and the slots an unmet node claims,
// for clusters formed as Redis Cluster's are (slotraft server --meet,
// redis-cli --cluster create|add-node): cluster/meet.go does the meeting.

var errReplicateAuto = resp.NewError("ERR slotraft places the replicas of a cluster it created itself; CLUSTER REPLICATE works in a cluster formed with CLUSTER MEET (slotraft server --meet)")

func clusterMeetCommands(sub func(name string, arity int, flags resp.Flag, since, summary, complexity string, run nodeHandler) *command) []*command {
	const as = resp.FlagAdmin | resp.FlagStale
	return []*command{
		adminACL(sub("meet", -4, as, "3.0.0", "Forces a node to handshake with another node.", "O(1)", cmdClusterMeet)),
		adminACL(sub("replicate", 3, as, "3.0.0", "Configure a node as replica of a master node.", "O(1)", cmdClusterReplicate)),
	}
}

// cmdClusterMeet is CLUSTER MEET ip port [cluster-bus-port] with Redis's
// checks; the meeting itself is slotraft's (cluster.Node.Meet). Redis
// answers OK and handshakes later; slotraft meets at once so that what
// cannot be done is an error, except an unreachable node, which it keeps
// trying for a while as Redis does.
func cmdClusterMeet(s *Server, _ *client, args [][]byte) resp.Value {
	if len(args) > 5 {
		return resp.Err(resp.ErrSubcommandSyntax(args[0], args[1]))
	}
	port, err := resp.ParseInt(args[3])
	if err != nil {
		return resp.Err(resp.Errorf("ERR Invalid base port specified: %s", args[3]))
	}
	cport := port + 10000
	if len(args) == 5 {
		if cport, err = resp.ParseInt(args[4]); err != nil {
			return resp.Err(resp.Errorf("ERR Invalid bus port specified: %s", args[4]))
		}
	}
	ip := net.ParseIP(string(args[2]))
	if ip == nil || port <= 0 || port > 65535 || cport <= 0 || cport > 65535 {
		return resp.Err(resp.Errorf("ERR Invalid node address specified: %s:%s", args[2], args[3]))
	}
	bus := net.JoinHostPort(ip.String(), strconv.FormatInt(cport, 10))
	ctx, cancel := context.WithTimeout(s.ctx, requestTimeout)
	defer cancel()
	switch err := s.n.Meet(ctx, bus); {
	case err == nil:
		return resp.OK()
	case errors.Is(err, cluster.ErrMeetUnreachable):
		s.n.MeetLater(bus)
		return resp.OK()
	default:
		return nodeError(err)
	}
}

// cmdClusterReplicate is CLUSTER REPLICATE node-id: Redis's checks, then
// this node replicates the slot groups the master leads (cluster.Node.
// Replicate) in a cluster placed by hand.
func cmdClusterReplicate(s *Server, _ *client, args [][]byte) resp.Value {
	t := s.topology()
	m, ok := t.peerByNodeID(args[2])
	switch {
	case !ok || len(t.claims) > 0:
		return errUnknownNode(args[2])
	case m.ID == t.self.ID:
		return resp.Err(resp.NewError("ERR Can't replicate myself"))
	}
	if master, _, _ := t.nodeRole(m.ID); !master {
		return resp.Err(resp.NewError("ERR I can only replicate a master, not a replica."))
	}
	if master, ranges, _ := t.nodeRole(t.self.ID); master && (len(ranges) > 0 || s.ledKeys() > 0) {
		return resp.Err(resp.NewError("ERR To set a master the node must be empty and without assigned slots."))
	}
	if !s.n.Map().Manual {
		return resp.Err(errReplicateAuto)
	}
	ctx, cancel := context.WithTimeout(s.ctx, requestTimeout)
	defer cancel()
	if err := s.n.Replicate(ctx, m.ID); err != nil {
		return nodeError(err)
	}
	return resp.OK()
}

// claimSlots is ADDSLOTS (add) or DELSLOTS on an unmet node: its claimed
// slots change, with Redis's checks.
func claimSlots(s *Server, ranges []slots.Range, add bool) resp.Value {
	err := s.n.UpdateClaims(func(cur []slots.Range) ([]slots.Range, error) {
		have := slots.NewSet(cur...)
		if errv := checkSlotArgs(ranges, add, have.Has); errv != nil {
			return nil, errv
		}
		for _, r := range ranges {
			for sl := int(r.Start); sl <= int(r.End); sl++ {
				if add {
					have.Add(uint16(sl))
				} else {
					have.Remove(uint16(sl))
				}
			}
		}
		return have.Ranges(), nil
	})
	var errv *resp.Error
	switch {
	case errors.As(err, &errv):
		return resp.Err(errv)
	case err != nil:
		return nodeError(err)
	}
	return resp.OK()
}

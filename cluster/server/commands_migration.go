package server

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
)

// SLOTRAFT MOVE-SLOTS, REBALANCE and MIGRATIONS (slot migration, mover.go).

// moveSlotsTimeout bounds recording many migrations (one meta entry each).
const moveSlotsTimeout = 2 * requestTimeout

func cmdSlotraftMoveSlots(s *Server, _ *client, args [][]byte) resp.Value {
	gid, err := strconv.ParseUint(string(args[2]), 10, 32)
	if err != nil {
		return resp.Err(resp.NewError("ERR invalid group id"))
	}
	var list []uint16
	for _, a := range args[3:] {
		r, err := slots.ParseRange(string(a))
		if err != nil {
			return resp.Err(errInvalidSlot)
		}
		for sl := int(r.Start); sl <= int(r.End); sl++ {
			list = append(list, uint16(sl))
		}
	}
	ctx, cancel := context.WithTimeout(s.ctx, moveSlotsTimeout)
	defer cancel()
	n, err := s.n.MoveSlots(ctx, uint32(gid), list)
	if err != nil {
		return nodeError(err)
	}
	return resp.Int(int64(n))
}

func cmdSlotraftRebalance(s *Server, _ *client, _ [][]byte) resp.Value {
	ctx, cancel := context.WithTimeout(s.ctx, requestTimeout)
	defer cancel()
	if err := s.n.Rebalance(ctx); err != nil {
		return nodeError(err)
	}
	return resp.OK()
}

func cmdSlotraftMigrations(s *Server, _ *client, _ [][]byte) resp.Value {
	ctx, cancel := context.WithTimeout(s.ctx, 2*cluster.StatusTimeout)
	defer cancel()
	b, err := json.Marshal(s.n.Migrations(ctx))
	if err != nil {
		return resp.Err(err)
	}
	return resp.Bulk(b)
}

package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/slotraft/slotraft/fsm"
)

// proposeTo proposes an internal entry (settings, slot migration) to group
// gid's leader: here, or over the bus (svcEntry) on the node that leads it.
// An op the state machine refused comes back as the error.
func (n *Node) proposeTo(ctx context.Context, gid uint32, e *fsm.Entry) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	g, ok := n.Group(gid)
	if !ok {
		return fmt.Errorf("no group %d in the map", gid)
	}
	if g.IsLeader() {
		return g.proposeEntry(ctx, e)
	}
	leader, ok := n.Leader(g)
	if !ok || leader.ID == n.self.ID {
		return fmt.Errorf("group %d has no leader", gid)
	}
	_, err := n.call(ctx, leader.ID, svcEntry, encodeGroupEntry(gid, e))
	return err
}

// encodeGroupEntry is svcEntry's payload: version 1, group id, the entry.
func encodeGroupEntry(gid uint32, e *fsm.Entry) []byte {
	b := binary.BigEndian.AppendUint32([]byte{1}, gid)
	return append(b, e.Encode()...)
}

var errBadGroupEntry = errors.New("bad group entry request")

func decodeGroupEntry(b []byte) (uint32, *fsm.Entry, error) {
	if len(b) < 5 || b[0] != 1 {
		return 0, nil, errBadGroupEntry
	}
	e, err := fsm.DecodeEntry(b[5:])
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %w", errBadGroupEntry, err)
	}
	switch e.Type {
	case fsm.EntryMigrate, fsm.EntrySettings:
	default:
		return 0, nil, fmt.Errorf("%w: entry type %#x may not be proposed by a peer", errBadGroupEntry, uint8(e.Type))
	}
	return binary.BigEndian.Uint32(b[1:5]), e, nil
}

// serveGroupEntry proposes a peer's entry to a group led here (svcEntry).
func (n *Node) serveGroupEntry(ctx context.Context, _ string, payload []byte) ([]byte, error) {
	gid, e, err := decodeGroupEntry(payload)
	if err != nil {
		return nil, err
	}
	g, ok := n.Group(gid)
	if !ok || !g.IsLeader() {
		return nil, fmt.Errorf("group %d is not led by %s", gid, n.self.ID)
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	return nil, g.proposeEntry(ctx, e)
}

package meta

import (
	"cmp"
	"fmt"
	"slices"
)

// AddGroup creates a slot group that owns no slots yet, and sets Rebalance
// so that placement moves slots to it. Only the group's ID and Replicas
// (distinct Active nodes, none draining) are read, and Ranges must be
// empty: Boot becomes a copy of Replicas, Changes 0.
type AddGroup struct {
	Group Group `json:"group"`
}

func (c AddGroup) apply(m *Map) error {
	if !m.Initialized() {
		return ErrNotInitialized
	}
	in := c.Group
	switch {
	case in.ID == 0 || in.ID >= maxGroupID:
		return fmt.Errorf("%w: group id %d outside 1..%d", ErrInvalid, in.ID, maxGroupID-1)
	case m.group(in.ID) != nil:
		return fmt.Errorf("%w: group %d exists", ErrInvalid, in.ID)
	case len(in.Ranges) > 0:
		// Slots reach a group only by migration, so no slot is owned twice.
		return fmt.Errorf("%w: new group %d has slot ranges", ErrInvalid, in.ID)
	}
	if err := checkReplicas(m, in.ID, in.Replicas, nil); err != nil {
		return err
	}
	g := Group{ID: in.ID, Replicas: slices.Clone(in.Replicas), Boot: slices.Clone(in.Replicas)}
	// Keep the groups sorted by id, as Init leaves them.
	i, _ := slices.BinarySearchFunc(m.Groups, g.ID, func(g Group, id uint32) int { return cmp.Compare(g.ID, id) })
	m.Groups = slices.Insert(m.Groups, i, g)
	m.Rebalance = true
	return nil
}

// SetRebalance sets or clears Map.Rebalance: whether placement should even
// out the slots over the groups.
type SetRebalance struct {
	On bool `json:"on"`
}

func (c SetRebalance) apply(m *Map) error {
	if !m.Initialized() {
		return ErrNotInitialized
	}
	if m.Rebalance == c.On {
		return errUnchanged
	}
	m.Rebalance = c.On
	return nil
}

// DrainNode marks an Active node Draining: placement moves its replicas
// and leaderships to other nodes, then removes it. Draining a draining
// node changes nothing.
type DrainNode struct {
	ID string `json:"id"`
}

func (c DrainNode) apply(m *Map) error {
	nd, err := m.member(c.ID)
	if err != nil {
		return err
	}
	if nd.State == Draining {
		return errUnchanged
	}
	nd.State = Draining
	return nil
}

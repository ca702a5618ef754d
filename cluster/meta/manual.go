package meta

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/slotraft/slotraft/slots"
)

// Clusters placed by hand, as Redis Cluster's operators do with
// CLUSTER ADDSLOTS, MEET and REPLICATE (redis-cli --cluster create,
// add-node, fix): the map's Manual flag says that slots reach groups only
// where an operator put them, so placement neither adds groups as nodes
// join nor evens out the slots on its own. Replicas are still placed by
// slotraft (the replication factor); a node's Redis role is recorded for
// CLUSTER NODES (Node.ReplicaOf).

// Meet adds a node to the cluster as CLUSTER MEET does, with the slots it
// was given before it met the cluster (CLUSTER ADDSLOTS on the unmet node):
// the node becomes Active (a removed node comes back as a new incarnation)
// and then owns its slots as ClaimSlots gives them. Without slots it
// prefers to lead no group: CLUSTER NODES shows it as a master without
// slots, as Redis Cluster shows a node it met, until it imports slots or
// replicates a master. A member meeting again only claims its slots.
type Meet struct {
	Node   Node          `json:"node"`
	Ranges []slots.Range `json:"ranges,omitempty"`
}

func (c Meet) apply(m *Map) error {
	if !m.Initialized() {
		return ErrNotInitialized
	}
	added := false
	if !m.IsActive(c.Node.ID) {
		if err := (AddNode{Node: c.Node}).apply(m); err != nil {
			return err
		}
		added = true
	}
	if len(c.Ranges) == 0 {
		if !added {
			return errUnchanged
		}
		return nil
	}
	return (ClaimSlots{Node: c.Node.ID, Ranges: c.Ranges}).apply(m)
}

// ClaimSlots gives unassigned slots to a node, as CLUSTER ADDSLOTS does: to
// the lowest-id group whose preferred leader (first replica) the node is,
// or to a new group of that node alone when it prefers to lead none — a
// group without slots when Ranges is empty (a group to import slots into).
// A node given slots is no replica any more (ReplicaOf cleared). Every slot
// must be unassigned.
type ClaimSlots struct {
	Node   string        `json:"node"`
	Ranges []slots.Range `json:"ranges,omitempty"`
}

func (c ClaimSlots) apply(m *Map) error {
	nd, err := m.member(c.Node)
	if err != nil {
		return err
	}
	if nd.State == Draining {
		return fmt.Errorf("%w: node %q is draining", ErrInvalid, c.Node)
	}
	if err := checkUnassigned(m, c.Ranges); err != nil {
		return err
	}
	if len(c.Ranges) > 0 {
		nd.ReplicaOf = ""
	}
	for i := range m.Groups {
		if g := &m.Groups[i]; len(g.Replicas) > 0 && g.Replicas[0] == c.Node {
			if len(c.Ranges) == 0 {
				return errUnchanged
			}
			g.Ranges = slots.Merge(append(g.Ranges, c.Ranges...))
			return nil
		}
	}
	g := Group{ID: nextGroupID(m), Ranges: slots.Merge(slices.Clone(c.Ranges)), Replicas: []string{c.Node}, Boot: []string{c.Node}}
	if g.ID >= maxGroupID {
		return fmt.Errorf("%w: no group id left", ErrInvalid)
	}
	i, _ := slices.BinarySearchFunc(m.Groups, g.ID, func(g Group, id uint32) int { return cmp.Compare(g.ID, id) })
	m.Groups = slices.Insert(m.Groups, i, g)
	return nil
}

// checkUnassigned refuses ranges outside the slots and slots that a group
// owns (a migrating slot is owned by its source until it flips).
func checkUnassigned(m *Map, ranges []slots.Range) error {
	for _, r := range ranges {
		if r.Start > r.End || r.End >= slots.Count {
			return fmt.Errorf("%w: bad slot range %d-%d", ErrInvalid, r.Start, r.End)
		}
		for s := int(r.Start); s <= int(r.End); s++ {
			if g, ok := m.GroupOf(uint16(s)); ok {
				return fmt.Errorf("%w: slot %d is owned by group %d", ErrInvalid, s, g.ID)
			}
		}
	}
	return nil
}

// nextGroupID is one more than the highest group id.
func nextGroupID(m *Map) uint32 {
	var top uint32
	for _, g := range m.Groups {
		top = max(top, g.ID)
	}
	return top + 1
}

// Replicate makes Node a replica of Master, as CLUSTER REPLICATE does: it
// is recorded as Node.ReplicaOf, and Node joins the replica set of every
// group Master prefers to lead. Where that set already has Want replicas,
// Node takes the place of its last replica other than Master (the group
// keeps its size); below Want it is added. Node must prefer to lead no
// group that owns slots.
type Replicate struct {
	Node   string `json:"node"`
	Master string `json:"master"`
	Want   int    `json:"want"`
}

func (c Replicate) apply(m *Map) error {
	nd, err := m.member(c.Node)
	if err != nil {
		return err
	}
	if _, err := m.member(c.Master); err != nil {
		return err
	}
	if c.Node == c.Master {
		return fmt.Errorf("%w: node %q cannot replicate itself", ErrInvalid, c.Node)
	}
	for _, g := range m.Groups {
		if len(g.Replicas) > 0 && g.Replicas[0] == c.Node && len(g.Ranges) > 0 {
			return fmt.Errorf("%w: node %q leads group %d, which owns slots", ErrInvalid, c.Node, g.ID)
		}
	}
	nd.ReplicaOf = c.Master
	for i := range m.Groups {
		g := &m.Groups[i]
		if len(g.Replicas) == 0 || g.Replicas[0] != c.Master || slices.Contains(g.Replicas, c.Node) {
			continue
		}
		if len(g.Replicas) >= max(c.Want, 2) {
			g.Replicas[len(g.Replicas)-1] = c.Node
		} else {
			g.Replicas = append(g.Replicas, c.Node)
		}
		g.Changes++
	}
	return nil
}

package meta

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/slotraft/slotraft/slots"
)

// Errors of the commands, compared with errors.Is; most come wrapped with
// detail.
var (
	ErrInitialized    = errors.New("meta: map already initialized")
	ErrNotInitialized = errors.New("meta: map not initialized")
	ErrInvalid        = errors.New("meta: invalid command")
	ErrUnknownNode    = errors.New("meta: unknown node")
	ErrNodeRemoved    = errors.New("meta: node already removed")
	ErrUnknownGroup   = errors.New("meta: unknown group")
	ErrStale          = errors.New("meta: stale replica set")
)

// maxGroupID bounds slot group ids: ids from it up are kept for groups that
// are not slot groups (such as the meta group itself on the shared
// transport).
const maxGroupID = 0xFFFFFF00

// errUnchanged is returned by a command's apply when the map already is as
// the command asks: Apply then returns the old map, so the epoch stays.
var errUnchanged = errors.New("meta: unchanged")

// Command is one change to the map. Only this package's types implement it.
type Command interface{ apply(m *Map) error }

// Apply applies cmd to a copy of m and returns the new map, with the next
// Epoch, or m itself when the command changes nothing. m is never modified;
// a nil m is the empty map. On error it returns m and the error.
func Apply(m *Map, cmd Command) (*Map, error) {
	if cmd == nil {
		return m, fmt.Errorf("%w: nil command", ErrInvalid)
	}
	c := m.Clone()
	switch err := cmd.apply(c); {
	case errors.Is(err, errUnchanged):
		return m, nil
	case err != nil:
		return m, err
	}
	c.Epoch++
	return c, nil
}

// Init creates the map. Nodes become Active (Incarnation 1 unless given);
// each group's Boot is a copy of its Replicas and its Changes is 0.
type Init struct {
	Nodes  []Node  `json:"nodes"`
	Groups []Group `json:"groups"`
	// Manual creates a map whose slots are placed by hand (manual.go).
	Manual bool `json:"manual,omitempty"`
}

func (c Init) apply(m *Map) error {
	if m.Initialized() {
		return ErrInitialized
	}
	nodes, err := initNodes(c.Nodes)
	if err != nil {
		return err
	}
	groups, err := initGroups(c.Groups, nodes)
	if err != nil {
		return err
	}
	m.Nodes, m.Groups, m.Manual = nodes, groups, c.Manual
	return nil
}

// initNodes checks and copies Init's nodes, sorted by id.
func initNodes(in []Node) ([]Node, error) {
	nodes := slices.Clone(in)
	slices.SortFunc(nodes, func(a, b Node) int { return strings.Compare(a.ID, b.ID) })
	for i := range nodes {
		nd := &nodes[i]
		if nd.ID == "" {
			return nil, fmt.Errorf("%w: node with an empty id", ErrInvalid)
		}
		if i > 0 && nodes[i-1].ID == nd.ID {
			return nil, fmt.Errorf("%w: node %q listed twice", ErrInvalid, nd.ID)
		}
		nd.State = Active
		if nd.Incarnation == 0 {
			nd.Incarnation = 1
		}
	}
	return nodes, nil
}

// initGroups checks and copies Init's groups, sorted by id.
func initGroups(in []Group, nodes []Node) ([]Group, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("%w: no groups", ErrInvalid)
	}
	nm := &Map{Nodes: nodes}
	groups := make([]Group, len(in))
	for i, g := range in {
		if err := checkInitGroup(g, nm); err != nil {
			return nil, err
		}
		groups[i] = Group{
			ID:       g.ID,
			Ranges:   slices.Clone(g.Ranges),
			Replicas: slices.Clone(g.Replicas),
			Boot:     slices.Clone(g.Replicas),
		}
	}
	slices.SortFunc(groups, func(a, b Group) int { return cmp.Compare(a.ID, b.ID) })
	for i := 1; i < len(groups); i++ {
		if groups[i].ID == groups[i-1].ID {
			return nil, fmt.Errorf("%w: group %d listed twice", ErrInvalid, groups[i].ID)
		}
	}
	if err := checkRanges(groups); err != nil {
		return nil, err
	}
	return groups, nil
}

func checkInitGroup(g Group, nm *Map) error {
	if g.ID == 0 || g.ID >= maxGroupID {
		return fmt.Errorf("%w: group id %d outside 1..%d", ErrInvalid, g.ID, maxGroupID-1)
	}
	if len(g.Replicas) == 0 {
		// nobody could bootstrap it
		return fmt.Errorf("%w: group %d has no replicas", ErrInvalid, g.ID)
	}
	for i, id := range g.Replicas {
		if _, ok := nm.Node(id); !ok {
			return fmt.Errorf("%w: group %d: replica %q is not a node", ErrInvalid, g.ID, id)
		}
		if slices.Contains(g.Replicas[:i], id) {
			return fmt.Errorf("%w: group %d: replica %q listed twice", ErrInvalid, g.ID, id)
		}
	}
	return nil
}

// checkRanges refuses ranges outside the slots or owned twice.
func checkRanges(groups []Group) error {
	type owned struct {
		r     slots.Range
		group uint32
	}
	var all []owned
	for _, g := range groups {
		for _, r := range g.Ranges {
			if r.Start > r.End || r.End >= slots.Count {
				return fmt.Errorf("%w: group %d: bad slot range %d-%d", ErrInvalid, g.ID, r.Start, r.End)
			}
			all = append(all, owned{r, g.ID})
		}
	}
	slices.SortFunc(all, func(a, b owned) int { return int(a.r.Start) - int(b.r.Start) })
	for i := 1; i < len(all); i++ {
		if prev, cur := all[i-1], all[i]; cur.r.Start <= prev.r.End {
			return fmt.Errorf("%w: slot range %v of group %d overlaps %v of group %d",
				ErrInvalid, cur.r, cur.group, prev.r, prev.group)
		}
	}
	return nil
}

// AddNode adds a node, brings a removed one back as a new incarnation, or
// updates a member's addresses. Only ID, Client and Bus are read. A
// draining node stays draining: it is alive and announces itself again,
// which must not undo the drain.
type AddNode struct {
	Node Node `json:"node"`
}

func (c AddNode) apply(m *Map) error {
	if !m.Initialized() {
		return ErrNotInitialized
	}
	in := c.Node
	if in.ID == "" || in.Bus == "" {
		return fmt.Errorf("%w: node %q needs an id and a bus address", ErrInvalid, in.ID)
	}
	i, ok := m.nodeIndex(in.ID)
	if !ok {
		m.Nodes = slices.Insert(m.Nodes, i, Node{ID: in.ID, Client: in.Client, Bus: in.Bus, State: Active, Incarnation: 1, UID: in.UID})
		return nil
	}
	nd := &m.Nodes[i]
	switch {
	case nd.State == Removed:
		nd.State, nd.Drained = Active, false
		nd.Incarnation++
		nd.UID = in.UID // a new member: its data directory's
	case nd.Client == in.Client && nd.Bus == in.Bus:
		return errUnchanged
	}
	nd.Client, nd.Bus = in.Client, in.Bus
	return nil
}

// RemoveNode marks a member (Active or Draining) Removed and drops it from
// every group's replicas. Removing a group's last replica is allowed: the
// map then shows a group nobody hosts, for operators to see.
type RemoveNode struct {
	ID string `json:"id"`
}

func (c RemoveNode) apply(m *Map) error {
	nd, err := m.member(c.ID)
	if err != nil {
		return err
	}
	nd.State, nd.Drained = Removed, nd.State == Draining
	for j := range m.Groups {
		g := &m.Groups[j]
		if slices.Contains(g.Replicas, c.ID) {
			g.Replicas = slices.DeleteFunc(g.Replicas, func(id string) bool { return id == c.ID })
			g.Changes++
		}
	}
	return nil
}

// SetReplicas replaces a group's replica set if it still is Expect (in the
// same order: the order says which replica is the preferred leader), so two
// deciders racing on a stale map cannot overwrite each other.
type SetReplicas struct {
	Group    uint32   `json:"group"`
	Replicas []string `json:"replicas"`
	Expect   []string `json:"expect"`
}

func (c SetReplicas) apply(m *Map) error {
	if !m.Initialized() {
		return ErrNotInitialized
	}
	g := m.group(c.Group)
	if g == nil {
		return fmt.Errorf("%w: %d", ErrUnknownGroup, c.Group)
	}
	if !slices.Equal(g.Replicas, c.Expect) {
		return fmt.Errorf("%w: group %d has replicas %q, not %q", ErrStale, c.Group, g.Replicas, c.Expect)
	}
	if err := checkReplicas(m, c.Group, c.Replicas, g.Replicas); err != nil {
		return err
	}
	if slices.Equal(g.Replicas, c.Replicas) {
		return errUnchanged
	}
	g.Replicas = slices.Clone(c.Replicas)
	g.Changes++
	return nil
}

// checkReplicas refuses an empty replica set, one listing a node twice or
// a node that is not a member, and a draining node that is not in kept (the
// replicas so far): a draining node keeps its replicas until they are moved,
// but gets no new one.
func checkReplicas(m *Map, group uint32, ids, kept []string) error {
	if len(ids) == 0 {
		return fmt.Errorf("%w: group %d: empty replica set", ErrInvalid, group)
	}
	for i, id := range ids {
		if !m.IsActive(id) {
			return fmt.Errorf("%w: group %d: replica %q is not an active node", ErrInvalid, group, id)
		}
		if m.IsDraining(id) && !slices.Contains(kept, id) {
			return fmt.Errorf("%w: group %d: replica %q is draining", ErrInvalid, group, id)
		}
		if slices.Contains(ids[:i], id) {
			return fmt.Errorf("%w: group %d: replica %q listed twice", ErrInvalid, group, id)
		}
	}
	return nil
}

// member points at node id of an initialized map, if it is a member
// (Active or Draining).
func (m *Map) member(id string) (*Node, error) {
	if !m.Initialized() {
		return nil, ErrNotInitialized
	}
	i, ok := m.nodeIndex(id)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownNode, id)
	}
	if m.Nodes[i].State == Removed {
		return nil, fmt.Errorf("%w: %q", ErrNodeRemoved, id)
	}
	return &m.Nodes[i], nil
}

// nodeIndex finds node id in m's sorted nodes, or where it would be
// inserted.
func (m *Map) nodeIndex(id string) (int, bool) {
	return slices.BinarySearchFunc(m.Nodes, id, func(n Node, id string) int { return strings.Compare(n.ID, id) })
}

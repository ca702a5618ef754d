package server

import (
	"slices"

	"github.com/slotraft/slotraft/cluster"
)

// What the Sentinel facade monitors, read from this node's state only (no
// network): the cluster map, the leaders known here, gossip, and the
// front ends the nodes announce. A "master" is the whole deployment: in a
// cluster whose slots are all in one group (the Sentinel shape), the node
// leading that group, its client address, with the group's other replicas
// as its replicas; in a cluster of several groups, the proxy of one node
// (docs/sentinel.md).

// sentinelObservation is one reading of the deployment.
type sentinelObservation struct {
	t *topology
	// groups is the number of groups that own slots.
	groups int
	// One group: the group, its leader ("" while unknown), its replicas
	// (preferred leader first).
	group   *cluster.Group
	leader  string
	members []string
	// Several groups: the nodes announcing a proxy and its address.
	proxies map[string]string
	// facades are the nodes announcing a Sentinel facade, with its
	// address, this node included.
	facades map[string]string
	// voters are the nodes whose majority decides a failover: the
	// group's replicas, or every node of a cluster of several groups.
	voters []string
}

// observe reads the deployment now.
func (f *Sentinel) observe() *sentinelObservation {
	t := f.s.topology()
	o := &sentinelObservation{t: t, proxies: map[string]string{}, facades: map[string]string{}}
	var owning []groupView
	for _, gv := range t.groups {
		if len(gv.ranges) > 0 {
			owning = append(owning, gv)
		}
	}
	o.groups = len(owning)
	for _, p := range t.peers {
		fe := f.s.n.FrontEndsOf(p.ID)
		if fe.Proxy != "" {
			o.proxies[p.ID] = fe.Proxy
		}
		if fe.Sentinel != "" {
			o.facades[p.ID] = fe.Sentinel
		}
		o.voters = append(o.voters, p.ID)
	}
	if len(owning) == 1 {
		gv := owning[0]
		o.group, o.leader = gv.g, gv.leader
		o.members = gv.g.Replicas()
		o.voters = o.members
	}
	return o
}

// oneGroup: the deployment has the Sentinel shape.
func (o *sentinelObservation) oneGroup() bool { return o.group != nil }

// alive reports whether gossip sees node id alive now.
func (o *sentinelObservation) alive(id string) bool { return o.t.live[id] == cluster.GossipAlive }

// gone reports whether gossip agreed node id is dead or has left.
func (o *sentinelObservation) gone(id string) bool {
	st := o.t.live[id]
	return st == cluster.GossipDead || st == cluster.GossipLeft
}

// clientAddr is node id's client address, "" if not in the map.
func (o *sentinelObservation) clientAddr(id string) string { return o.t.byID[id].ClientAddr }

// masterCandidate is the master the deployment has now: its node and
// address; ok false when there is none to name (several groups and no
// live proxy, or no group at all). keep is the facade's current master
// (node id), kept while it still qualifies, so that a master only
// changes when it must, as Sentinel's does.
func (o *sentinelObservation) masterCandidate(self, keep string) (id, addr string, ok bool) {
	if o.oneGroup() {
		if o.leader == "" {
			return "", "", false
		}
		return o.leader, o.clientAddr(o.leader), true
	}
	usable := func(id string) bool { return o.proxies[id] != "" && !o.gone(id) }
	if keep != "" && usable(keep) {
		return keep, o.proxies[keep], true
	}
	if usable(self) && o.alive(self) {
		return self, o.proxies[self], true
	}
	ids := make([]string, 0, len(o.proxies))
	for id := range o.proxies {
		if o.alive(id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return "", "", false
	}
	slices.Sort(ids)
	return ids[0], o.proxies[ids[0]], true
}

// replicaIDs are the master's replicas: the group's other replicas in
// the Sentinel shape; none for a proxy (docs/sentinel.md).
func (o *sentinelObservation) replicaIDs(master string) []string {
	if !o.oneGroup() {
		return nil
	}
	var out []string
	for _, id := range o.members {
		if id != master {
			out = append(out, id)
		}
	}
	return out
}

// quorum is the majority of the voters: the nodes that must be up for a
// failover (a Raft election) to succeed.
func (o *sentinelObservation) quorum() int { return len(o.voters)/2 + 1 }

// usableVoters counts the voters gossip sees alive.
func (o *sentinelObservation) usableVoters() int {
	n := 0
	for _, id := range o.voters {
		if o.alive(id) {
			n++
		}
	}
	return n
}

package cluster

// A node's optional front ends besides its client port — the Sentinel
// facade (--sentinel-bind) and the proxy (--proxy-bind) — are announced in
// gossip (gossipMeta's "s" and "p"), so that every node's facade can list
// the other facades (SENTINEL SENTINELS) and name a proxy as the master of
// a cluster of several groups. Nodes of earlier releases ignore the two
// fields (JSON), and announce none.

// FrontEnds are the addresses (host:port, as clients dial them) of a
// node's optional front ends; "" for one it does not run.
type FrontEnds struct {
	Sentinel string // the Sentinel facade
	Proxy    string // the proxy for clients that do not speak Redis Cluster
}

// SetSentinelAddr announces this node's Sentinel facade address ("":
// none) to the others.
func (n *Node) SetSentinelAddr(addr string) {
	n.setFrontEnds(func(fe *FrontEnds) { fe.Sentinel = addr })
}

// SetProxyAddr announces this node's proxy address ("": none).
func (n *Node) SetProxyAddr(addr string) { n.setFrontEnds(func(fe *FrontEnds) { fe.Proxy = addr }) }

// setFrontEnds changes this node's front ends with change and announces
// them (gossip).
func (n *Node) setFrontEnds(change func(*FrontEnds)) {
	n.frontEndsMu.Lock()
	fe := n.ownFrontEnds()
	change(&fe)
	n.frontEnds.Store(&fe)
	n.frontEndsMu.Unlock()
	if n.gossip != nil {
		n.goBackground(n.gossip.announce)
	}
}

// FrontEndsOf is node id's front ends as it last announced them (this
// node's own as set), whether or not it is alive now; zero if unknown.
func (n *Node) FrontEndsOf(id string) FrontEnds {
	if id == n.self.ID {
		return n.ownFrontEnds()
	}
	if n.gossip == nil {
		return FrontEnds{}
	}
	n.gossip.mu.Lock()
	defer n.gossip.mu.Unlock()
	gm := n.gossip.meta[id]
	return FrontEnds{Sentinel: gm.Sentinel, Proxy: gm.Proxy}
}

func (n *Node) ownFrontEnds() FrontEnds {
	if fe := n.frontEnds.Load(); fe != nil {
		return *fe
	}
	return FrontEnds{}
}

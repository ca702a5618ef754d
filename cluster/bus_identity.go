package cluster

// busPeerID is the node id the cluster map places at bus address addr
// (its active nodes; before this node has a map, the configured peers),
// "" if none: with bus TLS from the operator's PKI, a dial to addr accepts
// only a certificate naming that id (transport.Config.PeerID). Addresses
// nobody holds (--join seeds, gossip's resolved IPs, a removed node's)
// accept any node of the CA. Removed nodes are skipped: their address may
// now be another node's.
func (n *Node) busPeerID(addr string) string {
	st := n.state()
	peers := st.peers
	if !st.m.Initialized() {
		peers = n.cfg.Peers
	}
	for _, p := range peers {
		if p.BusAddr == addr {
			return p.ID
		}
	}
	return ""
}

// BusAuthFailures is how many bus handshakes failed since the node
// started, both ways (Config.ClusterSecret, Config.BusTLS;
// transport.Mux.AuthFailures).
func (n *Node) BusAuthFailures() uint64 { return n.mux.AuthFailures() }

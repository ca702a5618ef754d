package server

import (
	"net"

	"github.com/slotraft/slotraft/resp"
)

// What the node's other client listeners (the proxy, cluster/server/proxy)
// take from the server, so that a client is held to the same rules on
// every port of a node.

// RefuseUnprotected applies protected mode to a client of another listener
// of this node: it reports whether nc was refused, in which case it has
// been told why (Redis's -DENIED text) and closed.
func (s *Server) RefuseUnprotected(nc net.Conn) bool { return s.protectedRefused(nc) }

// ClientLimits are maxclients and the protocol limits of a new client's
// requests (proto-max-bulk-len, client-query-buffer-limit), as CONFIG has
// them now.
func (s *Server) ClientLimits() (maxClients int64, limits resp.Limits) {
	return s.connCfg.maxClients.Load(), s.connCfg.limits()
}

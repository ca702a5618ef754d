package cluster

import (
	"context"
	"fmt"
	"sync"

	"github.com/slotraft/slotraft/cluster/transport"
)

// Services of node-to-node calls over the bus (transport.RPCGroup). The
// values are part of the wire protocol: never reuse or renumber one.
const (
	svcPublish  transport.Service = 1 // pub/sub fan-out (pubsub.go)
	svcFunction transport.Service = 2 // FUNCTION changes for groups led by the callee (function.go)
	svcStatus   transport.Service = 3 // the callee's view of the groups it hosts (status.go)
	_           transport.Service = 4 // retired: group settings go through svcEntry

	svcMeta  transport.Service = 5 // a change of the cluster map for the meta leader (metagroup.go)
	svcEntry transport.Service = 6 // an internal entry for a group led by the callee (groupentry.go)

	svcMetaEpoch transport.Service = 7 // the current map's epoch, from the meta leader (metagroup.go)
	svcMeet      transport.Service = 8 // CLUSTER MEET between two nodes (meet.go)
	svcReport    transport.Service = 9 // the callee's report on itself, for the Sentinel facade (report.go)
)

// rpcFunc answers one call from node from.
type rpcFunc func(ctx context.Context, from string, payload []byte) ([]byte, error)

// rpcTable holds the handlers of this node's services. Handlers are added
// while the node and its server start; a call for a service nobody handles
// (yet) fails with an error the caller sees as a RemoteError.
type rpcTable struct {
	mu       sync.RWMutex
	handlers map[transport.Service]rpcFunc
}

// handle registers fn for svc. A later registration replaces an earlier
// one: the services of a client server (pub/sub, functions) are registered
// by NewServer, and a node may get a new server after the old one closed.
func (t *rpcTable) handle(svc transport.Service, fn rpcFunc) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.handlers == nil {
		t.handlers = map[transport.Service]rpcFunc{}
	}
	t.handlers[svc] = fn
}

// serve is the transport's RPCHandler.
func (t *rpcTable) serve(ctx context.Context, from string, svc transport.Service, payload []byte) ([]byte, error) {
	t.mu.RLock()
	fn := t.handlers[svc]
	t.mu.RUnlock()
	if fn == nil {
		return nil, fmt.Errorf("rpc service %d is not served here", svc)
	}
	return fn(ctx, from, payload)
}

// call runs svc on the node with id peer. A *transport.RemoteError means the
// peer answered with an error; other errors leave delivery unknown.
func (n *Node) call(ctx context.Context, peer string, svc transport.Service, payload []byte) ([]byte, error) {
	p, ok := n.peer(peer)
	if !ok {
		return nil, fmt.Errorf("rpc: unknown node %q", peer)
	}
	return n.mux.Call(ctx, p.BusAddr, svc, payload)
}

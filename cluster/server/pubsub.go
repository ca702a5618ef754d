package server

import (
	"sync"
	"sync/atomic"
)

// Pub/Sub across the cluster.
//
// Every node keeps the subscriptions of its own connections
// (pubsub_registry.go) and writes pushes to them through a per-connection
// output queue (pubsub_output.go). PUBLISH delivers on the node that
// receives it and forwards the message to every other node, which delivers
// it to its own subscribers (cluster.Node.Forward, cluster/forward.go): one bounded queue and one
// sender goroutine per peer keep the messages of one publisher in order and
// never make a publisher wait for a slow or dead peer — a full queue or a
// failed call drops messages (at most once delivery, as Redis Cluster's bus).
// Sharded pub/sub (pubsub_shard.go) lives on the leader of the channel's
// slot group only, and shard subscribers are told with sunsubscribe when
// the leadership (or the slot) leaves the node. The commands are in
// pubsub_commands.go.
//
// Nothing of pub/sub goes through Raft: messages are not replicated state.

// pubsub is a server's pub/sub state.
type pubsub struct {
	s      *Server
	reg    *registry
	limits atomic.Pointer[obufLimits] // client-output-buffer-limit (CONFIG SET)

	obufKills atomic.Int64 // connections closed over their output limit
	writers   atomic.Int64 // output writer goroutines running (tests check none leaks)

	mu       sync.Mutex // guards closed, watching and wg.Add
	closed   bool
	watching bool // the shard leadership watcher runs
	wg       sync.WaitGroup
}

func newPubsub(s *Server) *pubsub {
	p := &pubsub{s: s, reg: newRegistry()}
	lim := defaultObufLimits
	p.limits.Store(&lim)
	return p
}

// goRun runs fn as a pub/sub goroutine that close waits for; false (fn not
// run) once the server is closing.
func (p *pubsub) goRun(fn func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		fn()
	}()
	return true
}

// close waits for the writers, senders and watcher to end. The server has
// cancelled its context and closed its connections before.
func (p *pubsub) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.wg.Wait()
}

// publishLocal delivers message on channel to this node's channel and
// pattern subscribers and returns the number of deliveries, without
// forwarding to other nodes.
func (s *Server) publishLocal(channel, message []byte) int {
	return s.ps.reg.publish(kindChannel, channel, message)
}

// publishForwarded delivers a message another node forwarded.
func (s *Server) publishForwarded(channel, message []byte) { s.publishLocal(channel, message) }

// publishCluster delivers message on channel here and forwards it to every
// other node. It returns the deliveries on this node only, as PUBLISH does
// in Redis Cluster. It never waits for a peer.
func (s *Server) publishCluster(channel, message []byte) int {
	n := s.publishLocal(channel, message)
	s.n.Forward(channel, message)
	return n
}

// forgetClient drops a closed connection's subscriptions and stops its writer.
func (s *Server) forgetClient(c *client) {
	if c.sub == nil {
		return
	}
	s.ps.reg.removeAll(c.sub)
	c.sub.out.close()
}

package server

import (
	"time"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
)

// Sharded pub/sub. A shard channel is keyed like a key: its slot's group
// leader serves SSUBSCRIBE and SPUBLISH, other nodes answer MOVED (or
// CLUSTERDOWN while no leader is known), and the channels of one SSUBSCRIBE
// must share a slot (CROSSSLOT). SPUBLISH delivers to the shard subscribers
// of the leader only, which are all of them: nobody can subscribe anywhere
// else. Redis also lets a shard's replicas serve SSUBSCRIBE and forwards
// SPUBLISH to them; here a group's followers redirect instead, so a
// message never crosses the bus.
//
// When this node stops leading a group (or no longer owns a slot), every
// client subscribed to a shard channel of that slot here gets an
// sunsubscribe push and loses the subscription, as Redis 7 does when a slot
// leaves its node; the client subscribes again and is redirected to the new
// leader. A watcher polls the leaderships of the slots with subscribers.

// shardWatchTick is how often the watcher checks leaderships; a shard
// subscriber learns that its leader moved within about this long.
const shardWatchTick = 100 * time.Millisecond

// shardRoute checks that the channels share a slot whose group this node
// leads; the error reply (CROSSSLOT, MOVED, CLUSTERDOWN) otherwise.
func (s *Server) shardRoute(c *client, channels [][]byte) (uint16, resp.Value, bool) {
	slot := slots.Of(channels[0])
	for _, ch := range channels[1:] {
		if slots.Of(ch) != slot {
			return 0, resp.Err(resp.ErrCrossSlot), false
		}
	}
	g := s.n.GroupOf(slot)
	if g == nil {
		return 0, resp.Err(resp.ErrClusterDown), false
	}
	if !g.IsLeader() {
		return 0, s.redirect(c, g, slot), false
	}
	return slot, resp.Value{}, true
}

// publishShard delivers message to this node's subscribers of the shard
// channel; the caller checked that this node leads its slot.
func (s *Server) publishShard(channel, message []byte) int {
	return s.ps.reg.publish(kindShard, channel, message)
}

// watchShards starts the leadership watcher once.
func (p *pubsub) watchShards() {
	p.mu.Lock()
	start := !p.watching && !p.closed
	p.watching = p.watching || start
	p.mu.Unlock()
	if start {
		p.goRun(p.shardWatchLoop)
	}
}

func (p *pubsub) shardWatchLoop() {
	t := time.NewTicker(shardWatchTick)
	defer t.Stop()
	for {
		select {
		case <-p.s.ctx.Done():
			return
		case <-t.C:
		}
		p.dropLostShards()
	}
}

// dropLostShards unsubscribes the shard channels of every slot whose group
// this node no longer leads.
func (p *pubsub) dropLostShards() {
	var lost []uint16
	for _, slot := range p.reg.shardSlots() {
		if g := p.s.n.GroupOf(slot); g == nil || !g.IsLeader() {
			lost = append(lost, slot)
		}
	}
	if len(lost) == 0 {
		return
	}
	if n := p.reg.dropShardSlots(lost); n > 0 {
		p.s.log.Info("pubsub: shard subscribers told to move: the slots' leadership left this node",
			"slots", len(lost), "subscriptions", n)
	}
}

package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotraft/slotraft/store"
)

// Forwarding published messages to the other nodes (the front end's
// PUBLISH: Node.Forward, Node.HandleForwarded). Each peer has one bounded FIFO
// and one sender goroutine, which takes what is queued (up to a batch) and
// sends it in one svcPublish call, then the next batch once the call is
// answered. So the messages one publisher sends reach a peer in the order
// it sent them, and a slow or dead peer only fills its own queue: when the
// queue is full new messages for that peer are dropped, and a failed call
// drops its batch. Nothing is retried (delivery is at most once, like
// Redis Cluster's bus). INFO counts forwarded and dropped messages
// (ForwardStats).

const (
	fwdQueueMsgs   = 1 << 16  // messages queued for one peer at most
	fwdQueueBytes  = 64 << 20 // bytes queued for one peer at most
	fwdBatchMsgs   = 1024     // messages in one call at most
	fwdBatchBytes  = 1 << 20  // bytes in one call at most (one message may exceed it)
	fwdCallTimeout = 5 * time.Second
	fwdBackoffMin  = 50 * time.Millisecond
	fwdBackoffMax  = time.Second
)

// fwdMsg is one published message, copied once and shared by every peer's queue.
type fwdMsg struct{ channel, message []byte }

func (m fwdMsg) size() int { return len(m.channel) + len(m.message) + 16 }

// forwarder fans published messages out to the other nodes.
type forwarder struct {
	n *Node

	mu    sync.Mutex
	peers map[string]*peerQueue

	forwarded atomic.Int64 // messages a peer accepted
	dropped   atomic.Int64 // messages dropped: queue full, or the call failed
	// deliver receives the messages other nodes forward (HandleForwarded).
	deliver atomic.Pointer[func(channel, message []byte)]
}

func newForwarder(n *Node) *forwarder {
	return &forwarder{n: n, peers: map[string]*peerQueue{}}
}

// Forward queues a message published on this node for every other node,
// whose front end delivers it to its own subscribers. It never waits for a
// peer: a full queue or a failed call drops messages.
func (n *Node) Forward(channel, message []byte) { n.fwd.forward(channel, message) }

// HandleForwarded sets fn to receive the messages other nodes forward, in
// the order each sender published them; the front end sets it before it
// serves. Messages that arrive with no handler are dropped.
func (n *Node) HandleForwarded(fn func(channel, message []byte)) { n.fwd.deliver.Store(&fn) }

// ForwardStats counts the messages peers accepted and those dropped (queue
// full, or the call failed) since the start or ResetForwardStats.
func (n *Node) ForwardStats() (forwarded, dropped int64) {
	return n.fwd.forwarded.Load(), n.fwd.dropped.Load()
}

// ResetForwardStats zeroes ForwardStats (CONFIG RESETSTAT).
func (n *Node) ResetForwardStats() {
	n.fwd.forwarded.Store(0)
	n.fwd.dropped.Store(0)
}

// peerQueue is the FIFO of one peer.
type peerQueue struct {
	id   string
	wake chan struct{} // buffered 1

	mu    sync.Mutex
	msgs  []fwdMsg
	bytes int
}

// forward queues a copy of the message for every other node.
func (f *forwarder) forward(channel, message []byte) {
	queues := f.queues()
	if len(queues) == 0 {
		return
	}
	m := fwdMsg{channel: bytes.Clone(channel), message: bytes.Clone(message)}
	for _, q := range queues {
		if !q.add(m) {
			f.dropped.Add(1)
		}
	}
}

// queues returns the queues of the other nodes, starting their senders on
// first use.
func (f *forwarder) queues() []*peerQueue {
	n := f.n
	self := n.Self().ID
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*peerQueue
	for _, peer := range n.Peers() {
		if peer.ID == self {
			continue
		}
		q := f.peers[peer.ID]
		if q == nil {
			q = &peerQueue{id: peer.ID, wake: make(chan struct{}, 1)}
			if !n.goBackground(func() { f.send(q) }) {
				continue // the node is closing
			}
			f.peers[peer.ID] = q
		}
		out = append(out, q)
	}
	return out
}

// add queues m; false if the queue is full.
func (q *peerQueue) add(m fwdMsg) bool {
	q.mu.Lock()
	if len(q.msgs) >= fwdQueueMsgs || q.bytes+m.size() > fwdQueueBytes {
		q.mu.Unlock()
		return false
	}
	q.msgs = append(q.msgs, m)
	q.bytes += m.size()
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// take removes the next batch from the queue's head.
func (q *peerQueue) take() []fwdMsg {
	q.mu.Lock()
	defer q.mu.Unlock()
	n, size := 0, 0
	for n < len(q.msgs) && n < fwdBatchMsgs && (n == 0 || size+q.msgs[n].size() <= fwdBatchBytes) {
		size += q.msgs[n].size()
		n++
	}
	batch := q.msgs[:n:n]
	q.msgs = q.msgs[n:]
	if len(q.msgs) == 0 {
		q.msgs = nil
	}
	q.bytes -= size
	return batch
}

// send is the sender goroutine of one peer: it ends with the node.
func (f *forwarder) send(q *peerQueue) {
	n := f.n
	ctx := n.ctx
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		}
		for batch := q.take(); len(batch) > 0; batch = q.take() {
			cctx, cancel := context.WithTimeout(ctx, fwdCallTimeout)
			_, err := n.call(cctx, q.id, svcPublish, encodePublish(batch))
			cancel()
			if err == nil {
				f.forwarded.Add(int64(len(batch)))
				if failures > 0 {
					n.log.Info("pubsub: forwarding to peer resumed", "peer", q.id)
				}
				failures = 0
				continue
			}
			f.dropped.Add(int64(len(batch)))
			if ctx.Err() != nil {
				return
			}
			if failures == 0 {
				n.log.Warn("pubsub: forwarding to peer failed; messages dropped", "peer", q.id, "err", err)
			}
			failures++
			// A dead peer fails fast: wait before the next call so the
			// queue, not the CPU, absorbs the outage.
			if !sleepCtx(ctx, min(fwdBackoffMin<<min(failures-1, 8), fwdBackoffMax)) {
				return
			}
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// serveRPC answers a peer's svcPublish call: deliver each message to this
// node's subscribers, in order.
func (f *forwarder) serveRPC(_ context.Context, _ string, payload []byte) ([]byte, error) {
	msgs, err := decodePublish(payload)
	if err != nil {
		return nil, err
	}
	deliver := f.deliver.Load()
	if deliver == nil {
		return nil, nil
	}
	for _, m := range msgs {
		(*deliver)(m.channel, m.message)
	}
	return nil, nil
}

// The svcPublish payload, version 1:
//
//	byte    version (1)
//	uvarint message count
//	then per message: byte kind (0 = PUBLISH), uvarint channel length,
//	channel, uvarint message length, message
//
// A new kind or version is refused by an older node (the call fails and
// the batch is dropped), never misread.
const (
	publishVersion  byte = 1
	publishKindChan byte = 0
)

var errPublishPayload = errors.New("pubsub: malformed publish payload")

func encodePublish(msgs []fwdMsg) []byte {
	size := 1 + binary.MaxVarintLen64
	for _, m := range msgs {
		size += 1 + 2*binary.MaxVarintLen64 + len(m.channel) + len(m.message)
	}
	b := make([]byte, 0, size)
	b = append(b, publishVersion)
	b = binary.AppendUvarint(b, uint64(len(msgs)))
	for _, m := range msgs {
		b = append(b, publishKindChan)
		b = binary.AppendUvarint(b, uint64(len(m.channel)))
		b = append(b, m.channel...)
		b = binary.AppendUvarint(b, uint64(len(m.message)))
		b = append(b, m.message...)
	}
	return b
}

func decodePublish(b []byte) ([]fwdMsg, error) {
	if len(b) == 0 || b[0] != publishVersion {
		return nil, fmt.Errorf("%w: unknown version", errPublishPayload)
	}
	d := store.NewDecoder(b, 1, errPublishPayload)
	count, err := d.Uvarint("count")
	if err != nil {
		return nil, err
	}
	// Each message takes at least 3 bytes: never allocate for a lying count.
	if count > uint64(d.Remaining())/3 {
		return nil, fmt.Errorf("%w: count %d exceeds the payload", errPublishPayload, count)
	}
	msgs := make([]fwdMsg, 0, count)
	for range count {
		m, err := readPublished(d)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
	}
	if err := d.End(); err != nil {
		return nil, err
	}
	return msgs, nil
}

// readPublished reads one message: its kind, channel and message.
func readPublished(d *store.Decoder) (fwdMsg, error) {
	var m fwdMsg
	kind, err := d.Byte("message kind")
	if err == nil && kind != publishKindChan {
		err = fmt.Errorf("%w: unknown message kind", errPublishPayload)
	}
	if err == nil {
		m.channel, err = d.Bytes("channel")
	}
	if err == nil {
		m.message, err = d.Bytes("message")
	}
	return m, err
}

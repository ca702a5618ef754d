package transport

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

const (
	// pipelineDepth is how many AppendEntries a pipeline has in flight at
	// most. Raft sends a new batch whenever entries arrive, so under load
	// a deeper pipeline means more, smaller batches rather than lower
	// latency (the follower merges what queues, see raft_merge.go); 8
	// covers a busy follower's round trip at the rate batches form here,
	// and bounds what a failure throws away.
	pipelineDepth = 8
	// maxBacklog bounds the answered futures waiting for raft to read
	// them. It is a memory bound only: raft reads them as they come, and
	// once its reader has returned its sender stops within a send or two.
	maxBacklog = 1 << 16
)

var errConsumerGone = errors.New("transport: pipeline consumer stopped reading")

// raftPipeline pipelines AppendEntries on a connection of its own.
//
// raft.NetworkTransport's pipeline can park raft's sender for good (its
// decoder blocks handing a response to a consumer that is gone, and the
// sender blocks handing the decoder the next request), and raft only
// closes a pipeline once the sender is back. Here nothing waits on the
// consumer: the decoder queues answered futures and a forwarder hands them
// to the Consumer channel, so an in-flight slot frees as soon as the peer
// answers; the peer's answers come or time out (read deadline), and Close
// stops everything without waiting for anyone.
type raftPipeline struct {
	t        *RaftTransport
	c        *raftConn
	target   raft.ServerAddress
	sendMu   sync.Mutex
	inflight chan *appendFuture
	done     chan raft.AppendFuture
	shutdown chan struct{} // closed when the pipeline fails or closes
	closed   chan struct{} // closed by Close: nobody reads done any more
	failOnce sync.Once
	closeOne sync.Once
	errMu    sync.Mutex
	err      error

	qmu   sync.Mutex
	queue []*appendFuture // answered, not yet on done
	kick  chan struct{}
}

// AppendEntriesPipeline implements raft.Transport. Towards a peer that
// speaks only the msgpack protocol it returns
// raft.ErrPipelineReplicationNotSupported, and raft sends plain RPCs.
func (t *RaftTransport) AppendEntriesPipeline(_ raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	if t.closed() {
		return nil, raft.ErrTransportShutdown
	}
	c, err := t.dial(target)
	if errors.Is(err, errLegacyPeer) {
		return nil, raft.ErrPipelineReplicationNotSupported
	}
	if err != nil {
		return nil, err
	}
	p := &raftPipeline{
		t: t, c: c, target: target,
		// The decoder holds one more while it waits for its answer.
		inflight: make(chan *appendFuture, pipelineDepth-1),
		done:     make(chan raft.AppendFuture),
		shutdown: make(chan struct{}),
		closed:   make(chan struct{}),
		kick:     make(chan struct{}, 1),
	}
	t.mu.Lock()
	t.pipelines[p] = struct{}{}
	t.mu.Unlock()
	if t.closed() { // Close may have missed it
		_ = p.Close()
		return nil, raft.ErrTransportShutdown
	}
	go p.decode()
	go p.forward()
	return p, nil
}

// AppendEntries implements raft.AppendPipeline. It blocks only while
// pipelineDepth requests are unanswered.
func (p *raftPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	fitBatch(args)
	f := &appendFuture{start: time.Now(), args: args, resp: resp, ready: make(chan struct{})}
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	if err := p.failed(); err != nil {
		return nil, err
	}
	select {
	case p.inflight <- f:
	case <-p.shutdown:
		return nil, p.failed()
	}
	if _, err := p.c.writeRequest(args, p.t.timeout); err != nil {
		p.fail(fmt.Errorf("pipeline to %s: %w", p.target, err))
		return nil, p.failed()
	}
	// The decoder may have failed after f went in: then f may never be
	// answered, and raft must hear of the failure now.
	select {
	case <-p.shutdown:
		return nil, p.failed()
	default:
	}
	return f, nil
}

// Consumer implements raft.AppendPipeline.
func (p *raftPipeline) Consumer() <-chan raft.AppendFuture { return p.done }

// Close implements raft.AppendPipeline; it never blocks.
func (p *raftPipeline) Close() error {
	p.closeOne.Do(func() {
		close(p.closed)
		p.t.mu.Lock()
		delete(p.t.pipelines, p)
		p.t.mu.Unlock()
	})
	p.fail(raft.ErrPipelineShutdown)
	return nil
}

// fail records err (the first one wins), stops the pipeline and closes its
// connection, which unblocks the decoder. Futures already answered are
// still handed to the consumer until Close.
func (p *raftPipeline) fail(err error) {
	p.failOnce.Do(func() {
		p.errMu.Lock()
		p.err = err
		p.errMu.Unlock()
		close(p.shutdown)
		_ = p.c.Close()
	})
}

func (p *raftPipeline) failed() error {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return p.err
}

// decode reads the answers in the order the requests went out and hands
// each future to the consumer; a failed future (zero response) makes
// raft's decoder stop, and raft then falls back to plain RPCs.
func (p *raftPipeline) decode() {
	for {
		var f *appendFuture
		select {
		case f = <-p.inflight:
		case <-p.shutdown:
			p.drain()
			return
		}
		_, err := p.c.readResponse(kindAppendEntries, f.resp, p.t.timeout)
		if err != nil {
			p.fail(fmt.Errorf("pipeline to %s: %w", p.target, err))
			err = p.failed()
		}
		f.respond(err)
		p.deliver(f)
		if err != nil {
			p.drain()
			return
		}
	}
}

// deliver queues f for the consumer; it never blocks.
func (p *raftPipeline) deliver(f *appendFuture) {
	p.qmu.Lock()
	p.queue = append(p.queue, f)
	n := len(p.queue)
	p.qmu.Unlock()
	if n > maxBacklog {
		p.fail(errConsumerGone)
	}
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// forward hands queued futures to the consumer, in order, until Close.
func (p *raftPipeline) forward() {
	for {
		p.qmu.Lock()
		var f *appendFuture
		if len(p.queue) > 0 {
			f = p.queue[0]
			p.queue[0] = nil
			p.queue = p.queue[1:]
		}
		p.qmu.Unlock()
		if f == nil {
			select {
			case <-p.kick:
				continue
			case <-p.closed:
				return
			}
		}
		select {
		case p.done <- f:
		case <-p.closed:
			return
		}
	}
}

// drain answers what is still in flight once the pipeline has failed, so
// that no future's Error blocks forever.
func (p *raftPipeline) drain() {
	err := p.failed()
	for {
		select {
		case f := <-p.inflight:
			f.respond(err)
			p.deliver(f)
		default:
			return
		}
	}
}

// appendFuture implements raft.AppendFuture.
type appendFuture struct {
	start time.Time
	args  *raft.AppendEntriesRequest
	resp  *raft.AppendEntriesResponse
	err   error
	ready chan struct{}
}

func (f *appendFuture) respond(err error) {
	f.err = err
	close(f.ready)
}

// Error implements raft.Future.
func (f *appendFuture) Error() error {
	<-f.ready
	return f.err
}

// Start implements raft.AppendFuture.
func (f *appendFuture) Start() time.Time { return f.start }

// Request implements raft.AppendFuture.
func (f *appendFuture) Request() *raft.AppendEntriesRequest { return f.args }

// Response implements raft.AppendFuture.
func (f *appendFuture) Response() *raft.AppendEntriesResponse { return f.resp }

package transport

import (
	"bytes"
	"encoding/binary"

	"github.com/hashicorp/raft"
)

// Follower-side batching of pipelined AppendEntries.
//
// A leader's raft sends an AppendEntries down the pipeline for each batch of
// proposals as it forms, and a follower's raft handles one request at a
// time, each with a log write of its own. So while the follower is busy
// with one, the next ones queue on the connection; handled one by one,
// they would cost a write each and the follower would fall further behind
// the busier the leader gets (pipelining measured slower than one request
// in flight for that reason). They chain: same leader and term, each
// starting where the one before ends. So the acceptor hands raft those
// already read, merged into one request, and answers each with raft's
// answer. Handling them one by one would end in the same state (the first
// one's success implies the others'); and of a pipelined answer the
// leader's raft reads only the term and success, taking what it
// acknowledges from its own request.

// mergeBuffered appends to first the entries of the AppendEntries requests
// already in c's read buffer that chain onto it (never blocking for more),
// and returns how many requests first now stands for.
func (c *raftConn) mergeBuffered(first *raft.AppendEntriesRequest) int {
	count, size := 1, entriesSize(first)
	for {
		p, ok := c.bufferedAppend()
		if !ok {
			return count
		}
		req, err := decodeRequest(kindAppendEntries, p)
		if err != nil {
			return count // the serving loop reads it again and drops the connection
		}
		next := req.(*raft.AppendEntriesRequest)
		if !chains(first, next) || size+entriesSize(next) > appendBudget {
			return count
		}
		_, _ = c.r.Discard(frameHeaderLen + len(p))
		first.Entries = append(first.Entries, next.Entries...)
		first.LeaderCommitIndex = max(first.LeaderCommitIndex, next.LeaderCommitIndex)
		count++
		size += entriesSize(next)
	}
}

// bufferedAppend is the payload of the next frame if it is an
// AppendEntries that is wholly in the read buffer; it stays there.
func (c *raftConn) bufferedAppend() ([]byte, bool) {
	if c.r.Buffered() < frameHeaderLen {
		return nil, false
	}
	h, err := c.r.Peek(frameHeaderLen)
	if err != nil || h[0] != kindAppendEntries {
		return nil, false
	}
	n := int(binary.BigEndian.Uint32(h[1:]))
	if n > maxFrameSize || c.r.Buffered() < frameHeaderLen+n {
		return nil, false
	}
	b, err := c.r.Peek(frameHeaderLen + n)
	if err != nil {
		return nil, false
	}
	return b[frameHeaderLen:], true
}

// chains: next comes from the same leader in the same term and starts
// right after the last entry of a (or where a starts, if a has none).
func chains(a, next *raft.AppendEntriesRequest) bool {
	lastIdx, lastTerm := a.PrevLogEntry, a.PrevLogTerm
	if n := len(a.Entries); n > 0 {
		lastIdx, lastTerm = a.Entries[n-1].Index, a.Entries[n-1].Term
	}
	return next.Term == a.Term && next.ProtocolVersion == a.ProtocolVersion &&
		bytes.Equal(next.ID, a.ID) && bytes.Equal(next.Addr, a.Addr) &&
		next.PrevLogEntry == lastIdx && next.PrevLogTerm == lastTerm && !isHeartbeat(next)
}

func entriesSize(r *raft.AppendEntriesRequest) int {
	n := 0
	for _, l := range r.Entries {
		n += encodedLogSize(l)
	}
	return n
}

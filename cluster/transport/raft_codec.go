//lint:file-ignore SA1019 raft 1.7 still sends and reads the deprecated Leader and Candidate fields, so the wire carries them.

package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// The raft transport's wire format. After the mux header, the dialler sends
// one protocol byte and the acceptor answers with the version it will speak
// (see raft_transport.go). Then each message is a frame: a kind byte, a
// 4-byte big-endian payload length and the payload. Integers in a payload
// are varints, byte slices are a uvarint (length+1, 0 for nil: raft tells a
// heartbeat by a non-nil address, so nil and empty must survive) and the
// bytes. A decoder refuses trailing bytes, lengths beyond what is left of the
// payload and frames beyond maxFrameSize, and never panics.
const (
	kindAppendEntries   byte = 1
	kindRequestVote     byte = 2
	kindInstallSnapshot byte = 3
	kindTimeoutNow      byte = 4
	kindRequestPreVote  byte = 5
	// kindResponse is or-ed into a request's kind to make its response's.
	kindResponse byte = 0x80

	frameHeaderLen = 5
	// maxFrameSize bounds what a peer may make us buffer for one frame. It
	// is above one maximal Redis value (proto-max-bulk-len, 512 MB) in one
	// entry; a batch of several big entries is split by the sender (see
	// appendBudget), so this is never what a healthy leader sends.
	maxFrameSize = 1 << 30
	// minLogSize is the fewest bytes an encoded raft.Log takes: it bounds a
	// claimed entry count by the bytes that follow before allocating.
	minLogSize = 7
)

var errMalformed = errors.New("transport: malformed raft message")

// enc appends the encodings of raft's types to a byte slice.
type enc []byte

func (e enc) uvarint(v uint64) enc { return binary.AppendUvarint(e, v) }
func (e enc) varint(v int64) enc   { return binary.AppendVarint(e, v) }

func (e enc) bool(v bool) enc {
	if v {
		return append(e, 1)
	}
	return append(e, 0)
}

func (e enc) bytes(b []byte) enc {
	if b == nil {
		return e.uvarint(0)
	}
	return append(e.uvarint(uint64(len(b))+1), b...)
}

func (e enc) str(s string) enc { return append(e.uvarint(uint64(len(s))), s...) }

// time keeps the instant only (no monotonic reading, no zone), as msgpack does.
func (e enc) time(t time.Time) enc { return e.varint(t.Unix()).uvarint(uint64(t.Nanosecond())) }

func (e enc) header(h raft.RPCHeader) enc {
	return e.varint(int64(h.ProtocolVersion)).bytes(h.ID).bytes(h.Addr)
}

// dec reads what enc wrote. The first error sticks: later reads return
// zero values, so a decode function checks d.err once at the end.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail() { d.err, d.b = errMalformed, nil }

func (d *dec) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.fail()
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *dec) bool() bool {
	switch d.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail()
	return false
}

// take returns the next n bytes (aliasing the frame) if that many are left.
func (d *dec) take(n uint64) []byte {
	if d.err != nil || n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// bytes copies: the frame buffer is reused, and a log's data lives on in
// raft's log cache and maybe in the state machine.
func (d *dec) bytes() []byte {
	n := d.uvarint()
	if n == 0 || d.err != nil {
		return nil
	}
	v := d.take(n - 1)
	if d.err != nil {
		return nil
	}
	return append(make([]byte, 0, len(v)), v...)
}

func (d *dec) str() string { return string(d.take(d.uvarint())) }

func (d *dec) time() time.Time {
	sec, nsec := d.varint(), d.uvarint()
	if nsec >= uint64(time.Second) {
		d.fail()
		return time.Time{}
	}
	// UTC: the zero time round-trips to the zero time.
	return time.Unix(sec, int64(nsec)).UTC()
}

func (d *dec) header() raft.RPCHeader {
	return raft.RPCHeader{ProtocolVersion: raft.ProtocolVersion(d.varint()), ID: d.bytes(), Addr: d.bytes()}
}

// done reports the sticky error, or trailing bytes as malformed.
func (d *dec) done() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail()
	}
	return d.err
}

func (e enc) log(l *raft.Log) enc {
	e = e.uvarint(l.Index).uvarint(l.Term)
	e = append(e, byte(l.Type))
	return e.bytes(l.Data).bytes(l.Extensions).time(l.AppendedAt)
}

func (d *dec) log() *raft.Log {
	l := &raft.Log{Index: d.uvarint(), Term: d.uvarint(), Type: raft.LogType(d.byte())}
	l.Data, l.Extensions, l.AppendedAt = d.bytes(), d.bytes(), d.time()
	return l
}

// encodedLogSize is len(enc(nil).log(l)) give or take a few bytes; used to
// split big batches.
func encodedLogSize(l *raft.Log) int { return len(l.Data) + len(l.Extensions) + 48 }

func (e enc) appendEntries(r *raft.AppendEntriesRequest) enc {
	e = e.header(r.RPCHeader).uvarint(r.Term).bytes(r.Leader)
	e = e.uvarint(r.PrevLogEntry).uvarint(r.PrevLogTerm).uvarint(r.LeaderCommitIndex)
	if r.Entries == nil {
		return e.uvarint(0)
	}
	e = e.uvarint(uint64(len(r.Entries)) + 1)
	for _, l := range r.Entries {
		e = e.log(l)
	}
	return e
}

func (d *dec) appendEntries() *raft.AppendEntriesRequest {
	r := &raft.AppendEntriesRequest{RPCHeader: d.header(), Term: d.uvarint(), Leader: d.bytes()}
	r.PrevLogEntry, r.PrevLogTerm, r.LeaderCommitIndex = d.uvarint(), d.uvarint(), d.uvarint()
	n := d.uvarint()
	if n == 0 || d.err != nil {
		return r
	}
	n--
	if n > uint64(len(d.b))/minLogSize {
		d.fail()
		return r
	}
	r.Entries = make([]*raft.Log, n)
	for i := range r.Entries {
		r.Entries[i] = d.log()
	}
	return r
}

func (e enc) appendEntriesResp(r *raft.AppendEntriesResponse) enc {
	return e.header(r.RPCHeader).uvarint(r.Term).uvarint(r.LastLog).bool(r.Success).bool(r.NoRetryBackoff)
}

func (d *dec) appendEntriesResp(r *raft.AppendEntriesResponse) {
	*r = raft.AppendEntriesResponse{RPCHeader: d.header(), Term: d.uvarint(), LastLog: d.uvarint()}
	r.Success, r.NoRetryBackoff = d.bool(), d.bool()
}

func (e enc) requestVote(r *raft.RequestVoteRequest) enc {
	e = e.header(r.RPCHeader).uvarint(r.Term).bytes(r.Candidate)
	return e.uvarint(r.LastLogIndex).uvarint(r.LastLogTerm).bool(r.LeadershipTransfer)
}

func (d *dec) requestVote() *raft.RequestVoteRequest {
	r := &raft.RequestVoteRequest{RPCHeader: d.header(), Term: d.uvarint(), Candidate: d.bytes()}
	r.LastLogIndex, r.LastLogTerm, r.LeadershipTransfer = d.uvarint(), d.uvarint(), d.bool()
	return r
}

func (e enc) requestVoteResp(r *raft.RequestVoteResponse) enc {
	return e.header(r.RPCHeader).uvarint(r.Term).bytes(r.Peers).bool(r.Granted)
}

func (d *dec) requestVoteResp(r *raft.RequestVoteResponse) {
	*r = raft.RequestVoteResponse{RPCHeader: d.header(), Term: d.uvarint(), Peers: d.bytes(), Granted: d.bool()}
}

func (e enc) requestPreVote(r *raft.RequestPreVoteRequest) enc {
	return e.header(r.RPCHeader).uvarint(r.Term).uvarint(r.LastLogIndex).uvarint(r.LastLogTerm)
}

func (d *dec) requestPreVote() *raft.RequestPreVoteRequest {
	return &raft.RequestPreVoteRequest{RPCHeader: d.header(), Term: d.uvarint(), LastLogIndex: d.uvarint(), LastLogTerm: d.uvarint()}
}

func (e enc) requestPreVoteResp(r *raft.RequestPreVoteResponse) enc {
	return e.header(r.RPCHeader).uvarint(r.Term).bool(r.Granted)
}

func (d *dec) requestPreVoteResp(r *raft.RequestPreVoteResponse) {
	*r = raft.RequestPreVoteResponse{RPCHeader: d.header(), Term: d.uvarint(), Granted: d.bool()}
}

func (e enc) installSnapshot(r *raft.InstallSnapshotRequest) enc {
	e = e.header(r.RPCHeader).varint(int64(r.SnapshotVersion)).uvarint(r.Term).bytes(r.Leader)
	e = e.uvarint(r.LastLogIndex).uvarint(r.LastLogTerm).bytes(r.Peers).bytes(r.Configuration)
	return e.uvarint(r.ConfigurationIndex).varint(r.Size)
}

func (d *dec) installSnapshot() *raft.InstallSnapshotRequest {
	r := &raft.InstallSnapshotRequest{RPCHeader: d.header(), SnapshotVersion: raft.SnapshotVersion(d.varint())}
	r.Term, r.Leader, r.LastLogIndex, r.LastLogTerm = d.uvarint(), d.bytes(), d.uvarint(), d.uvarint()
	r.Peers, r.Configuration, r.ConfigurationIndex, r.Size = d.bytes(), d.bytes(), d.uvarint(), d.varint()
	if r.Size < 0 {
		d.fail()
	}
	return r
}

func (e enc) installSnapshotResp(r *raft.InstallSnapshotResponse) enc {
	return e.header(r.RPCHeader).uvarint(r.Term).bool(r.Success)
}

func (d *dec) installSnapshotResp(r *raft.InstallSnapshotResponse) {
	*r = raft.InstallSnapshotResponse{RPCHeader: d.header(), Term: d.uvarint(), Success: d.bool()}
}

// encodeRequest appends req's payload to b and returns its kind.
func encodeRequest(b []byte, req any) ([]byte, byte, error) {
	e := enc(b)
	switch r := req.(type) {
	case *raft.AppendEntriesRequest:
		return e.appendEntries(r), kindAppendEntries, nil
	case *raft.RequestVoteRequest:
		return e.requestVote(r), kindRequestVote, nil
	case *raft.RequestPreVoteRequest:
		return e.requestPreVote(r), kindRequestPreVote, nil
	case *raft.InstallSnapshotRequest:
		return e.installSnapshot(r), kindInstallSnapshot, nil
	case *raft.TimeoutNowRequest:
		return e.header(r.RPCHeader), kindTimeoutNow, nil
	}
	return b, 0, fmt.Errorf("transport: cannot encode raft request %T", req)
}

// decodeRequest decodes a request payload of kind into a new raft request.
func decodeRequest(kind byte, p []byte) (any, error) {
	d := &dec{b: p}
	var req any
	switch kind {
	case kindAppendEntries:
		req = d.appendEntries()
	case kindRequestVote:
		req = d.requestVote()
	case kindRequestPreVote:
		req = d.requestPreVote()
	case kindInstallSnapshot:
		req = d.installSnapshot()
	case kindTimeoutNow:
		req = &raft.TimeoutNowRequest{RPCHeader: d.header()}
	default:
		return nil, fmt.Errorf("transport: unknown raft request kind %d", kind)
	}
	if err := d.done(); err != nil {
		return nil, fmt.Errorf("raft request kind %d: %w", kind, err)
	}
	return req, nil
}

// encodeResponse appends a response payload: the error text of a failed RPC
// (empty if none), then whether a body follows, then the body. A response
// whose type does not match kind, and no response and no error, are sent
// as errors, never as garbage.
func encodeResponse(b []byte, kind byte, resp any, rpcErr error) []byte {
	body := encodeResponseBody(resp)
	switch {
	case resp == nil && rpcErr == nil:
		rpcErr = errors.New("transport: raft answered nothing")
	case resp != nil && (body == nil || responseKind(resp) != kind):
		body, rpcErr = nil, fmt.Errorf("transport: response %T to a request of kind %d", resp, kind)
	}
	msg := ""
	if rpcErr != nil {
		msg = rpcErr.Error()
	}
	e := enc(b).str(msg)
	if body == nil {
		return e.bool(false)
	}
	return append(e.bool(true), body...)
}

// encodeResponseBody is nil for a nil or unknown response.
func encodeResponseBody(resp any) enc {
	var body enc
	switch r := resp.(type) {
	case *raft.AppendEntriesResponse:
		if r != nil {
			body = body.appendEntriesResp(r)
		}
	case *raft.RequestVoteResponse:
		if r != nil {
			body = body.requestVoteResp(r)
		}
	case *raft.RequestPreVoteResponse:
		if r != nil {
			body = body.requestPreVoteResp(r)
		}
	case *raft.InstallSnapshotResponse:
		if r != nil {
			body = body.installSnapshotResp(r)
		}
	case *raft.TimeoutNowResponse:
		if r != nil {
			body = body.header(r.RPCHeader)
		}
	}
	return body
}

func responseKind(resp any) byte {
	switch resp.(type) {
	case *raft.AppendEntriesResponse:
		return kindAppendEntries
	case *raft.RequestVoteResponse:
		return kindRequestVote
	case *raft.RequestPreVoteResponse:
		return kindRequestPreVote
	case *raft.InstallSnapshotResponse:
		return kindInstallSnapshot
	case *raft.TimeoutNowResponse:
		return kindTimeoutNow
	}
	return 0
}

// decodeResponse decodes a response payload into resp (a pointer to the
// raft response type of the request's kind) and returns the remote error
// text. resp changes only if a whole, well-formed body came: raft acts on a
// response's term, so half a response must not reach it.
func decodeResponse(p []byte, resp any) (string, error) {
	d := &dec{b: p}
	msg := d.str()
	var set func()
	if d.bool() {
		switch r := resp.(type) {
		case *raft.AppendEntriesResponse:
			var v raft.AppendEntriesResponse
			d.appendEntriesResp(&v)
			set = func() { *r = v }
		case *raft.RequestVoteResponse:
			var v raft.RequestVoteResponse
			d.requestVoteResp(&v)
			set = func() { *r = v }
		case *raft.RequestPreVoteResponse:
			var v raft.RequestPreVoteResponse
			d.requestPreVoteResp(&v)
			set = func() { *r = v }
		case *raft.InstallSnapshotResponse:
			var v raft.InstallSnapshotResponse
			d.installSnapshotResp(&v)
			set = func() { *r = v }
		case *raft.TimeoutNowResponse:
			v := raft.TimeoutNowResponse{RPCHeader: d.header()}
			set = func() { *r = v }
		default:
			return "", fmt.Errorf("transport: cannot decode into %T", resp)
		}
	}
	if err := d.done(); err != nil {
		return "", fmt.Errorf("raft response: %w", err)
	}
	if set != nil {
		set()
	}
	return msg, nil
}

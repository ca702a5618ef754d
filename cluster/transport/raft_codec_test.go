//lint:file-ignore SA1019 the codec must carry the deprecated Leader and Candidate fields raft still uses.

package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func hdr(id, addr string) raft.RPCHeader {
	return raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(id), Addr: []byte(addr)}
}

func sampleRequests() map[string]any {
	now := time.Now()
	return map[string]any{
		"append full": &raft.AppendEntriesRequest{
			RPCHeader: hdr("n1", "127.0.0.1:1"), Term: 7, Leader: []byte("127.0.0.1:1"),
			PrevLogEntry: 41, PrevLogTerm: 6, LeaderCommitIndex: 40,
			Entries: []*raft.Log{
				{Index: 42, Term: 7, Type: raft.LogCommand, Data: []byte("set k v"), Extensions: []byte{1}, AppendedAt: now},
				{Index: 43, Term: 7, Type: raft.LogNoop},
				{Index: 44, Term: 7, Type: raft.LogConfiguration, Data: []byte{}, Extensions: []byte{}, AppendedAt: time.Unix(-5, 999_999_999)},
			},
		},
		"append heartbeat":     &raft.AppendEntriesRequest{RPCHeader: hdr("n1", "a"), Term: 3, Leader: []byte("a")},
		"append empty entries": &raft.AppendEntriesRequest{Term: 1, Entries: []*raft.Log{}},
		"append empty addr":    &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte{}, Addr: []byte{}}},
		"append max ints": &raft.AppendEntriesRequest{
			RPCHeader: raft.RPCHeader{ProtocolVersion: -1}, Term: ^uint64(0), PrevLogEntry: ^uint64(0),
			Entries: []*raft.Log{{Index: ^uint64(0), Type: 255, AppendedAt: time.Unix(1<<40, 1)}},
		},
		"vote": &raft.RequestVoteRequest{
			RPCHeader: hdr("n2", "b"), Term: 9, Candidate: []byte("b"), LastLogIndex: 100, LastLogTerm: 8, LeadershipTransfer: true,
		},
		"vote zero":  &raft.RequestVoteRequest{},
		"prevote":    &raft.RequestPreVoteRequest{RPCHeader: hdr("n3", "c"), Term: 10, LastLogIndex: 5, LastLogTerm: 4},
		"timeout":    &raft.TimeoutNowRequest{RPCHeader: hdr("n1", "a")},
		"timeout ∅":  &raft.TimeoutNowRequest{},
		"install":    &raft.InstallSnapshotRequest{RPCHeader: hdr("n1", "a"), SnapshotVersion: 1, Term: 4, Leader: []byte("a"), LastLogIndex: 9, LastLogTerm: 3, Peers: []byte("p"), Configuration: []byte("cfg"), ConfigurationIndex: 2, Size: 1 << 33},
		"install ∅":  &raft.InstallSnapshotRequest{},
		"install -v": &raft.InstallSnapshotRequest{SnapshotVersion: -3},
	}
}

func sampleResponses() map[string]any {
	return map[string]any{
		"append":       &raft.AppendEntriesResponse{RPCHeader: hdr("n2", "b"), Term: 7, LastLog: 44, Success: true, NoRetryBackoff: true},
		"append ∅":     &raft.AppendEntriesResponse{},
		"vote":         &raft.RequestVoteResponse{RPCHeader: hdr("n2", "b"), Term: 9, Peers: []byte("x"), Granted: true},
		"prevote":      &raft.RequestPreVoteResponse{RPCHeader: hdr("n2", "b"), Term: 9, Granted: true},
		"install":      &raft.InstallSnapshotResponse{RPCHeader: hdr("n2", "b"), Term: 4, Success: true},
		"timeout":      &raft.TimeoutNowResponse{RPCHeader: hdr("n2", "b")},
		"timeout zero": &raft.TimeoutNowResponse{},
	}
}

// normalize makes what encoding keeps of req comparable: times lose their
// monotonic reading and zone, as on the wire.
func normalize(req any) any {
	if r, ok := req.(*raft.AppendEntriesRequest); ok {
		c := *r
		if r.Entries != nil {
			c.Entries = make([]*raft.Log, len(r.Entries))
			for i, l := range r.Entries {
				nl := *l
				nl.AppendedAt = time.Unix(l.AppendedAt.Unix(), int64(l.AppendedAt.Nanosecond())).UTC()
				c.Entries[i] = &nl
			}
		}
		return &c
	}
	return req
}

func TestRequestRoundTrip(t *testing.T) {
	for name, req := range sampleRequests() {
		t.Run(name, func(t *testing.T) { checkRequestRoundTrip(t, req) })
	}
}

func checkRequestRoundTrip(t *testing.T, req any) {
	t.Helper()
	b, kind, err := encodeRequest(nil, req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeRequest(kind, b)
	if err != nil {
		t.Fatalf("decode %x: %v", b, err)
	}
	if want := normalize(req); !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %#v\nwant %#v", got, want)
	}
}

func TestResponseRoundTrip(t *testing.T) {
	for name, resp := range sampleResponses() {
		t.Run(name, func(t *testing.T) {
			kind := responseKind(resp)
			for _, rpcErr := range []error{nil, errors.New("unexpected command")} {
				b := encodeResponse(nil, kind, resp, rpcErr)
				got := reflect.New(reflect.TypeOf(resp).Elem()).Interface()
				msg, err := decodeResponse(b, got)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, resp) || (rpcErr == nil) != (msg == "") {
					t.Fatalf("got %#v %q, want %#v %v", got, msg, resp, rpcErr)
				}
			}
		})
	}
}

func TestResponseMismatchIsAnError(t *testing.T) {
	tests := []struct {
		name string
		resp any
	}{
		{"nil", nil},
		{"typed nil", (*raft.AppendEntriesResponse)(nil)},
		{"wrong type", &raft.RequestVoteResponse{Term: 1}},
		{"foreign", "hello"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := encodeResponse(nil, kindAppendEntries, tc.resp, nil)
			var got raft.AppendEntriesResponse
			msg, err := decodeResponse(b, &got)
			if err != nil || msg == "" || got.Term != 0 {
				t.Fatalf("decode = %q, %v, %+v; want a remote error and no body", msg, err, got)
			}
		})
	}
}

func TestDecodeRefusesMalformed(t *testing.T) {
	good, _, _ := encodeRequest(nil, sampleRequests()["append full"])
	uv := func(v uint64) []byte { return binary.AppendUvarint(nil, v) }
	// An AppendEntries with an empty header and zero fields up to the entry count.
	prefix := []byte{0, 0, 0, 0, 0, 0, 0, 0}
	tests := []struct {
		name string
		kind byte
		in   []byte
	}{
		{"empty", kindAppendEntries, nil},
		{"truncated", kindAppendEntries, good[:len(good)-1]},
		{"trailing byte", kindAppendEntries, append(append([]byte{}, good...), 0)},
		{"unknown kind", 9, good},
		{"huge entry count", kindAppendEntries, append(append([]byte{}, prefix...), uv(1<<62)...)},
		{"count beyond bytes", kindAppendEntries, append(append(append([]byte{}, prefix...), uv(3)...), make([]byte, 13)...)},
		{"slice beyond bytes", kindRequestVote, append([]byte{0, 0, 0, 0}, uv(1<<40)...)},
		{"bad bool", kindRequestVote, []byte{0, 0, 0, 0, 0, 0, 0, 2}},
		{"varint overflow", kindTimeoutNow, bytes.Repeat([]byte{0xff}, 11)},
		{"negative snapshot size", kindInstallSnapshot, enc(nil).installSnapshot(&raft.InstallSnapshotRequest{Size: -1})},
		{"nanoseconds ≥ 1s", kindAppendEntries, append(append(append([]byte{}, prefix...), 2, 1, 1, 0, 0, 0, 0), uv(uint64(time.Second))...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if req, err := decodeRequest(tc.kind, tc.in); err == nil {
				t.Fatalf("decoded %#v", req)
			}
		})
	}
}

// fakeConn serves reads from r and ignores deadlines.
type fakeConn struct {
	net.Conn
	r io.Reader
}

func (c fakeConn) Read(b []byte) (int, error)         { return c.r.Read(b) }
func (c fakeConn) SetReadDeadline(time.Time) error    { return nil }
func (c fakeConn) SetWriteDeadline(t time.Time) error { return nil }

func TestRaftFrameLimits(t *testing.T) {
	frame := func(n uint32, payload []byte) []byte {
		return append(binary.BigEndian.AppendUint32([]byte{kindAppendEntries | kindResponse}, n), payload...)
	}
	tests := []struct {
		name    string
		in      []byte
		want    error
		maxHeap int
	}{
		{"ok", frame(3, []byte("abc")), nil, 0},
		{"too large", frame(maxFrameSize+1, nil), errFrameTooLarge, 0},
		{"lying length", frame(maxFrameSize, make([]byte, 10)), io.ErrUnexpectedEOF, 2 * keepBufSize},
		{"header cut", frame(3, nil)[:3], io.ErrUnexpectedEOF, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newRaftConn(fakeConn{r: bytes.NewReader(tc.in)})
			_, p, err := c.readFrame(time.Second, time.Second)
			if !errors.Is(err, tc.want) {
				t.Fatalf("readFrame = %q, %v; want %v", p, err, tc.want)
			}
			if tc.maxHeap > 0 && cap(p) > tc.maxHeap {
				t.Fatalf("a lying length made us allocate %d bytes", cap(p))
			}
		})
	}
}

// checkDecodeArbitrary: decoding arbitrary bytes never panics, and what
// decodes re-encodes to something that decodes to the same value.
func checkDecodeArbitrary(t *testing.T, kind byte, raw []byte) {
	req, err := decodeRequest(kind, raw)
	if err != nil {
		return
	}
	b, k, err := encodeRequest(nil, req)
	if err != nil || k != kind {
		t.Fatalf("re-encode: kind %d, %v", k, err)
	}
	again, err := decodeRequest(k, b)
	if err != nil || !reflect.DeepEqual(again, req) {
		t.Fatalf("re-decode: %#v, %v; want %#v", again, err, req)
	}
}

func seedRequests(f *testing.F, kind byte) {
	for _, req := range sampleRequests() {
		if b, k, _ := encodeRequest(nil, req); k == kind {
			f.Add(b, uint64(1), uint64(2), []byte("x"), []byte(nil), true)
		}
	}
}

func bytesOrNil(b []byte, null bool) []byte {
	if null {
		return nil
	}
	return b
}

func FuzzAppendEntriesCodec(f *testing.F) {
	seedRequests(f, kindAppendEntries)
	f.Fuzz(func(t *testing.T, raw []byte, a, b uint64, x, y []byte, flag bool) {
		checkDecodeArbitrary(t, kindAppendEntries, raw)
		req := &raft.AppendEntriesRequest{
			RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersion(a), ID: x, Addr: bytesOrNil(y, flag)},
			Term:      a, Leader: y, PrevLogEntry: b, PrevLogTerm: a ^ b, LeaderCommitIndex: b / 2,
		}
		if !flag {
			req.Entries = []*raft.Log{
				{Index: a, Term: b, Type: raft.LogType(a), Data: x, Extensions: bytesOrNil(y, a%2 == 0), AppendedAt: time.Unix(int64(b), int64(a%1e9))},
				{Index: b, Data: y},
			}
		}
		checkRequestRoundTrip(t, req)
	})
}

func FuzzRequestVoteCodec(f *testing.F) {
	seedRequests(f, kindRequestVote)
	f.Fuzz(func(t *testing.T, raw []byte, a, b uint64, x, y []byte, flag bool) {
		checkDecodeArbitrary(t, kindRequestVote, raw)
		checkRequestRoundTrip(t, &raft.RequestVoteRequest{
			RPCHeader: raft.RPCHeader{ID: bytesOrNil(x, flag), Addr: y}, Term: a, Candidate: x,
			LastLogIndex: b, LastLogTerm: a + b, LeadershipTransfer: flag,
		})
	})
}

func FuzzRequestPreVoteCodec(f *testing.F) {
	seedRequests(f, kindRequestPreVote)
	f.Fuzz(func(t *testing.T, raw []byte, a, b uint64, x, y []byte, flag bool) {
		checkDecodeArbitrary(t, kindRequestPreVote, raw)
		checkRequestRoundTrip(t, &raft.RequestPreVoteRequest{
			RPCHeader: raft.RPCHeader{ID: x, Addr: bytesOrNil(y, flag)}, Term: a, LastLogIndex: b, LastLogTerm: a - b,
		})
	})
}

func FuzzInstallSnapshotCodec(f *testing.F) {
	seedRequests(f, kindInstallSnapshot)
	f.Fuzz(func(t *testing.T, raw []byte, a, b uint64, x, y []byte, flag bool) {
		checkDecodeArbitrary(t, kindInstallSnapshot, raw)
		checkRequestRoundTrip(t, &raft.InstallSnapshotRequest{
			RPCHeader: raft.RPCHeader{ID: x}, SnapshotVersion: raft.SnapshotVersion(int64(a)), Term: b,
			Leader: y, LastLogIndex: a, LastLogTerm: b, Peers: bytesOrNil(x, flag), Configuration: y,
			ConfigurationIndex: a, Size: int64(b >> 1),
		})
	})
}

func FuzzTimeoutNowCodec(f *testing.F) {
	seedRequests(f, kindTimeoutNow)
	f.Fuzz(func(t *testing.T, raw []byte, a, _ uint64, x, y []byte, flag bool) {
		checkDecodeArbitrary(t, kindTimeoutNow, raw)
		checkRequestRoundTrip(t, &raft.TimeoutNowRequest{
			RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersion(a), ID: x, Addr: bytesOrNil(y, flag)},
		})
	})
}

// FuzzResponseCodec decodes arbitrary bytes as every response type; what
// decodes re-encodes to the same value.
func FuzzResponseCodec(f *testing.F) {
	for _, resp := range sampleResponses() {
		f.Add(encodeResponse(nil, responseKind(resp), resp, nil))
		f.Add(encodeResponse(nil, responseKind(resp), resp, errors.New("boom")))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, proto := range sampleResponses() {
			resp := reflect.New(reflect.TypeOf(proto).Elem()).Interface()
			msg, err := decodeResponse(raw, resp)
			if err != nil {
				continue
			}
			var rpcErr error
			if msg != "" {
				rpcErr = errors.New(msg)
			}
			b := encodeResponse(nil, responseKind(resp), resp, rpcErr)
			again := reflect.New(reflect.TypeOf(proto).Elem()).Interface()
			if msg2, err := decodeResponse(b, again); err != nil || msg2 != msg || !reflect.DeepEqual(again, resp) {
				t.Fatalf("re-decode: %#v %q %v; want %#v %q", again, msg2, err, resp, msg)
			}
		}
	})
}

// FuzzReadRaftFrame: arbitrary bytes as a connection's stream never panic
// and never make readFrame return more than the frame's length.
func FuzzReadRaftFrame(f *testing.F) {
	f.Add(append(binary.BigEndian.AppendUint32([]byte{1}, 2), 'h', 'i'))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, raw []byte) {
		c := newRaftConn(fakeConn{r: bytes.NewReader(raw)})
		for {
			_, p, err := c.readFrame(time.Second, time.Second)
			if err != nil {
				return
			}
			if len(p) > len(raw) {
				t.Fatalf("frame of %d bytes from %d", len(p), len(raw))
			}
		}
	})
}

package fsm

import (
	"math"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// Stream IDs as clients write them (Redis's streamGenericParseIDOrReply),
// and the reply shapes shared by the stream commands.

var (
	errInvalidStreamID = resp.NewError("ERR Invalid stream ID specified as stream command argument")
	errStartInterval   = resp.NewError("ERR invalid start ID for the interval")
	errEndInterval     = resp.NewError("ERR invalid end ID for the interval")
)

// parseULL is Redis's string2ull: string2ll's syntax for a non-negative
// number, else strtoull's (leading spaces, a sign, leading zeros; a '-'
// negates modulo 2^64), with the whole string consumed.
func parseULL(b []byte) (uint64, bool) {
	if v, err := resp.ParseInt(b); err == nil {
		return uint64(v), v >= 0
	}
	i := 0
	for i < len(b) && (b[i] == ' ' || (b[i] >= '\t' && b[i] <= '\r')) {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	if i == len(b) {
		return 0, false
	}
	var u uint64
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if u > (math.MaxUint64-d)/10 {
			return 0, false // ERANGE
		}
		u = u*10 + d
	}
	if neg {
		u = -u
	}
	return u, true
}

// parseStreamID parses "ms-seq", "ms" (seq = missingSeq), "-" and "+"
// (unless strict), and "ms-*" when seqStar (seqGiven false then).
func parseStreamID(b []byte, missingSeq uint64, strict, seqStar bool) (id store.StreamID, seqGiven bool, err error) {
	if len(b) > 127 {
		return id, false, errInvalidStreamID
	}
	if len(b) == 1 && (b[0] == '-' || b[0] == '+') {
		if strict {
			return id, false, errInvalidStreamID
		}
		if b[0] == '+' {
			return store.MaxStreamID, true, nil
		}
		return id, true, nil
	}
	// strchr(buf, '-'): the first dash splits (a NUL ends the C string).
	end := len(b)
	for i, c := range b {
		if c == 0 {
			end = i
			break
		}
	}
	b = b[:end]
	ms, seqPart, dash := b, []byte(nil), false
	for i, c := range b {
		if c == '-' {
			ms, seqPart, dash = b[:i], b[i+1:], true
			break
		}
	}
	var ok bool
	if id.Ms, ok = parseULL(ms); !ok {
		return id, false, errInvalidStreamID
	}
	seqGiven = true
	switch {
	case !dash:
		id.Seq = missingSeq
	case seqStar && len(seqPart) == 1 && seqPart[0] == '*':
		seqGiven = false
	default:
		if id.Seq, ok = parseULL(seqPart); !ok {
			return id, false, errInvalidStreamID
		}
	}
	return id, seqGiven, nil
}

// parseStrictID is streamParseStrictIDOrReply without the "ms-*" form.
func parseStrictID(b []byte) (store.StreamID, error) {
	id, _, err := parseStreamID(b, 0, true, false)
	return id, err
}

// parseStrictIDs parses every argument as a strict ID (XDEL's and XACK's
// lists): the first that does not parse is the error.
func parseStrictIDs(args [][]byte) ([]store.StreamID, error) {
	ids := make([]store.StreamID, len(args))
	for i, a := range args {
		id, err := parseStrictID(a)
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	return ids, nil
}

// parseInterval parses a range bound: "(" makes it exclusive, which moves
// it one ID inwards (start up, end down).
func parseInterval(b []byte, missingSeq uint64, isStart bool) (store.StreamID, error) {
	if len(b) > 1 && b[0] == '(' {
		id, _, err := parseStreamID(b[1:], missingSeq, true, false)
		if err != nil {
			return id, err
		}
		var ok bool
		if isStart {
			if id, ok = id.Incr(); !ok {
				return id, errStartInterval
			}
		} else if id, ok = id.Decr(); !ok {
			return id, errEndInterval
		}
		return id, nil
	}
	id, _, err := parseStreamID(b, missingSeq, false, false)
	return id, err
}

func idReply(id store.StreamID) resp.Value { return resp.Bulk(id.Append(nil)) }

// entryReply is [id, [field, value, …]].
func entryReply(e store.StreamEntry) resp.Value {
	return resp.Array(idReply(e.ID), resp.BulkArray(e.Fields))
}

// rangeReply lists the entries from start to end (reversed if rev), at
// most count of them (0 = all).
func rangeReply(s *store.Stream, start, end store.StreamID, count int64, rev bool) resp.Value {
	out := []resp.Value{}
	s.Range(start, end, rev, func(e store.StreamEntry) bool {
		out = append(out, entryReply(e))
		return count == 0 || int64(len(out)) < count
	})
	return resp.Array(out...)
}

// keyedReply is XREAD's reply: each key with its entries — a map in
// RESP3, an array of [key, entries] arrays in RESP2, as Redis 7.2.
func keyedReply(flat []resp.Value) resp.Value { return resp.PairMap(flat...) }

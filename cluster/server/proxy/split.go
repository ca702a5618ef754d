package proxy

import (
	"bytes"
	"strconv"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
)

// Multi-key commands whose keys hash to several slots (MGET, MSET, DEL,
// UNLINK, EXISTS, TOUCH) are split as Redis Cluster proxies split them:
// one command per slot, sent together, each to its slot's leader, and the
// replies merged. Each part is atomic on its own; the whole is not (a
// reader may see some slots' writes before others'), and a part's error
// is the reply while the other parts may have run: docs/proxy.md.

// part is the command for one slot: the command name and, for each of the
// slot's keys in order, the key and the arguments that go with it (MSET's
// value); at says which of the command's keys they are.
type part struct {
	slot uint16
	args [][]byte
	at   []int
}

// splitBySlot splits args by its keys' slots, keys in order within each
// part, parts in the order of their first key. One part when every key
// is in one slot.
func splitBySlot(meta *resp.Command, args [][]byte) []part {
	idx := meta.KeyIndexes(args)
	step := max(meta.Step, 1)
	var parts []part
	bySlot := map[uint16]int{}
	for n, i := range idx {
		slot := slots.Of(args[i])
		p, ok := bySlot[slot]
		if !ok {
			p = len(parts)
			bySlot[slot] = p
			parts = append(parts, part{slot: slot, args: [][]byte{args[0]}})
		}
		parts[p].args = append(parts[p].args, args[i:min(i+step, len(args))]...)
		parts[p].at = append(parts[p].at, n)
	}
	return parts
}

// split serves a kindSplit command: as is when its keys share a slot,
// else one call per slot and a merged reply.
func (s *session) split(r rule, meta *resp.Command, args [][]byte) {
	parts := splitBySlot(meta, args)
	if len(parts) <= 1 || (len(args)-1)%max(meta.Step, 1) != 0 { // MSET's odd count: the node's arity error
		s.forward(meta, meta.Name, args, false)
		return
	}
	calls := make([]*call, len(parts))
	for i, p := range parts {
		calls[i] = newCall(meta, p.args, int(p.slot))
		s.dispatch(calls[i], "", true)
	}
	nkeys := len(meta.KeyIndexes(args))
	s.enqueue(&entry{calls: calls, merge: func(frames [][]byte) []byte {
		return mergeParts(r.merge, s.proto(), frames, parts, nkeys)
	}})
}

// mergeParts makes one reply of the parts' replies: the first error in
// key order, else the merge of r's kind.
func mergeParts(m merge, proto int, frames [][]byte, parts []part, nkeys int) []byte {
	if f := firstError(frames); f != nil {
		return f
	}
	switch m {
	case mergeConcat:
		return mergeByKey(frames, parts, nkeys)
	case mergeSum:
		return sumInts(frames, proto)
	default: // mergeAllOK
		return allOK(frames, proto)
	}
}

// firstError is the first error frame, nil if none.
func firstError(frames [][]byte) []byte {
	for _, f := range frames {
		if _, isErr := resp.FrameError(f); isErr {
			return f
		}
	}
	return nil
}

// mergeByKey puts each part's array elements back at their keys'
// positions (MGET).
func mergeByKey(frames [][]byte, parts []part, nkeys int) []byte {
	elems := make([][]byte, nkeys)
	size := 16
	for i, f := range frames {
		es, _, ok := resp.FrameElems(f)
		if !ok || len(es) != len(parts[i].at) {
			return unexpected(f)
		}
		for j, at := range parts[i].at {
			elems[at] = es[j]
			size += len(es[j])
		}
	}
	out := make([]byte, 0, size)
	out = append(out, '*')
	out = appendInt(out, nkeys)
	for _, e := range elems {
		out = append(out, e...)
	}
	return out
}

// sumInts adds integer replies.
func sumInts(frames [][]byte, proto int) []byte {
	var total int64
	for _, f := range frames {
		n, ok := resp.FrameInt(f)
		if !ok {
			return unexpected(f)
		}
		total += n
	}
	return resp.Int(total).Append(nil, proto)
}

// allOK is +OK when every reply is, else the first that is not.
func allOK(frames [][]byte, proto int) []byte {
	for _, f := range frames {
		if !bytes.Equal(f, okFrame) {
			return f
		}
	}
	return resp.OK().Append(nil, proto)
}

var okFrame = []byte("+OK\r\n")

// unexpected is the reply when a node answered a part with something its
// command never answers: an error that says so, not a guess.
func unexpected(f []byte) []byte {
	return errFrame(resp.Errorf("ERR proxy: unexpected reply %s to a part of a split command", strconv.Quote(string(f[:min(len(f), 40)]))), resp.RESP2)
}

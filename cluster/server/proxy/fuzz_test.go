package proxy

import (
	"bytes"
	"testing"

	"github.com/slotraft/slotraft/resp"
)

// FuzzReplies feeds whatever frames a node could send to everything in
// the proxy that takes a reply apart: merges, SCAN's cursor, redirects,
// pub/sub classification. Nothing may panic, and whatever comes out is
// one well-formed frame.
func FuzzReplies(f *testing.F) {
	for _, seed := range []string{
		"*2\r\n$1\r\na\r\n$-1\r\n*1\r\n$1\r\nb\r\n",
		":1\r\n:2\r\n",
		"+OK\r\n-ERR x\r\n",
		"*2\r\n$1\r\n0\r\n*1\r\n$1\r\nk\r\n",
		">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n",
		"*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n",
		"-MOVED 1 a:1\r\n-ASK 2 b:2\r\n",
		"*2\r\n:1\r\n:0\r\n*2\r\n:1\r\n:1\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rr := resp.NewReplyReader(bytes.NewReader(data), 1<<16)
		var frames [][]byte
		for len(frames) < 8 {
			fr, err := rr.Next()
			if err != nil {
				break
			}
			frames = append(frames, bytes.Clone(fr))
		}
		if len(frames) == 0 {
			return
		}
		parts := make([]part, len(frames))
		nkeys := 0
		for i, fr := range frames {
			if es, _, ok := resp.FrameElems(fr); ok {
				for range es {
					parts[i].at = append(parts[i].at, nkeys)
					nkeys++
				}
			}
		}
		var outs [][]byte
		for _, m := range []merge{mergeConcat, mergeSum, mergeAllOK} {
			outs = append(outs, mergeParts(m, resp.RESP3, frames, parts, nkeys))
		}
		for _, m := range []merge{mergeSum, mergeConcat, mergeAnd, mergeAnyOK, mergeAllOK, mergeFirst} {
			outs = append(outs, mergeFanout(m, resp.RESP2, frames))
		}
		outs = append(outs, minInts(frames, resp.RESP2), scanReply(frames[0], 100))
		for _, out := range outs {
			if n, ok := resp.FrameLen(out); !ok || n != len(out) {
				t.Fatalf("merged reply %q is not one frame", out)
			}
		}
		b := &backend{}
		for _, fr := range frames {
			_, _ = parseRedirect(fr)
			_, _, _ = confirmation(fr)
			_, _, _, _ = b.pubsubFrame(fr, &call{sub: &expectSub{kind: "subscribe"}})
		}
	})
}

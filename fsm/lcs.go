package fsm

import (
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// LCS, following Redis 7.2's lcsCommand: the same dynamic-programming table,
// the same backtracking (so the same ranges in the same order) and the same
// limits and error texts.

func init() {
	register(strCmd("lcs", -3, fR, 1, 2, 1, aclReadStrSlow, "7.0.0",
		"Finds the longest common substring.",
		"O(N*M) where N and M are the lengths of s1 and s2, respectively", lcsCmd))
}

type lcsOpts struct {
	idx, length, withMatchLen bool
	minMatchLen               int64
}

func parseLCSOpts(args [][]byte) (lcsOpts, resp.Value, bool) {
	var o lcsOpts
	for j := 0; j < len(args); j++ {
		a := args[j]
		switch {
		case eq(a, "idx"):
			o.idx = true
		case eq(a, "len"):
			o.length = true
		case eq(a, "withmatchlen"):
			o.withMatchLen = true
		case eq(a, "minmatchlen") && j+1 < len(args):
			n, err := resp.ParseInt(args[j+1])
			if err != nil {
				return o, errReply(resp.ErrNotInteger), false
			}
			o.minMatchLen = max(n, 0)
			j++
		default:
			return o, errReply(resp.ErrSyntax), false
		}
	}
	if o.idx && o.length {
		return o, errf("ERR If you want both the length and indexes, please just use IDX."), false
	}
	return o, resp.Value{}, true
}

func lcsCmd(c *Ctx, args [][]byte) resp.Value {
	a, b := c.get(args[1]), c.get(args[2])
	if (a != nil && a.Type != store.TypeString) || (b != nil && b.Type != store.TypeString) {
		return errf("ERR The specified keys must contain string values")
	}
	opts, errv, ok := parseLCSOpts(args[3:])
	if !ok {
		return errv
	}
	var sa, sb []byte
	if a != nil {
		sa = a.Str
	}
	if b != nil {
		sb = b.Str
	}
	if cells := int64(len(sa)+1) * int64(len(sb)+1); cells*4 > maxString {
		return errf("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
	}
	return lcsReply(sa, sb, lcsTable(sa, sb), opts)
}

// lcsTable fills t[i*(len(b)+1)+j] = LCS length of a[:i] and b[:j].
func lcsTable(a, b []byte) []uint32 {
	w := len(b) + 1
	t := make([]uint32, (len(a)+1)*w)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			switch {
			case a[i-1] == b[j-1]:
				t[i*w+j] = t[(i-1)*w+j-1] + 1
			case t[(i-1)*w+j] > t[i*w+j-1]:
				t[i*w+j] = t[(i-1)*w+j]
			default:
				t[i*w+j] = t[i*w+j-1]
			}
		}
	}
	return t
}

// lcsRange is one match: a[aStart..aEnd] == b[bStart..bEnd].
type lcsRange struct{ aStart, aEnd, bStart, bEnd int }

func lcsReply(a, b []byte, t []uint32, o lcsOpts) resp.Value {
	w := len(b) + 1
	total := t[len(a)*w+len(b)]
	if o.length {
		return resp.Int(int64(total))
	}
	str, ranges := lcsBacktrack(a, b, t, total)
	if !o.idx {
		return resp.Bulk(str)
	}
	matches := make([]resp.Value, 0, len(ranges))
	for _, r := range ranges {
		n := int64(r.aEnd - r.aStart + 1)
		if o.minMatchLen != 0 && n < o.minMatchLen {
			continue
		}
		m := []resp.Value{
			resp.Array(resp.Int(int64(r.aStart)), resp.Int(int64(r.aEnd))),
			resp.Array(resp.Int(int64(r.bStart)), resp.Int(int64(r.bEnd))),
		}
		if o.withMatchLen {
			m = append(m, resp.Int(n))
		}
		matches = append(matches, resp.Array(m...))
	}
	return resp.Map(resp.BulkString("matches"), resp.Array(matches...),
		resp.BulkString("len"), resp.Int(int64(total)))
}

// lcsBacktrack walks the table from the end as Redis does, building the
// common string and the ranges (from the end of the strings backwards).
func lcsBacktrack(a, b []byte, t []uint32, total uint32) ([]byte, []lcsRange) {
	w := len(b) + 1
	out := make([]byte, total)
	idx := int(total)
	var ranges []lcsRange
	cur, open := lcsRange{}, false
	i, j := len(a), len(b)
	for i > 0 && j > 0 {
		emit := false
		if a[i-1] == b[j-1] {
			out[idx-1] = a[i-1]
			switch {
			case !open:
				cur, open = lcsRange{i - 1, i - 1, j - 1, j - 1}, true
			case cur.aStart == i && cur.bStart == j:
				cur.aStart--
				cur.bStart--
			default:
				emit = true
			}
			if cur.aStart == 0 || cur.bStart == 0 {
				emit = true
			}
			idx, i, j = idx-1, i-1, j-1
		} else {
			if t[(i-1)*w+j] > t[i*w+j-1] {
				i--
			} else {
				j--
			}
			emit = open
		}
		if emit {
			ranges = append(ranges, cur)
			open = false
		}
	}
	return out, ranges
}

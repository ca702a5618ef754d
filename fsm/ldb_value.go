package fsm

import (
	"bytes"
	"fmt"
	"math"
	"strconv"

	lua "github.com/yuin/gopher-lua"

	"github.com/slotraft/slotraft/resp"
)

// How the debugger shows Lua values (ldbCatStackValue) and the replies of
// the commands a script calls (ldbRedisProtocolToHuman), as Redis does.

// ldbValue renders v as Redis's ldbCatStackValue: strings quoted as
// sdscatrepr quotes them, numbers as C's %g, a table as {v1; v2} when its
// keys are 1, 2, 3… in order and {[k1]=v1; [k2]=v2} otherwise, nested
// tables up to ldbMaxValueDepth levels. Differences: a table's pairs come
// in gopher-lua's order (the array part, then insertion order; Redis's
// Lua follows its hash), a function or other object shows a number that
// identifies it in the run, not an address, and the text stops growing
// past ldbMaxLogBytes.
func (r *scriptRun) ldbValue(v lua.LValue) string {
	var b bytes.Buffer
	r.appendLDBValue(&b, v, 0)
	return b.String()
}

func (r *scriptRun) appendLDBValue(b *bytes.Buffer, v lua.LValue, level int) {
	if level == ldbMaxValueDepth {
		b.WriteString("<max recursion level reached! Nested table?>")
		return
	}
	if b.Len() > ldbMaxLogBytes {
		return
	}
	switch v := v.(type) {
	case lua.LString:
		b.Write(resp.AppendRepr(nil, []byte(v)))
	case lua.LBool:
		b.WriteString(strconv.FormatBool(bool(v)))
	case lua.LNumber:
		b.WriteString(cFormatG(float64(v)))
	case *lua.LNilType:
		b.WriteString("nil")
	case *lua.LTable:
		r.appendLDBTable(b, v, level+1)
	case *lua.LFunction:
		fmt.Fprintf(b, "\"function@0x%x\"", r.objectID(v))
	case *lua.LUserData:
		fmt.Fprintf(b, "\"userdata@0x%x\"", r.objectID(v))
	case *lua.LState:
		fmt.Fprintf(b, "\"thread@0x%x\"", r.objectID(v))
	default:
		b.WriteString(`"<unknown-lua-type>"`)
	}
}

// appendLDBTable renders a table both ways at once (its values alone, and
// its pairs) and keeps the array form if the keys were 1, 2, 3… in order.
func (r *scriptRun) appendLDBTable(b *bytes.Buffer, t *lua.LTable, level int) {
	var vals, pairs bytes.Buffer
	isArray, expected := true, 1
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		if n, ok := k.(lua.LNumber); !ok || float64(n) != float64(expected) {
			isArray = false
		}
		var one bytes.Buffer
		r.appendLDBValue(&one, v, level)
		vals.Write(one.Bytes())
		vals.WriteString("; ")
		pairs.WriteByte('[')
		r.appendLDBValue(&pairs, k, level)
		pairs.WriteString("]=")
		pairs.Write(one.Bytes())
		pairs.WriteString("; ")
		expected++
		if vals.Len()+pairs.Len() > 2*ldbMaxLogBytes {
			break
		}
	}
	out := pairs.Bytes()
	if isArray {
		out = vals.Bytes()
	}
	b.WriteByte('{')
	b.Write(bytes.TrimSuffix(out, []byte("; ")))
	b.WriteByte('}')
}

// objectID is the number a function or other object shows in the run (the
// one tostring shows).
func (r *scriptRun) objectID(v any) int {
	if r.ids == nil {
		r.ids = map[any]int{}
	}
	id, ok := r.ids[v]
	if !ok {
		id = len(r.ids) + 1
		r.ids[v] = id
	}
	return id
}

// cFormatG is C's printf("%g"): 6 significant digits, trailing zeros
// dropped, inf and nan as glibc writes them.
func cFormatG(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		if math.Signbit(f) {
			return "-nan"
		}
		return "nan"
	}
	return strconv.FormatFloat(f, 'g', 6, 64)
}

// ldbReply renders a reply as the script's client received it (RESP2, or
// RESP3 after redis.setresp(3)) the way ldbRedisProtocolToHuman does: a
// string quoted, a status or error quoted with its + or -, an integer
// bare, NULL for RESP2's nil, (null) for RESP3's, [a,b] for an array,
// ~(a,b) for a set, {k => v,…} for a map, #true/#false, (double) 1.5.
// Redis shows nothing for the RESP3 types it forgot (verbatim strings, big
// numbers, attributes, pushes); neither does this.
func ldbReply(v resp.Value, proto int) string {
	wire := v.Append(nil, proto)
	var b bytes.Buffer
	humanReply(&b, wire)
	return b.String()
}

// humanReply appends the reply at the start of wire and returns what is
// left after it; a reply cut short ends the rendering.
func humanReply(b *bytes.Buffer, wire []byte) []byte {
	if len(wire) == 0 {
		return nil
	}
	eol := bytes.Index(wire, []byte("\r\n"))
	if eol < 1 {
		return nil
	}
	head, rest := wire[1:eol], wire[eol+2:]
	switch wire[0] {
	case ':':
		b.Write(head)
	case '$':
		n, err := strconv.Atoi(string(head))
		switch {
		case err != nil || n < -1:
			return nil
		case n == -1:
			b.WriteString("NULL")
			return rest
		case n+2 > len(rest):
			return nil
		}
		b.Write(resp.AppendRepr(nil, rest[:n]))
		return rest[n+2:]
	case '+', '-':
		b.Write(resp.AppendRepr(nil, wire[:eol]))
	case '*':
		if string(head) == "-1" {
			b.WriteString("NULL")
			return rest
		}
		return humanElems(b, rest, head, "[", "]", false)
	case '~':
		return humanElems(b, rest, head, "~(", ")", false)
	case '%':
		return humanElems(b, rest, head, "{", "}", true)
	case '_':
		b.WriteString("(null)")
	case '#':
		if len(head) > 0 && head[0] == 't' {
			b.WriteString("#true")
		} else {
			b.WriteString("#false")
		}
	case ',':
		b.WriteString("(double) ")
		b.Write(head)
	default:
		return skipReply(wire)
	}
	return rest
}

// humanElems renders n elements (n pairs for a map) between open and close.
func humanElems(b *bytes.Buffer, wire, count []byte, open, close string, pairs bool) []byte {
	n, err := strconv.Atoi(string(count))
	if err != nil || n < 0 {
		return nil
	}
	b.WriteString(open)
	for i := 0; i < n && wire != nil; i++ {
		wire = humanReply(b, wire)
		if pairs {
			b.WriteString(" => ")
			wire = humanReply(b, wire)
		}
		if i != n-1 {
			b.WriteByte(',')
		}
	}
	b.WriteString(close)
	return wire
}

// skipReply skips a reply of a type the debugger does not show.
func skipReply(wire []byte) []byte {
	var discard bytes.Buffer
	eol := bytes.Index(wire, []byte("\r\n"))
	if eol < 1 {
		return nil
	}
	head, rest := wire[1:eol], wire[eol+2:]
	switch wire[0] {
	case '=', '!':
		n, err := strconv.Atoi(string(head))
		if err != nil || n < 0 || n+2 > len(rest) {
			return nil
		}
		return rest[n+2:]
	case '>':
		return humanElems(&discard, rest, head, "", "", false)
	case '|':
		rest = humanElems(&discard, rest, head, "", "", true)
		return skipReply(rest) // the attribute's reply itself: shown by neither
	}
	return rest // '(' and unknown one-line types
}

package fsm

import (
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/slotraft/slotraft/resp"
)

// Conversions between a command's reply and Lua values (lua.go): a
// reply as a script sees it (RESP2 or RESP3 rules), and a script's return
// value as a reply.

func luaStrings(L *lua.LState, items [][]byte) *lua.LTable {
	t := L.CreateTable(len(items), 0)
	for i, it := range items {
		t.RawSetInt(i+1, lua.LString(it))
	}
	return t
}

// toLua converts a command's reply for the script (RESP2 or RESP3 rules).
func (r *scriptRun) toLua(L *lua.LState, v resp.Value) lua.LValue {
	resp3 := r.resp == 3
	switch v.Kind {
	case resp.KindNull, resp.KindNullArray:
		if resp3 {
			return lua.LNil
		}
		return lua.LFalse
	case resp.KindStatus:
		t := L.NewTable()
		t.RawSetString("ok", lua.LString(v.Str))
		return t
	case resp.KindError:
		return callErrTable(L, "-"+string(v.Str))
	case resp.KindInt:
		return lua.LNumber(v.Int)
	case resp.KindBulk:
		return lua.LString(v.Str)
	case resp.KindVerbatim:
		format, text := "txt", v.Str
		if len(v.Str) >= 4 {
			format, text = string(v.Str[:3]), v.Str[4:]
		}
		if !resp3 {
			return lua.LString(text)
		}
		inner := L.NewTable()
		inner.RawSetString("string", lua.LString(text))
		inner.RawSetString("format", lua.LString(format))
		t := L.NewTable()
		t.RawSetString("verbatim_string", inner)
		return t
	case resp.KindDouble:
		if !resp3 {
			return lua.LString(resp.FormatDouble(v.Float, false))
		}
		t := L.NewTable()
		t.RawSetString("double", lua.LNumber(v.Float))
		return t
	case resp.KindBool:
		if !resp3 {
			return lua.LNumber(v.Int)
		}
		return lua.LBool(v.Int != 0)
	case resp.KindBigNumber:
		if !resp3 {
			return lua.LString(v.Str)
		}
		t := L.NewTable()
		t.RawSetString("big_number", lua.LString(v.Str))
		return t
	case resp.KindMap:
		if !resp3 {
			return r.luaArray(L, v.Elems)
		}
		m := L.NewTable()
		for i := 0; i+1 < len(v.Elems); i += 2 {
			m.RawSet(r.toLua(L, v.Elems[i]), r.toLua(L, v.Elems[i+1]))
		}
		t := L.NewTable()
		t.RawSetString("map", m)
		return t
	case resp.KindSet:
		if !resp3 {
			return r.luaArray(L, v.Elems)
		}
		s := L.NewTable()
		for _, e := range v.Elems {
			s.RawSet(r.toLua(L, e), lua.LTrue)
		}
		t := L.NewTable()
		t.RawSetString("set", s)
		return t
	case resp.KindPairs:
		if !resp3 {
			return r.luaArray(L, v.Elems)
		}
		t := L.CreateTable(len(v.Elems)/2, 0)
		for i := 0; i+1 < len(v.Elems); i += 2 {
			t.RawSetInt(i/2+1, r.luaArray(L, v.Elems[i:i+2]))
		}
		return t
	}
	return r.luaArray(L, v.Elems) // arrays, push
}

func (r *scriptRun) luaArray(L *lua.LState, elems []resp.Value) *lua.LTable {
	t := L.CreateTable(len(elems), 0)
	for i, e := range elems {
		t.RawSetInt(i+1, r.toLua(L, e))
	}
	return t
}

// maxReplyDepth bounds the nesting of a script's reply (Redis: the Lua
// stack limit).
const maxReplyDepth = 1000

// toReply converts a script's return value into a reply (Redis's
// luaReplyToRedisReply).
func (r *scriptRun) toReply(L *lua.LState, v lua.LValue, depth int) resp.Value {
	if depth > maxReplyDepth {
		return errf("ERR reached lua stack limit")
	}
	switch v := v.(type) {
	case lua.LString:
		return resp.Bulk([]byte(v))
	case lua.LBool:
		if r.resp == 2 {
			if v {
				return one
			}
			return resp.Null()
		}
		return resp.Bool(bool(v))
	case lua.LNumber:
		return resp.Int(luaToInt64(float64(v)))
	case *lua.LTable:
		if e, ok := v.RawGetString("err").(lua.LString); ok {
			return resp.Value{Kind: resp.KindError, Str: []byte(crlfToSpaces(string(e)))}
		}
		if s, ok := v.RawGetString("ok").(lua.LString); ok {
			return resp.Status(crlfToSpaces(string(s)))
		}
		if d, ok := v.RawGetString("double").(lua.LNumber); ok {
			return resp.Double(float64(d))
		}
		if b, ok := v.RawGetString("big_number").(lua.LString); ok {
			return resp.Value{Kind: resp.KindBigNumber, Str: []byte(crlfToSpaces(string(b)))}
		}
		if vt, ok := v.RawGetString("verbatim_string").(*lua.LTable); ok {
			f, ok1 := vt.RawGetString("format").(lua.LString)
			s, ok2 := vt.RawGetString("string").(lua.LString)
			if ok1 && ok2 {
				return resp.Verbatim(string(f), []byte(s))
			}
		}
		if m, ok := v.RawGetString("map").(*lua.LTable); ok {
			var kvs []resp.Value
			luaForEach(m, func(k, val lua.LValue) {
				kvs = append(kvs, r.toReply(L, k, depth+1), r.toReply(L, val, depth+1))
			})
			return resp.Map(kvs...)
		}
		if s, ok := v.RawGetString("set").(*lua.LTable); ok {
			var elems []resp.Value
			luaForEach(s, func(k, _ lua.LValue) { elems = append(elems, r.toReply(L, k, depth+1)) })
			return resp.Set(elems...)
		}
		var elems []resp.Value
		for i := 1; ; i++ {
			e := v.RawGetInt(i)
			if e == lua.LNil {
				break
			}
			elems = append(elems, r.toReply(L, e, depth+1))
		}
		return resp.Array(elems...)
	}
	return resp.Null()
}

// luaToInt64 is C's (long long) cast of a Lua number, made deterministic
// for NaN and out-of-range values.
func luaToInt64(f float64) int64 {
	// x86-64's conversion gives the "integer indefinite" value for NaN and
	// out-of-range numbers; Redis on x86-64 replies with it.
	if math.IsNaN(f) || f >= math.MaxInt64 || f < math.MinInt64 {
		return math.MinInt64
	}
	return int64(f)
}

// luaNumberString is Lua 5.1's number to string conversion ("%.14g").
func luaNumberString(f float64) string {
	if b, ok := resp.FormatNonFinite(f); ok {
		return string(b)
	}
	return fmtG(f, 14)
}

func crlfToSpaces(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }

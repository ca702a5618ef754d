package fsm

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// The cmsgpack library (lua-cmsgpack 0.4.0 as bundled with Redis):
// cmsgpack.pack(…), cmsgpack.unpack(s), cmsgpack.unpack_one(s [, offset])
// and cmsgpack.unpack_limit(s, limit [, offset]).

const msgpackMaxNesting = 16 // deeper tables are encoded as nil

func openCmsgpack(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(msgpackPack))
	t.RawSetString("unpack", L.NewFunction(func(L *lua.LState) int { return msgpackUnpack(L, 0, 0, false) }))
	t.RawSetString("unpack_one", L.NewFunction(func(L *lua.LState) int {
		return msgpackUnpack(L, 1, L.OptInt(2, 0), true)
	}))
	t.RawSetString("unpack_limit", L.NewFunction(func(L *lua.LState) int {
		return msgpackUnpack(L, L.CheckInt(2), L.OptInt(3, 0), true)
	}))
	t.RawSetString("_NAME", lua.LString("cmsgpack"))
	t.RawSetString("_VERSION", lua.LString("lua-cmsgpack 0.4.0"))
	return t
}

func msgpackPack(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		argError(L, 0, "pack", "MessagePack pack needs input.")
	}
	var out []byte
	for i := 1; i <= n; i++ {
		out = msgpackEncode(L, out, L.Get(i), 0)
	}
	L.Push(lua.LString(out))
	return 1
}

func msgpackEncode(L *lua.LState, b []byte, v lua.LValue, level int) []byte {
	if len(b) > luaMaxString {
		raisePlain(L, "cmsgpack.pack: result longer than %d bytes", luaMaxString)
	}
	switch v := v.(type) {
	case lua.LBool:
		if v {
			return append(b, 0xc3)
		}
		return append(b, 0xc2)
	case lua.LNumber:
		f := float64(v)
		if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 && !math.IsInf(f, 0) {
			return msgpackInt(b, int64(f))
		}
		if float64(float32(f)) == f {
			b = append(b, 0xca)
			return binary.BigEndian.AppendUint32(b, math.Float32bits(float32(f)))
		}
		b = append(b, 0xcb)
		return binary.BigEndian.AppendUint64(b, math.Float64bits(f))
	case lua.LString:
		n := len(v)
		switch {
		case n < 32:
			b = append(b, 0xa0|byte(n))
		case n <= 0xff:
			b = append(b, 0xd9, byte(n))
		case n <= 0xffff:
			b = append(b, 0xda)
			b = binary.BigEndian.AppendUint16(b, uint16(n))
		default:
			b = append(b, 0xdb)
			b = binary.BigEndian.AppendUint32(b, uint32(n))
		}
		return append(b, v...)
	case *lua.LTable:
		if level >= msgpackMaxNesting {
			return append(b, 0xc0)
		}
		if n, ok := msgpackArrayLen(v); ok {
			b = msgpackHeader(b, n, 0x90, 0xdc, 0xdd)
			for i := 1; i <= n; i++ {
				b = msgpackEncode(L, b, v.RawGetInt(i), level+1)
			}
			return b
		}
		count := 0
		luaForEach(v, func(_, _ lua.LValue) { count++ })
		b = msgpackHeader(b, count, 0x80, 0xde, 0xdf)
		luaForEach(v, func(k, val lua.LValue) {
			b = msgpackEncode(L, b, k, level+1)
			b = msgpackEncode(L, b, val, level+1)
		})
		return b
	}
	return append(b, 0xc0)
}

func msgpackHeader(b []byte, n int, fix, c16, c32 byte) []byte {
	switch {
	case n < 16:
		return append(b, fix|byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, c16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, c32), uint32(n))
}

// msgpackArrayLen: a table is an array when its keys are exactly 1..n.
func msgpackArrayLen(t *lua.LTable) (int, bool) {
	count, maxKey := 0, 0
	ok := true
	luaForEach(t, func(k, _ lua.LValue) {
		n, isNum := k.(lua.LNumber)
		if !isNum || float64(n) < 1 || float64(n) != math.Floor(float64(n)) {
			ok = false
			return
		}
		count++
		if int(n) > maxKey {
			maxKey = int(n)
		}
	})
	return count, ok && count == maxKey
}

func msgpackInt(b []byte, n int64) []byte {
	if n >= 0 {
		switch {
		case n <= 127:
			return append(b, byte(n))
		case n <= 0xff:
			return append(b, 0xcc, byte(n))
		case n <= 0xffff:
			return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
		case n <= 0xffffffff:
			return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
		}
		return binary.BigEndian.AppendUint64(append(b, 0xcf), uint64(n))
	}
	switch {
	case n >= -32:
		return append(b, byte(int8(n)))
	case n >= math.MinInt8:
		return append(b, 0xd0, byte(int8(n)))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(int16(n)))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(int32(n)))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

type msgpackDecoder struct {
	L     *lua.LState
	s     string
	i     int
	depth int
}

// msgpackUnpack decodes up to limit objects (0: all) from offset; with
// withOffset it returns the next offset first (-1 at the end).
func msgpackUnpack(L *lua.LState, limit, offset int, withOffset bool) int {
	s := L.CheckString(1)
	if offset < 0 || limit < 0 {
		argError(L, 2, "unpack", "offset and limit must be non-negative")
	}
	if offset > len(s) {
		argError(L, 2, "unpack", "Start offset greater than input length.")
	}
	d := &msgpackDecoder{L: L, s: s, i: offset}
	var vals []lua.LValue
	for d.i < len(s) && (limit == 0 || len(vals) < limit) {
		vals = append(vals, d.value())
	}
	if withOffset {
		next := d.i
		if next >= len(s) {
			next = -1
		}
		L.Push(lua.LNumber(next))
	}
	for _, v := range vals {
		L.Push(v)
	}
	if withOffset {
		return len(vals) + 1
	}
	return len(vals)
}

func (d *msgpackDecoder) need(n int) {
	if n < 0 || d.i+n > len(d.s) {
		raisePlain(d.L, "Missing bytes in input.")
	}
}

func (d *msgpackDecoder) u(n int) uint64 {
	d.need(n)
	var v uint64
	for k := 0; k < n; k++ {
		v = v<<8 | uint64(d.s[d.i+k])
	}
	d.i += n
	return v
}

func (d *msgpackDecoder) bytes(n uint64) lua.LValue {
	if n > uint64(len(d.s)) {
		raisePlain(d.L, "Missing bytes in input.")
	}
	d.need(int(n))
	v := lua.LString(d.s[d.i : d.i+int(n)])
	d.i += int(n)
	return v
}

func (d *msgpackDecoder) value() lua.LValue {
	d.need(1)
	c := d.s[d.i]
	d.i++
	switch {
	case c <= 0x7f:
		return lua.LNumber(c)
	case c >= 0xe0:
		return lua.LNumber(int8(c))
	case c&0xe0 == 0xa0:
		return d.bytes(uint64(c & 0x1f))
	case c&0xf0 == 0x90:
		return d.array(uint64(c & 0x0f))
	case c&0xf0 == 0x80:
		return d.mapN(uint64(c & 0x0f))
	}
	switch c {
	case 0xc0:
		return lua.LNil
	case 0xc2:
		return lua.LFalse
	case 0xc3:
		return lua.LTrue
	case 0xca:
		return lua.LNumber(math.Float32frombits(uint32(d.u(4))))
	case 0xcb:
		return lua.LNumber(math.Float64frombits(d.u(8)))
	case 0xcc:
		return lua.LNumber(d.u(1))
	case 0xcd:
		return lua.LNumber(d.u(2))
	case 0xce:
		return lua.LNumber(d.u(4))
	case 0xcf:
		return lua.LNumber(float64(d.u(8)))
	case 0xd0:
		return lua.LNumber(int8(d.u(1)))
	case 0xd1:
		return lua.LNumber(int16(d.u(2)))
	case 0xd2:
		return lua.LNumber(int32(d.u(4)))
	case 0xd3:
		return lua.LNumber(float64(int64(d.u(8))))
	case 0xc4, 0xd9:
		return d.bytes(d.u(1))
	case 0xc5, 0xda:
		return d.bytes(d.u(2))
	case 0xc6, 0xdb:
		return d.bytes(d.u(4))
	case 0xdc:
		return d.array(d.u(2))
	case 0xdd:
		return d.array(d.u(4))
	case 0xde:
		return d.mapN(d.u(2))
	case 0xdf:
		return d.mapN(d.u(4))
	}
	raisePlain(d.L, "Bad data format in input.")
	return lua.LNil
}

func (d *msgpackDecoder) enter(n uint64) {
	// Every element takes at least one byte.
	if n > uint64(len(d.s)-d.i) {
		raisePlain(d.L, "Missing bytes in input.")
	}
	d.depth++
	if d.depth > 1000 {
		raisePlain(d.L, "Bad data format in input.")
	}
}

func (d *msgpackDecoder) array(n uint64) lua.LValue {
	d.enter(n)
	t := d.L.CreateTable(int(n), 0)
	for k := 1; k <= int(n); k++ {
		t.RawSetInt(k, d.value())
	}
	d.depth--
	return t
}

func (d *msgpackDecoder) mapN(n uint64) lua.LValue {
	d.enter(n)
	t := d.L.NewTable()
	for k := 0; k < int(n); k++ {
		key := d.value()
		val := d.value()
		if key != lua.LNil {
			t.RawSet(key, val)
		}
	}
	d.depth--
	return t
}

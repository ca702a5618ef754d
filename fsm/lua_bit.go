package fsm

import (
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The bit library (LuaBitOp 1.0.2, as bundled with Redis): 32-bit
// operations on Lua numbers; results are signed 32-bit integers.

func openBit(L *lua.LState) *lua.LTable {
	fns := map[string]lua.LGFunction{
		"tobit":   func(L *lua.LState) int { return bitPush(L, bitArg(L, 1)) },
		"bnot":    func(L *lua.LState) int { return bitPush(L, ^bitArg(L, 1)) },
		"band":    bitFold(func(a, b uint32) uint32 { return a & b }),
		"bor":     bitFold(func(a, b uint32) uint32 { return a | b }),
		"bxor":    bitFold(func(a, b uint32) uint32 { return a ^ b }),
		"lshift":  bitShift(func(b uint32, n uint) uint32 { return b << n }),
		"rshift":  bitShift(func(b uint32, n uint) uint32 { return b >> n }),
		"arshift": bitShift(func(b uint32, n uint) uint32 { return uint32(int32(b) >> n) }),
		"rol":     bitShift(func(b uint32, n uint) uint32 { return b<<n | b>>(32-n) }),
		"ror":     bitShift(func(b uint32, n uint) uint32 { return b>>n | b<<(32-n) }),
		"bswap": func(L *lua.LState) int {
			b := bitArg(L, 1)
			return bitPush(L, b>>24|b>>8&0xff00|b&0xff00<<8|b<<24)
		},
		"tohex": bitToHex,
	}
	t := L.NewTable()
	for _, name := range sortedKeys(fns) {
		t.RawSetString(name, L.NewFunction(fns[name]))
	}
	return t
}

// bitArg is LuaBitOp's barg: the number modulo 2^32, rounded to nearest
// even as its 2^52+2^51 addition trick does.
func bitArg(L *lua.LState, n int) uint32 {
	f := float64(L.CheckNumber(n))
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	f = math.RoundToEven(f)
	f = math.Mod(f, 4294967296)
	if f < 0 {
		f += 4294967296
	}
	return uint32(f)
}

func bitPush(L *lua.LState, b uint32) int {
	L.Push(lua.LNumber(int32(b)))
	return 1
}

func bitFold(op func(a, b uint32) uint32) lua.LGFunction {
	return func(L *lua.LState) int {
		b := bitArg(L, 1)
		for i := 2; i <= L.GetTop(); i++ {
			b = op(b, bitArg(L, i))
		}
		return bitPush(L, b)
	}
}

func bitShift(op func(b uint32, n uint) uint32) lua.LGFunction {
	return func(L *lua.LState) int {
		b := bitArg(L, 1)
		n := uint(bitArg(L, 2) & 31)
		return bitPush(L, op(b, n))
	}
}

func bitToHex(L *lua.LState) int {
	b := bitArg(L, 1)
	n := int32(8)
	if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
		n = int32(bitArg(L, 2))
	}
	digits := "0123456789abcdef"
	if n < 0 {
		n = -n
		digits = "0123456789ABCDEF"
	}
	if n > 8 {
		n = 8
	}
	var sb strings.Builder
	for i := n - 1; i >= 0; i-- {
		sb.WriteByte(digits[b>>(4*uint(i))&15])
	}
	L.Push(lua.LString(sb.String()))
	return 1
}

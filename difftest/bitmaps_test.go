package difftest

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestBitmapsDifferential sends the same random bitmap commands (fixed
// seed) to redis-server and to slotraft and compares every reply exactly,
// plus the value of every key every few batches.
func TestBitmapsDifferential(t *testing.T) {
	redisAddr := startRedis(t)
	slotraftAddr := startSlotraft(t)
	for _, pass := range []struct {
		proto string
		ops   int
	}{{"2", 3000}, {"3", 1000}} {
		t.Run("RESP"+pass.proto, func(t *testing.T) {
			rc, sc := connect(t, redisAddr, pass.proto), connect(t, slotraftAddr, pass.proto)
			g := &bitGen{r: rand.New(rand.NewPCG(11, uint64(pass.proto[0]))), tag: "{bm" + pass.proto + "}"}
			runBitDiff(t, g, rc, sc, pass.ops)
		})
	}
}

func runBitDiff(t *testing.T, g *bitGen, rc, sc *client, n int) {
	t.Helper()
	stats := map[string]int{} // replies per command and kind, logged at the end
	compare := func(cmds [][]string) int {
		want, err := rc.pipeline(cmds)
		if err != nil {
			t.Fatalf("redis-server: %v", err)
		}
		got, err := sc.pipeline(cmds)
		if err != nil {
			t.Fatalf("slotraft: %v", err)
		}
		bad := 0
		for i := range cmds {
			kind := "ok"
			if want[i].typ == '-' {
				kind = "err"
			}
			stats[cmds[i][0]+" "+kind]++
			if w, s := want[i].String(), got[i].String(); w != s {
				bad++
				t.Errorf("%q:\n  redis:    %s\n  slotraft: %s", cmds[i], w, s)
			}
		}
		return bad
	}
	// A list key for WRONGTYPE replies.
	compare([][]string{{"DEL", g.tag + "l"}, {"RPUSH", g.tag + "l", "x"}})
	mismatches := 0
	for done := 0; done < n && mismatches < 20; {
		var cmds [][]string
		for len(cmds) < batch && done < n {
			cmds = append(cmds, g.next())
			done++
		}
		mismatches += compare(cmds)
		if done%(4*batch) == 0 || done == n {
			var gets [][]string
			for i := 1; i <= bitKeys; i++ {
				gets = append(gets, []string{"GET", g.key(i)})
			}
			mismatches += compare(gets)
		}
	}
	t.Logf("replies: %v", stats)
}

// bitKeys is the number of string keys the generator uses.
const bitKeys = 4

// bitGen generates bitmap commands over a few keys under one hash tag.
type bitGen struct {
	r   *rand.Rand
	tag string
}

func (g *bitGen) key(i int) string { return g.tag + "b" + strconv.Itoa(i) }

// anyKey is usually one of the string keys, sometimes the list (WRONGTYPE)
// or a key that never exists.
func (g *bitGen) anyKey() string {
	switch g.r.IntN(25) {
	case 0:
		return g.tag + "l"
	case 1:
		return g.tag + "missing"
	}
	return g.key(1 + g.r.IntN(bitKeys))
}

func (g *bitGen) pick(from []string) string { return from[g.r.IntN(len(from))] }

func (g *bitGen) num(lo, hi int) string { return strconv.Itoa(lo + g.r.IntN(hi-lo+1)) }

var (
	bitBadOffsets = []string{"-1", "x", "4294967296", "01", "1.5", ""}
	bitIndexes    = []string{"0", "1", "2", "-1", "-2", "3", "7", "8", "-8", "15", "100", "-100", "x"}
	bitUnits      = []string{"BIT", "BYTE", "bit", "byte", "bits"}
	bitTypes      = []string{"u1", "u2", "u3", "u8", "i1", "i5", "i8", "u16", "i16", "i32", "u32", "u63", "i64", "u64", "i65", "u0", "x8", "U8"}
	bitValues     = []string{"0", "1", "-1", "2", "100", "127", "128", "-128", "255", "256", "-256", "1000000",
		"9223372036854775807", "-9223372036854775808", "4611686018427387904", "x"}
	bitOverflows = []string{"WRAP", "SAT", "FAIL", "wrap", "sat", "fail", "FOO"}
)

func (g *bitGen) offset() string {
	if g.r.IntN(30) == 0 {
		return g.pick(bitBadOffsets)
	}
	return g.num(0, 120)
}

func (g *bitGen) index() string {
	if g.r.IntN(3) == 0 {
		return g.pick(bitIndexes)
	}
	return g.num(-40, 40)
}

// bytesArg is a random short binary string.
func (g *bitGen) bytesArg() string {
	b := make([]byte, g.r.IntN(6))
	for i := range b {
		switch g.r.IntN(3) {
		case 0:
			b[i] = 0
		case 1:
			b[i] = 0xff
		default:
			b[i] = byte(g.r.IntN(256))
		}
	}
	return string(b)
}

func (g *bitGen) next() []string {
	k := g.anyKey()
	switch g.r.IntN(12) {
	case 0, 1:
		val := g.pick([]string{"0", "1"})
		if g.r.IntN(30) == 0 {
			val = g.pick([]string{"2", "-1", "x", ""})
		}
		return []string{"SETBIT", k, g.offset(), val}
	case 2:
		return []string{"GETBIT", k, g.offset()}
	case 3:
		cmd := []string{"BITCOUNT", k}
		switch g.r.IntN(6) {
		case 0:
		case 1:
			cmd = append(cmd, g.index()) // start only: syntax error
		case 2, 3:
			cmd = append(cmd, g.index(), g.index())
		default:
			cmd = append(cmd, g.index(), g.index(), g.pick(bitUnits))
		}
		return cmd
	case 4, 5:
		bit := g.pick([]string{"0", "1"})
		if g.r.IntN(30) == 0 {
			bit = g.pick([]string{"2", "-1", "x"})
		}
		cmd := []string{"BITPOS", k, bit}
		switch g.r.IntN(5) {
		case 0:
		case 1:
			cmd = append(cmd, g.index())
		case 2:
			cmd = append(cmd, g.index(), g.index())
		default:
			cmd = append(cmd, g.index(), g.index(), g.pick(bitUnits))
		}
		if g.r.IntN(40) == 0 {
			cmd = append(cmd, "extra")
		}
		return cmd
	case 6:
		op := g.pick([]string{"AND", "OR", "XOR", "NOT", "and", "or", "xor", "not"})
		if g.r.IntN(30) == 0 {
			op = g.pick([]string{"NAND", "DIFF", ""})
		}
		cmd := []string{"BITOP", op, g.anyKey(), g.anyKey()}
		if op != "NOT" && op != "not" || g.r.IntN(10) == 0 {
			for range g.r.IntN(3) {
				cmd = append(cmd, g.anyKey())
			}
		}
		return cmd
	case 7, 8:
		return g.bitfield("BITFIELD", k)
	case 9:
		return g.bitfield("BITFIELD_RO", k)
	case 10:
		switch g.r.IntN(4) {
		case 0:
			return []string{"SET", k, g.bytesArg()}
		case 1:
			return []string{"APPEND", k, g.bytesArg()}
		case 2:
			return []string{"DEL", k}
		}
		return []string{"SET", k, g.pick([]string{"foobar", "abcdef", "12345", ""})}
	}
	return []string{"GET", k}
}

func (g *bitGen) bitfield(name, k string) []string {
	cmd := []string{name, k}
	for range g.r.IntN(4) {
		typ := g.pick(bitTypes[:13])
		if g.r.IntN(25) == 0 {
			typ = g.pick(bitTypes)
		}
		off := g.num(0, 100)
		switch g.r.IntN(8) {
		case 0:
			off = "#" + g.num(0, 12)
		case 1:
			if g.r.IntN(4) == 0 {
				off = g.pick(bitBadOffsets)
			}
		}
		switch g.r.IntN(5) {
		case 0, 1:
			cmd = append(cmd, "GET", typ, off)
		case 2:
			cmd = append(cmd, "SET", typ, off, g.pick(bitValues))
		case 3:
			cmd = append(cmd, "INCRBY", typ, off, g.pick(bitValues))
		default:
			cmd = append(cmd, "OVERFLOW", g.pick(bitOverflows))
		}
		if g.r.IntN(40) == 0 {
			cmd = cmd[:len(cmd)-1] // a missing argument: syntax error
		}
	}
	return cmd
}

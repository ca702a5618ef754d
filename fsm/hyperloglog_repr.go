package fsm

import (
	"encoding/binary"
	"math"
)

// HyperLogLog values in Redis's representation, byte for byte (Redis 7.2
// src/hyperloglog.c), so that a value read with GET from Redis can be SET
// here and the other way round.
//
// A value is a string: a 16-byte header ("HYLL", the encoding byte, three
// unused bytes, the cached cardinality as a little-endian uint64 whose top
// bit set means "stale") followed by the registers, either dense (16384
// 6-bit registers packed from the least significant bit, 12288 bytes) or
// sparse (run-length opcodes ZERO 00xxxxxx, XZERO 01xxxxxx yyyyyyyy,
// VAL 1vvvvvxx).
//
// Redis reads one byte past a value's end in a few places (the sds
// terminator, always zero); hllAt reproduces that, so corrupted input is
// interpreted exactly as Redis interprets it and never panics.

const (
	hllP            = 14
	hllQ            = 64 - hllP
	hllRegisters    = 1 << hllP
	hllPMask        = hllRegisters - 1
	hllBits         = 6
	hllRegisterMax  = 1<<hllBits - 1
	hllHdrSize      = 16
	hllDenseSize    = hllHdrSize + (hllRegisters*hllBits+7)/8
	hllDense        = 0
	hllSparse       = 1
	hllMaxEncoding  = 1
	hllSparseMaxLen = 3000 // hll-sparse-max-bytes default

	hllSparseXZeroBit   = 0x40
	hllSparseValBit     = 0x80
	hllSparseValMaxVal  = 32
	hllSparseValMaxLen  = 4
	hllSparseZeroMaxLen = 64
	hllSparseXZeroMax   = 16384

	hllAlphaInf = 0.721347520444481703680 // 0.5/ln(2)
	hllSeed     = 0xadc83b19
)

// hllAt is b[i], or 0 past the end (Redis's sds terminator).
func hllAt(b []byte, i int) byte {
	if i < len(b) {
		return b[i]
	}
	return 0
}

func hllIsZero(op byte) bool  { return op&0xc0 == 0 }
func hllIsXZero(op byte) bool { return op&0xc0 == hllSparseXZeroBit }
func hllIsVal(op byte) bool   { return op&hllSparseValBit != 0 }
func hllZeroLen(op byte) int  { return int(op&0x3f) + 1 }
func hllXZeroLen(b []byte, p int) int {
	return (int(b[p]&0x3f)<<8 | int(hllAt(b, p+1))) + 1
}
func hllValValue(op byte) int { return int(op>>2&0x1f) + 1 }
func hllValLen(op byte) int   { return int(op&3) + 1 }

func hllValOp(val, n int) byte { return byte((val-1)<<2|(n-1)) | hllSparseValBit }
func hllZeroOp(n int) byte     { return byte(n - 1) }
func hllXZeroOps(n int) (byte, byte) {
	l := n - 1
	return byte(l>>8) | hllSparseXZeroBit, byte(l)
}

// murmurHash64A is Redis's endian-neutral MurmurHash2, 64-bit version.
func murmurHash64A(key []byte, seed uint32) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	n := len(key)
	h := uint64(seed) ^ uint64(n)*m
	for len(key) >= 8 {
		k := binary.LittleEndian.Uint64(key)
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
		key = key[8:]
	}
	if len(key) > 0 {
		for i := len(key) - 1; i >= 0; i-- {
			h ^= uint64(key[i]) << (8 * i)
		}
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

// hllPatLen returns the register an element hashes to and the length of
// its 000..1 pattern (1..Q+1).
func hllPatLen(ele []byte) (index int, count uint8) {
	hash := murmurHash64A(ele, hllSeed)
	index = int(hash & hllPMask)
	hash >>= hllP
	hash |= 1 << hllQ
	count = 1
	for bit := uint64(1); hash&bit == 0; bit <<= 1 {
		count++
	}
	return index, count
}

// Dense registers (regs is the value after the header).

func hllDenseGet(regs []byte, i int) uint8 {
	byt := i * hllBits / 8
	fb := uint(i * hllBits & 7)
	b0 := uint(regs[byt])
	b1 := uint(hllAt(regs, byt+1))
	return uint8((b0>>fb | b1<<(8-fb)) & hllRegisterMax)
}

func hllDenseSetReg(regs []byte, i int, val uint8) {
	byt := i * hllBits / 8
	fb := uint(i * hllBits & 7)
	fb8 := 8 - fb
	v := uint(val)
	regs[byt] &^= byte(hllRegisterMax << fb)
	regs[byt] |= byte(v << fb)
	if byt+1 < len(regs) {
		regs[byt+1] &^= byte(hllRegisterMax >> fb8)
		regs[byt+1] |= byte(v >> fb8)
	}
}

// hllDenseSet raises register i to count; true if it changed.
func hllDenseSet(regs []byte, i int, count uint8) bool {
	if count > hllDenseGet(regs, i) {
		hllDenseSetReg(regs, i, count)
		return true
	}
	return false
}

// hllCreate returns a new empty HLL: sparse, XZERO:16384, cache valid (0).
func hllCreate() []byte {
	b := make([]byte, hllHdrSize+2, hllHdrSize+64)
	copy(b, "HYLL")
	b[4] = hllSparse
	b[hllHdrSize], b[hllHdrSize+1] = hllXZeroOps(hllSparseXZeroMax)
	return b
}

// hllValid reports whether a string is an HLL as isHLLObjectOrReply checks
// it: header, magic, known encoding, exact dense size.
func hllValid(b []byte) bool {
	if len(b) < hllHdrSize || string(b[:4]) != "HYLL" || b[4] > hllMaxEncoding {
		return false
	}
	return b[4] != hllDense || len(b) == hllDenseSize
}

func hllInvalidate(b []byte) { b[15] |= 0x80 }

func hllCacheValid(b []byte) bool { return b[15]&0x80 == 0 }

// hllSparseToDense decodes a sparse value into a new dense one (header
// copied, encoding changed); ok is false if the sparse data is corrupted.
func hllSparseToDense(b []byte) (dense []byte, ok bool) {
	if b[4] == hllDense {
		return b, true
	}
	dense = make([]byte, hllDenseSize)
	copy(dense, b[:hllHdrSize])
	dense[4] = hllDense
	regs := dense[hllHdrSize:]
	idx := 0
	for p := hllHdrSize; p < len(b); {
		op := b[p]
		switch {
		case hllIsZero(op):
			n := hllZeroLen(op)
			if idx+n > hllRegisters {
				return nil, false
			}
			idx += n
			p++
		case hllIsXZero(op):
			n := hllXZeroLen(b, p)
			if idx+n > hllRegisters {
				return nil, false
			}
			idx += n
			p += 2
		default:
			n, v := hllValLen(op), hllValValue(op)
			if idx+n > hllRegisters {
				return nil, false
			}
			for ; n > 0; n-- {
				hllDenseSetReg(regs, idx, uint8(v))
				idx++
			}
			p++
		}
	}
	if idx != hllRegisters {
		return nil, false
	}
	return dense, true
}

// hllSparseSet raises register index to count in the sparse value b, as
// Redis's hllSparseSet does (same opcode splitting and merging, promotion
// to dense beyond 32 or hll-sparse-max-bytes). It returns the new value
// (b itself changed in place when owned is true and the change fits;
// otherwise a new slice), whether the register changed, and ok=false if
// the value is corrupted. b is never changed when owned is false.
func hllSparseSet(b []byte, owned bool, index int, count uint8) (out []byte, changed, ok bool) {
	if count > hllSparseValMaxVal {
		return hllPromote(b, index, count)
	}
	// Step 1: find the opcode covering index.
	end := len(b)
	first, span, p, prev := 0, 0, hllHdrSize, -1
	for p < end {
		oplen := 1
		op := b[p]
		switch {
		case hllIsZero(op):
			span = hllZeroLen(op)
		case hllIsVal(op):
			span = hllValLen(op)
		default:
			span = hllXZeroLen(b, p)
			oplen = 2
		}
		if index <= first+span-1 {
			break
		}
		prev = p
		p += oplen
		first += span
	}
	if span == 0 || p >= end {
		return b, false, false
	}
	op := b[p]
	next := p + 1
	if hllIsXZero(op) {
		next = p + 2
	}
	if next >= end {
		next = -1
	}
	isZero, isXZero, isVal := hllIsZero(op), hllIsXZero(op), hllIsVal(op)
	var runlen int
	switch {
	case isZero:
		runlen = hllZeroLen(op)
	case isXZero:
		runlen = hllXZeroLen(b, p)
	default:
		runlen = hllValLen(op)
	}
	own := func() {
		if !owned {
			b = append(make([]byte, 0, len(b)+8), b...)
			owned = true
		}
	}
	// Step 2: the easy in-place cases.
	if isVal {
		if hllValValue(op) >= int(count) {
			return b, false, true
		}
		if runlen == 1 {
			own()
			b[p] = hllValOp(int(count), 1)
			return hllSparseMergeAdjacent(b, prev), true, true
		}
	}
	if isZero && runlen == 1 {
		own()
		b[p] = hllValOp(int(count), 1)
		return hllSparseMergeAdjacent(b, prev), true, true
	}
	// General case: split the opcode into up to three.
	var seq [5]byte
	n := 0
	last := first + span - 1
	if isZero || isXZero {
		if index != first {
			if l := index - first; l > hllSparseZeroMaxLen {
				seq[n], seq[n+1] = hllXZeroOps(l)
				n += 2
			} else {
				seq[n] = hllZeroOp(l)
				n++
			}
		}
		seq[n] = hllValOp(int(count), 1)
		n++
		if index != last {
			if l := last - index; l > hllSparseZeroMaxLen {
				seq[n], seq[n+1] = hllXZeroOps(l)
				n += 2
			} else {
				seq[n] = hllZeroOp(l)
				n++
			}
		}
	} else {
		cur := hllValValue(op)
		if index != first {
			seq[n] = hllValOp(cur, index-first)
			n++
		}
		seq[n] = hllValOp(int(count), 1)
		n++
		if index != last {
			seq[n] = hllValOp(cur, last-index)
			n++
		}
	}
	// Step 3: replace the old opcode with the sequence.
	oldlen := 1
	if isXZero {
		oldlen = 2
	}
	delta := n - oldlen
	if delta > 0 && end+delta > hllSparseMaxLen {
		return hllPromote(b, index, count)
	}
	own()
	newLen := end + delta
	if next >= 0 {
		if delta > 0 {
			b = append(b, make([]byte, delta)...)
		}
		copy(b[next+delta:], b[next:end])
		b = b[:newLen]
	} else {
		if ext := max(newLen, p+n); ext > len(b) {
			b = append(b, make([]byte, ext-len(b))...)
		}
	}
	copy(b[p:], seq[:n])
	b = b[:newLen]
	return hllSparseMergeAdjacent(b, prev), true, true
}

// hllSparseMergeAdjacent is step 4 of hllSparseSet: merge adjacent VAL
// opcodes of equal value scanning at most 5 opcodes from prev, then mark
// the cached cardinality stale. b is owned.
func hllSparseMergeAdjacent(b []byte, prev int) []byte {
	p := hllHdrSize
	if prev >= 0 {
		p = prev
	}
	end := len(b)
	for scan := 5; p < end && scan > 0; {
		scan--
		op := b[p]
		if hllIsXZero(op) {
			p += 2
			continue
		} else if hllIsZero(op) {
			p++
			continue
		}
		if p+1 < end && hllIsVal(b[p+1]) {
			v1, v2 := hllValValue(op), hllValValue(b[p+1])
			if v1 == v2 {
				if l := hllValLen(op) + hllValLen(b[p+1]); l <= hllSparseValMaxLen {
					b[p+1] = hllValOp(v1, l)
					copy(b[p:], b[p+1:end])
					end--
					b = b[:end]
					continue
				}
			}
		}
		p++
	}
	hllInvalidate(b)
	return b
}

// hllPromote converts to dense and sets the register there.
func hllPromote(b []byte, index int, count uint8) ([]byte, bool, bool) {
	d, ok := hllSparseToDense(b)
	if !ok {
		return b, false, false
	}
	hllDenseSet(d[hllHdrSize:], index, count)
	return d, true, true
}

// hllSet raises register index to count in either encoding; see
// hllSparseSet for owned and the results.
func hllSet(b []byte, owned bool, index int, count uint8) ([]byte, bool, bool) {
	switch b[4] {
	case hllDense:
		if count <= hllDenseGet(b[hllHdrSize:], index) {
			return b, false, true
		}
		if !owned {
			b = clone(b)
		}
		hllDenseSetReg(b[hllHdrSize:], index, count)
		return b, true, true
	case hllSparse:
		return hllSparseSet(b, owned, index, count)
	}
	return b, false, false
}

// hllHisto adds the histogram of register values of a valid-looking HLL
// value to h; ok is false for a corrupted sparse value.
func hllHisto(b []byte, h *[64]int) (ok bool) {
	if b[4] == hllDense {
		// 4 registers in every 3 bytes.
		regs := b[hllHdrSize:hllDenseSize]
		for i := 0; i+3 <= len(regs); i += 3 {
			r0, r1, r2 := regs[i], regs[i+1], regs[i+2]
			h[r0&63]++
			h[(r0>>6|r1<<2)&63]++
			h[(r1>>4|r2<<4)&63]++
			h[r2>>2]++
		}
		return true
	}
	idx := 0
	for p := hllHdrSize; p < len(b); {
		op := b[p]
		var n int
		switch {
		case hllIsZero(op):
			n = hllZeroLen(op)
			if idx+n > hllRegisters {
				return false
			}
			h[0] += n
			p++
		case hllIsXZero(op):
			n = hllXZeroLen(b, p)
			if idx+n > hllRegisters {
				return false
			}
			h[0] += n
			p += 2
		default:
			n = hllValLen(op)
			if idx+n > hllRegisters {
				return false
			}
			h[hllValValue(op)] += n
			p++
		}
		idx += n
	}
	return idx == hllRegisters
}

// hllSigma and hllTau are the helper functions of Otmar Ertl's "New
// cardinality estimation algorithms for HyperLogLog sketches"
// (arXiv:1702.01284) as Redis computes them. The explicit float64
// conversions keep Go from fusing multiply-adds, so every rounding is the
// one Redis's C performs on amd64.
func hllSigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x = float64(x * x)
		zPrime := z
		z = z + float64(x*y)
		y += y
		if zPrime == z {
			return z
		}
	}
}

func hllTau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		zPrime := z
		y *= 0.5
		d := 1 - x
		z = z - float64(float64(d*d)*y)
		if zPrime == z {
			return z / 3
		}
	}
}

// hllEstimate is Redis's hllCount from a register histogram.
func hllEstimate(h *[64]int) uint64 {
	const m = float64(hllRegisters)
	z := float64(m * hllTau((m-float64(h[hllQ+1]))/m))
	for j := hllQ; j >= 1; j-- {
		z += float64(h[j])
		z *= 0.5
	}
	z = z + float64(m*hllSigma(float64(h[0])/m))
	e := float64(float64(hllAlphaInf*m)*m) / z
	return uint64(math.Round(e))
}

// hllCard returns the cardinality of one HLL value: the cache if valid,
// else the estimate; ok is false for a corrupted sparse value.
func hllCard(b []byte) (uint64, bool) {
	if hllCacheValid(b) {
		return binary.LittleEndian.Uint64(b[8:16]), true
	}
	var h [64]int
	if !hllHisto(b, &h) {
		return 0, false
	}
	return hllEstimate(&h), true
}

// hllMergeInto raises max[i] to each register of b; ok is false for a
// corrupted sparse value.
func hllMergeInto(max *[hllRegisters]uint8, b []byte) bool {
	if b[4] == hllDense {
		regs := b[hllHdrSize:]
		for i := 0; i < hllRegisters; i++ {
			if v := hllDenseGet(regs, i); v > max[i] {
				max[i] = v
			}
		}
		return true
	}
	i := 0
	for p := hllHdrSize; p < len(b); {
		op := b[p]
		switch {
		case hllIsZero(op):
			n := hllZeroLen(op)
			if i+n > hllRegisters {
				return false
			}
			i += n
			p++
		case hllIsXZero(op):
			n := hllXZeroLen(b, p)
			if i+n > hllRegisters {
				return false
			}
			i += n
			p += 2
		default:
			n, v := hllValLen(op), uint8(hllValValue(op))
			if i+n > hllRegisters {
				return false
			}
			for ; n > 0; n-- {
				if v > max[i] {
					max[i] = v
				}
				i++
			}
			p++
		}
	}
	return i == hllRegisters
}

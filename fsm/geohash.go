package fsm

import (
	"math"
	"strconv"
)

// Redis's geohash (src/geohash.c, geohash_helper.c): a position is a
// 52-bit interleaving of 26 bits of latitude (even bits) and 26 bits of
// longitude (odd bits) over the Web Mercator ranges, stored as the score
// of a sorted set member. Every formula below keeps Redis's operation
// order so that scores, distances and search areas come out bit for bit
// the same; explicit float64 conversions stop the compiler from fusing a
// multiply and an add (Go may do so on some architectures, C here does not).

const (
	geoLatMin  = -85.05112878
	geoLatMax  = 85.05112878
	geoLongMin = -180.0
	geoLongMax = 180.0
	geoStepMax = 26 // 26*2 = 52 bits

	geoEarthRadius = 6372797.560856 // meters
	geoMercatorMax = 20037726.37
)

// geoDR is C's D_R, M_PI/180.0 computed in double precision.
var geoDR = func() float64 { pi := math.Pi; return pi / 180.0 }()

func geoDegRad(ang float64) float64 { return ang * geoDR }
func geoRadDeg(ang float64) float64 { return ang / geoDR }

type geoRange struct{ min, max float64 }

var (
	geoLongRange = geoRange{geoLongMin, geoLongMax}
	geoLatRange  = geoRange{geoLatMin, geoLatMax}
)

// geoBits is a geohash of step*2 bits (GeoHashBits).
type geoBits struct {
	bits uint64
	step uint8
}

func (h geoBits) isZero() bool { return h.bits == 0 && h.step == 0 }

// geoArea is the cell a hash stands for (GeoHashArea).
type geoArea struct {
	hash      geoBits
	long, lat geoRange
}

func geoInterleave(xlo, ylo uint32) uint64 {
	b := [...]uint64{0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F,
		0x00FF00FF00FF00FF, 0x0000FFFF0000FFFF}
	s := [...]uint{1, 2, 4, 8, 16}
	x, y := uint64(xlo), uint64(ylo)
	for i := 4; i >= 0; i-- {
		x = (x | (x << s[i])) & b[i]
		y = (y | (y << s[i])) & b[i]
	}
	return x | (y << 1)
}

func geoDeinterleave(v uint64) uint64 {
	b := [...]uint64{0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F,
		0x00FF00FF00FF00FF, 0x0000FFFF0000FFFF, 0x00000000FFFFFFFF}
	s := [...]uint{0, 1, 2, 4, 8, 16}
	x, y := v, v>>1
	for i := range 6 {
		x = (x | (x >> s[i])) & b[i]
		y = (y | (y >> s[i])) & b[i]
	}
	return x | (y << 32)
}

// geoEncode is geohashEncode; ok is false outside the ranges.
func geoEncode(longR, latR geoRange, lon, lat float64, step uint8) (geoBits, bool) {
	if lon > geoLongMax || lon < geoLongMin || lat > geoLatMax || lat < geoLatMin {
		return geoBits{}, false
	}
	if lat < latR.min || lat > latR.max || lon < longR.min || lon > longR.max {
		return geoBits{step: step}, false
	}
	latOff := (lat - latR.min) / (latR.max - latR.min)
	longOff := (lon - longR.min) / (longR.max - longR.min)
	latOff *= float64(uint64(1) << step)
	longOff *= float64(uint64(1) << step)
	return geoBits{bits: geoInterleave(cUint32(latOff), cUint32(longOff)), step: step}, true
}

// cUint32 converts like C's (uint32_t) of a double in [0, 2^32].
func cUint32(f float64) uint32 { return uint32(int64(f)) }

// geoDecode is geohashDecode.
func geoDecode(longR, latR geoRange, h geoBits) (geoArea, bool) {
	if h.isZero() {
		return geoArea{}, false
	}
	sep := geoDeinterleave(h.bits)
	latScale := latR.max - latR.min
	longScale := longR.max - longR.min
	ilato := uint32(sep)
	ilono := uint32(sep >> 32)
	div := float64(uint64(1) << h.step)
	return geoArea{
		hash: h,
		lat: geoRange{
			latR.min + float64((float64(ilato)*1.0/div)*latScale),
			latR.min + float64((float64(ilato+1)*1.0/div)*latScale),
		},
		long: geoRange{
			longR.min + float64((float64(ilono)*1.0/div)*longScale),
			longR.min + float64((float64(ilono+1)*1.0/div)*longScale),
		},
	}, true
}

// cScoreBits converts a score like x86-64 C's (uint64_t) of a double
// (what Redis's decodeGeohash does with any score, geo or not): below 2^63
// a signed truncation (NaN and values below -2^63 give 1<<63), else the
// truncation of f-2^63 with the top bit flipped (0 for f >= 2^64).
func cScoreBits(f float64) uint64 {
	const two63 = 9223372036854775808.0
	const indefinite = uint64(1) << 63
	if !(f >= two63) {
		if f != f || f < -two63 {
			return indefinite
		}
		return uint64(int64(f))
	}
	g := f - two63
	if g >= two63 {
		return 0 // the conversion gives the indefinite value, XORed away below
	}
	return uint64(int64(g)) ^ indefinite
}

// geoDecodeScore is decodeGeohash: the cell centre of a 52-bit score.
func geoDecodeScore(score float64) (lon, lat float64, ok bool) {
	a, ok := geoDecode(geoLongRange, geoLatRange, geoBits{bits: cScoreBits(score), step: geoStepMax})
	if !ok {
		return 0, 0, false
	}
	// geohashDecodeAreaToLongLat clamps the centre to the valid ranges
	// (a cell on the edge, or a score that no GEOADD produced).
	lon = min(max((a.long.min+a.long.max)/2, geoLongMin), geoLongMax)
	lat = min(max((a.lat.min+a.lat.max)/2, geoLatMin), geoLatMax)
	return lon, lat, true
}

// geoEncodeScore is the score GEOADD stores for a position.
func geoEncodeScore(lon, lat float64) uint64 {
	h, _ := geoEncode(geoLongRange, geoLatRange, lon, lat, geoStepMax)
	return geoAlign52(h)
}

func geoAlign52(h geoBits) uint64 { return h.bits << (52 - uint(h.step)*2) }

func geoMoveX(h *geoBits, d int) {
	if d == 0 {
		return
	}
	x := h.bits & 0xaaaaaaaaaaaaaaaa
	y := h.bits & 0x5555555555555555
	zz := uint64(0x5555555555555555) >> (64 - uint(h.step)*2)
	if d > 0 {
		x = x + (zz + 1)
	} else {
		x = x | zz
		x = x - (zz + 1)
	}
	x &= uint64(0xaaaaaaaaaaaaaaaa) >> (64 - uint(h.step)*2)
	h.bits = x | y
}

func geoMoveY(h *geoBits, d int) {
	if d == 0 {
		return
	}
	x := h.bits & 0xaaaaaaaaaaaaaaaa
	y := h.bits & 0x5555555555555555
	zz := uint64(0xaaaaaaaaaaaaaaaa) >> (64 - uint(h.step)*2)
	if d > 0 {
		y = y + (zz + 1)
	} else {
		y = y | zz
		y = y - (zz + 1)
	}
	y &= uint64(0x5555555555555555) >> (64 - uint(h.step)*2)
	h.bits = x | y
}

// geoNeighbors are the 8 cells around one, in Redis's GeoHashNeighbors.
type geoNeighbors struct {
	north, east, west, south, northEast, southEast, northWest, southWest geoBits
}

func geoNeighborsOf(h geoBits) geoNeighbors {
	mv := func(dx, dy int) geoBits {
		n := h
		geoMoveX(&n, dx)
		geoMoveY(&n, dy)
		return n
	}
	return geoNeighbors{
		east: mv(1, 0), west: mv(-1, 0), south: mv(0, -1), north: mv(0, 1),
		northWest: mv(-1, 1), northEast: mv(1, 1), southEast: mv(1, -1), southWest: mv(-1, -1),
	}
}

// geoShape is GeoShape: a circle (radius) or an axis-aligned box around
// a centre, in the unit given by conversion (meters per unit).
type geoShape struct {
	box           bool
	lon, lat      float64
	conversion    float64
	radius        float64
	width, height float64
	bounds        [4]float64 // min lon, min lat, max lon, max lat
}

func geoEstimateSteps(rangeMeters, lat float64) uint8 {
	if rangeMeters == 0 {
		return 26
	}
	step := 1
	for rangeMeters < geoMercatorMax {
		rangeMeters *= 2
		step++
	}
	step -= 2
	if lat > 66 || lat < -66 {
		step--
		if lat > 80 || lat < -80 {
			step--
		}
	}
	step = max(step, 1)
	step = min(step, 26)
	return uint8(step)
}

// boundingBox is geohashBoundingBox.
func (s *geoShape) boundingBox() {
	var height, width float64
	if s.box {
		height = s.conversion * (s.height / 2)
		width = s.conversion * (s.width / 2)
	} else {
		height = s.conversion * s.radius
		width = s.conversion * s.radius
	}
	latDelta := geoRadDeg(height / geoEarthRadius)
	longDeltaTop := geoRadDeg(width / geoEarthRadius / geoCos(geoDegRad(s.lat+latDelta)))
	longDeltaBottom := geoRadDeg(width / geoEarthRadius / geoCos(geoDegRad(s.lat-latDelta)))
	if s.lat < 0 {
		s.bounds[0] = s.lon - longDeltaBottom
		s.bounds[2] = s.lon + longDeltaBottom
	} else {
		s.bounds[0] = s.lon - longDeltaTop
		s.bounds[2] = s.lon + longDeltaTop
	}
	s.bounds[1] = s.lat - latDelta
	s.bounds[3] = s.lat + latDelta
}

// geoSearchAreas is geohashCalculateAreasByShapeWGS84: the centre cell and
// its neighbours (zeroed when useless), in membersOfAllNeighbors' order.
func geoSearchAreas(s *geoShape) [9]geoBits {
	s.boundingBox()
	minLon, minLat, maxLon, maxLat := s.bounds[0], s.bounds[1], s.bounds[2], s.bounds[3]
	var radiusMeters float64
	if s.box {
		radiusMeters = math.Sqrt(float64((s.width/2)*(s.width/2)) + float64((s.height/2)*(s.height/2)))
	} else {
		radiusMeters = s.radius
	}
	radiusMeters *= s.conversion
	steps := geoEstimateSteps(radiusMeters, s.lat)
	hash, _ := geoEncode(geoLongRange, geoLatRange, s.lon, s.lat, steps)
	nb := geoNeighborsOf(hash)
	area, _ := geoDecode(geoLongRange, geoLatRange, hash)

	decrease := false
	north, _ := geoDecode(geoLongRange, geoLatRange, nb.north)
	south, _ := geoDecode(geoLongRange, geoLatRange, nb.south)
	east, _ := geoDecode(geoLongRange, geoLatRange, nb.east)
	west, _ := geoDecode(geoLongRange, geoLatRange, nb.west)
	if north.lat.max < maxLat || south.lat.min > minLat || east.long.max < maxLon || west.long.min > minLon {
		decrease = true
	}
	if steps > 1 && decrease {
		steps--
		hash, _ = geoEncode(geoLongRange, geoLatRange, s.lon, s.lat, steps)
		nb = geoNeighborsOf(hash)
		area, _ = geoDecode(geoLongRange, geoLatRange, hash)
	}
	if steps >= 2 {
		if area.lat.min < minLat {
			nb.south, nb.southWest, nb.southEast = geoBits{}, geoBits{}, geoBits{}
		}
		if area.lat.max > maxLat {
			nb.north, nb.northEast, nb.northWest = geoBits{}, geoBits{}, geoBits{}
		}
		if area.long.min < minLon {
			nb.west, nb.southWest, nb.northWest = geoBits{}, geoBits{}, geoBits{}
		}
		if area.long.max > maxLon {
			nb.east, nb.southEast, nb.northEast = geoBits{}, geoBits{}, geoBits{}
		}
	}
	return [9]geoBits{hash, nb.north, nb.south, nb.east, nb.west,
		nb.northEast, nb.northWest, nb.southEast, nb.southWest}
}

// geoLatDistance is geohashGetLatDistance.
func geoLatDistance(lat1, lat2 float64) float64 {
	return geoEarthRadius * math.Abs(geoDegRad(lat2)-geoDegRad(lat1))
}

// geoDistance is geohashGetDistance (haversine).
func geoDistance(lon1, lat1, lon2, lat2 float64) float64 {
	lon1r := geoDegRad(lon1)
	lon2r := geoDegRad(lon2)
	v := geoSin((lon2r - lon1r) / 2)
	if v == 0 {
		return geoLatDistance(lat1, lat2)
	}
	lat1r := geoDegRad(lat1)
	lat2r := geoDegRad(lat2)
	u := geoSin((lat2r - lat1r) / 2)
	a := float64(u*u) + float64(float64(float64(geoCos(lat1r)*geoCos(lat2r))*v)*v)
	return 2.0 * geoEarthRadius * geoAsin(math.Sqrt(a))
}

// within is geoWithinShape for a decoded point: its distance from the
// centre (meters) and whether it is inside.
func (s *geoShape) within(lon, lat float64) (float64, bool) {
	if !s.box {
		d := geoDistance(s.lon, s.lat, lon, lat)
		return d, d <= s.radius*s.conversion
	}
	widthM, heightM := s.width*s.conversion, s.height*s.conversion
	if geoLatDistance(lat, s.lat) > heightM/2 {
		return 0, false
	}
	if geoDistance(lon, lat, s.lon, lat) > widthM/2 {
		return 0, false
	}
	return geoDistance(s.lon, s.lat, lon, lat), true
}

// geoFormatDistance is addReplyDoubleDistance (fixedpoint_d2string with 4
// digits: the value times 10^4 rounded to nearest-even as llrint does).
func geoFormatDistance(d float64) []byte {
	if d == 0 {
		return []byte("0.0000")
	}
	v := math.RoundToEven(d * 10000.0)
	neg := v < 0
	if neg {
		v = -v
	}
	u := uint64(v)
	out := make([]byte, 0, 24)
	if neg {
		out = append(out, '-')
	}
	out = strconv.AppendUint(out, u/10000, 10)
	frac := u % 10000
	out = append(out, '.', byte('0'+frac/1000), byte('0'+frac/100%10), byte('0'+frac/10%10), byte('0'+frac%10))
	return out
}

// geoFormatCoord is ld2string(LD_STR_HUMAN): "%.17Lf" of the double with
// the trailing zeros (and a trailing dot) removed, "-0" as "0".
func geoFormatCoord(f float64) []byte {
	b := strconv.AppendFloat(nil, f, 'f', 17, 64)
	for len(b) > 0 && b[len(b)-1] == '0' {
		b = b[:len(b)-1]
	}
	b = trimDot(b)
	if string(b) == "-0" {
		return []byte("0")
	}
	return b
}

func trimDot(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '.' {
		return b[:len(b)-1]
	}
	return b
}

// geoHashString is GEOHASH's 11-character standard geohash of a score:
// the cell centre re-encoded over the standard ranges (latitude ±90).
func geoHashString(score float64) []byte {
	const alphabet = "0123456789bcdefghjkmnpqrstuvwxyz"
	lon, lat, _ := geoDecodeScore(score)
	h, _ := geoEncode(geoRange{-180, 180}, geoRange{-90, 90}, lon, lat, 26)
	buf := make([]byte, 11)
	for i := range 11 {
		idx := 0
		if i < 10 {
			idx = int((h.bits >> (52 - uint(i+1)*5)) & 0x1f)
		}
		buf[i] = alphabet[idx]
	}
	return buf
}

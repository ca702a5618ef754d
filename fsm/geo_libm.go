package fsm

import "math"

// sin, cos and asin as Redis gets them from glibc: (almost always)
// correctly rounded. Go's math.Sin/Cos/Asin are off by one ulp for a good
// share of inputs, which would change the stored distances of
// GEOSEARCHSTORE ... STOREDIST and, rarely, a rounded WITHDIST or whether a
// point on a search's edge is in. These compute in double-double
// arithmetic (about 106 bits) and round once. Inputs here are small
// (|x| <= about 2*pi), as geo's formulas give.

type dd struct{ hi, lo float64 }

func ddTwoSum(a, b float64) dd {
	s := a + b
	bb := s - a
	return dd{s, (a - (s - bb)) + (b - bb)}
}

func ddQuick(a, b float64) dd {
	s := a + b
	return dd{s, b - (s - a)}
}

func ddAdd(a, b dd) dd {
	s := ddTwoSum(a.hi, b.hi)
	return ddQuick(s.hi, s.lo+a.lo+b.lo)
}

func ddMul(a, b dd) dd {
	p := a.hi * b.hi
	e := math.FMA(a.hi, b.hi, -p)
	return ddQuick(p, e+(a.hi*b.lo+a.lo*b.hi))
}

func ddDivF(a dd, b float64) dd {
	q1 := a.hi / b
	p := q1 * b
	e := math.FMA(q1, b, -p)
	q2 := (((a.hi - p) - e) + a.lo) / b
	return ddQuick(q1, q2)
}

func ddNeg(a dd) dd { return dd{-a.hi, -a.lo} }

// pi/2 in three parts.
const (
	ddPio2a = 1.5707963267948966
	ddPio2b = 6.123233995736766e-17
	ddPio2c = -1.4973849048591698e-33
)

// ddReduce returns r and k with x = k*pi/2 + r, |r| <= ~pi/4.
func ddReduce(x float64) (dd, int) {
	k := math.Round(x / ddPio2a)
	pa := k * ddPio2a
	r := ddAdd(dd{x, 0}, dd{-pa, -math.FMA(k, ddPio2a, -pa)})
	pb := k * ddPio2b
	r = ddAdd(r, dd{-pb, -math.FMA(k, ddPio2b, -pb)})
	r = ddAdd(r, dd{-k * ddPio2c, 0})
	return r, int(k) & 3
}

// ddSinCosSeries sums the Taylor series of sin (odd) or cos (even) at r.
func ddSinCosSeries(r dd, odd bool) dd {
	r2 := ddMul(r, r)
	term, sum := dd{1, 0}, dd{1, 0}
	n := 0.0
	if odd {
		term, sum, n = r, r, 1
	}
	for i := 0; i < 40; i++ {
		term = ddDivF(ddMul(term, r2), -(n+1)*(n+2))
		n += 2
		sum = ddAdd(sum, term)
		if math.Abs(term.hi) < 1e-36*math.Max(math.Abs(sum.hi), 1e-300) {
			break
		}
	}
	return sum
}

func ddSin(x float64) dd {
	r, k := ddReduce(x)
	switch k {
	case 0:
		return ddSinCosSeries(r, true)
	case 1:
		return ddSinCosSeries(r, false)
	case 2:
		return ddNeg(ddSinCosSeries(r, true))
	}
	return ddNeg(ddSinCosSeries(r, false))
}

func ddCos(x float64) dd {
	r, k := ddReduce(x)
	switch k {
	case 0:
		return ddSinCosSeries(r, false)
	case 1:
		return ddNeg(ddSinCosSeries(r, true))
	case 2:
		return ddNeg(ddSinCosSeries(r, false))
	}
	return ddSinCosSeries(r, true)
}

func geoSin(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > 1e3 {
		return math.Sin(x)
	}
	s := ddSin(x)
	return s.hi + s.lo
}

func geoCos(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > 1e3 {
		return math.Cos(x)
	}
	c := ddCos(x)
	return c.hi + c.lo
}

// geoAsin refines math.Asin with one Newton step in double-double.
func geoAsin(y float64) float64 {
	if !(y > -1 && y < 1) || y == 0 {
		return math.Asin(y)
	}
	z := math.Asin(y)
	s, c := ddSin(z), ddCos(z)
	diff := ddAdd(dd{y, 0}, ddNeg(s))
	delta := (diff.hi + diff.lo) / (c.hi + c.lo)
	return z + delta
}

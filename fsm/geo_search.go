package fsm

import (
	"sort"

	"github.com/slotraft/slotraft/store"
)

// The search side of geo.c: collecting the members of the 9 cells of a
// search, then sorting them as Redis does (qsort, or pqsort when COUNT
// keeps fewer than were found).

// geoPoint is one member found by a search (geoPoint in geo.h).
type geoPoint struct {
	lon, lat, dist, score float64
	member                string
}

// geoPointsInRange is geoGetPointsInRange: the members whose score is in
// [min, max) and that lie inside the shape, appended to out; it stops once
// out holds limit points (limit 0: no limit).
func geoPointsInRange(z *store.ZSet, min, max uint64, s *geoShape, out []geoPoint, limit int) []geoPoint {
	lo, hi := float64(min), float64(max)
	if !(lo < hi) {
		return out
	}
	z.Ascend(z.CountScoreBelow(lo, false), func(member string, score float64) bool {
		if !(score < hi) {
			return false
		}
		if lon, lat, ok := geoDecodeScore(score); ok {
			if d, in := s.within(lon, lat); in {
				out = append(out, geoPoint{lon: lon, lat: lat, dist: d, score: score, member: member})
			}
		}
		return !(len(out) > 0 && limit > 0 && len(out) >= limit)
	})
	return out
}

// geoMembersOfAllNeighbors is membersOfAllNeighbors: the centre cell then
// its neighbours, skipping zeroed cells and a cell equal to the one
// processed just before (but never comparing with cell 0, as Redis).
func geoMembersOfAllNeighbors(z *store.ZSet, cells [9]geoBits, s *geoShape, limit int) []geoPoint {
	var out []geoPoint
	last := 0
	for i, h := range cells {
		if h.isZero() {
			continue
		}
		if last != 0 && h == cells[last] {
			continue
		}
		if len(out) > 0 && limit > 0 && len(out) >= limit {
			break
		}
		min := geoAlign52(h)
		h.bits++
		max := geoAlign52(h)
		out = geoPointsInRange(z, min, max, s, out, limit)
		last = i
	}
	return out
}

func geoCmpAsc(a, b *geoPoint) int {
	switch {
	case a.dist > b.dist:
		return 1
	case a.dist == b.dist:
		return 0
	}
	return -1
}

func geoCmpDesc(a, b *geoPoint) int { return -geoCmpAsc(a, b) }

// geoSort orders pts by distance (desc: farthest first). When only the
// first n are returned, it is Redis's pqsort (a partial Bentley-McIlroy
// quicksort, not stable), otherwise glibc's qsort, which is a stable merge
// sort: ties keep their order either way as on Redis.
func geoSort(pts []geoPoint, desc bool, n int) {
	cmp := geoCmpAsc
	if desc {
		cmp = geoCmpDesc
	}
	if n >= len(pts) {
		sort.SliceStable(pts, func(i, j int) bool { return cmp(&pts[i], &pts[j]) < 0 })
		return
	}
	geoPqsort(pts, cmp, 0, n-1)
}

func geoMed3(a []geoPoint, i, j, k int, cmp func(a, b *geoPoint) int) int {
	if cmp(&a[i], &a[j]) < 0 {
		if cmp(&a[j], &a[k]) < 0 {
			return j
		}
		if cmp(&a[i], &a[k]) < 0 {
			return k
		}
		return i
	}
	if cmp(&a[j], &a[k]) > 0 {
		return j
	}
	if cmp(&a[i], &a[k]) < 0 {
		return i
	}
	return k
}

func geoVecswap(a []geoPoint, i, j, n int) {
	for ; n > 0; n-- {
		a[i], a[j] = a[j], a[i]
		i++
		j++
	}
}

// geoPqsort is Redis's pqsort (pqsort.c), in element indexes: only the
// parts overlapping positions [lrange, rrange] get sorted.
func geoPqsort(a []geoPoint, cmp func(a, b *geoPoint) int, lrange, rrange int) {
	geoPqsortRange(a, 0, len(a), cmp, lrange, rrange)
}

func geoPqsortRange(a []geoPoint, base, n int, cmp func(a, b *geoPoint) int, lrange, rrange int) {
	swap := func(i, j int) { a[i], a[j] = a[j], a[i] }
	insertion := func() {
		for pm := base + 1; pm < base+n; pm++ {
			for pl := pm; pl > base && cmp(&a[pl-1], &a[pl]) > 0; pl-- {
				swap(pl, pl-1)
			}
		}
	}
	for {
		swapCnt := false
		if n < 7 {
			insertion()
			return
		}
		pm := base + n/2
		if n > 7 {
			pl := base
			pn := base + n - 1
			if n > 40 {
				d := n / 8
				pl = geoMed3(a, pl, pl+d, pl+2*d, cmp)
				pm = geoMed3(a, pm-d, pm, pm+d, cmp)
				pn = geoMed3(a, pn-2*d, pn-d, pn, cmp)
			}
			pm = geoMed3(a, pl, pm, pn, cmp)
		}
		swap(base, pm)
		pa, pb := base+1, base+1
		pc, pd := base+n-1, base+n-1
		for {
			for pb <= pc {
				r := cmp(&a[pb], &a[base])
				if r > 0 {
					break
				}
				if r == 0 {
					swapCnt = true
					swap(pa, pb)
					pa++
				}
				pb++
			}
			for pb <= pc {
				r := cmp(&a[pc], &a[base])
				if r < 0 {
					break
				}
				if r == 0 {
					swapCnt = true
					swap(pc, pd)
					pd--
				}
				pc--
			}
			if pb > pc {
				break
			}
			swap(pb, pc)
			swapCnt = true
			pb++
			pc--
		}
		if !swapCnt {
			insertion()
			return
		}
		pn := base + n
		r := min(pa-base, pb-pa)
		geoVecswap(a, base, pb-r, r)
		r = min(pd-pc, pn-pd-1)
		geoVecswap(a, pb, pn-r, r)
		// A part [s, s+cnt) is sorted only if it overlaps [lrange, rrange].
		overlaps := func(s, cnt int) bool { return !(rrange < s || lrange >= s+cnt) }
		if r = pb - pa; r > 1 && overlaps(base, r) {
			geoPqsortRange(a, base, r, cmp, lrange, rrange)
		}
		if r = pd - pc; r > 1 {
			base, n = pn-r, r
			if overlaps(base, n) {
				continue
			}
		}
		return
	}
}

package fsm

import (
	"math"
	"strconv"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// Geo commands (Redis's geo.c): positions are members of a sorted set
// whose score is the 52-bit geohash of geohash.go; GEOADD is ZADD with
// encoded scores, searches walk the 9 cells geoSearchAreas picks.

var geoCmd = commandsOf("geo")

var (
	aclGeoRead  = []string{"read", "geo", "slow"}
	aclGeoWrite = []string{"write", "geo", "slow"}
)

const (
	geoRadiusComplexity = "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index."
	geoSearchComplexity = "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape"
)

// Search variants (georadiusGeneric's flags).
const (
	geoRadiusCoords = 1 << iota // GEORADIUS: around coordinates
	geoRadiusMember             // GEORADIUSBYMEMBER: around a member
	geoNoStore                  // the _RO variants: no STORE/STOREDIST
	geoSearchFlag               // GEOSEARCH syntax
	geoSearchStore              // GEOSEARCHSTORE
)

func init() {
	register(
		geoCmd("geoadd", -5, fW|fD, 1, 1, 1, aclGeoWrite, "3.2.0",
			"Adds one or more members to a geospatial index. The key is created if it doesn't exist.",
			"O(log(N)) for each item added, where N is the number of elements in the sorted set.", geoaddCmd),
		geoCmd("geodist", -4, fR, 1, 1, 1, aclGeoRead, "3.2.0",
			"Returns the distance between two members of a geospatial index.", "O(1)", geodistCmd),
		geoCmd("geohash", -2, fR, 1, 1, 1, aclGeoRead, "3.2.0",
			"Returns members from a geospatial index as geohash strings.",
			"O(1) for each member requested.", geohashCmd),
		geoCmd("geopos", -2, fR, 1, 1, 1, aclGeoRead, "3.2.0",
			"Returns the longitude and latitude of members from a geospatial index.",
			"O(1) for each member requested.", geoposCmd),
		geoCmd("georadius", -6, fW|fD|resp.FlagMovableKeys, 1, 1, 1, aclGeoWrite, "3.2.0",
			"Queries a geospatial index for members within a distance from a coordinate, optionally stores the result.",
			geoRadiusComplexity, geoSearchCmd(1, geoRadiusCoords)).storing(6),
		geoCmd("georadiusbymember", -5, fW|fD|resp.FlagMovableKeys, 1, 1, 1, aclGeoWrite, "3.2.0",
			"Queries a geospatial index for members within a distance from a member, optionally stores the result.",
			geoRadiusComplexity, geoSearchCmd(1, geoRadiusMember)).storing(5),
		geoCmd("georadius_ro", -6, fR, 1, 1, 1, aclGeoRead, "3.2.10",
			"Returns members from a geospatial index that are within a distance from a coordinate.",
			geoRadiusComplexity, geoSearchCmd(1, geoRadiusCoords|geoNoStore)),
		geoCmd("georadiusbymember_ro", -5, fR, 1, 1, 1, aclGeoRead, "3.2.10",
			"Returns members from a geospatial index that are within a distance from a member.",
			geoRadiusComplexity, geoSearchCmd(1, geoRadiusMember|geoNoStore)),
		geoCmd("geosearch", -7, fR, 1, 1, 1, aclGeoRead, "6.2.0",
			"Queries a geospatial index for members inside an area of a box or a circle.",
			geoSearchComplexity, geoSearchCmd(1, geoSearchFlag)),
		geoCmd("geosearchstore", -8, fW|fD, 1, 2, 1, aclGeoWrite, "6.2.0",
			"Queries a geospatial index for members inside an area of a box or a circle, optionally stores the result.",
			geoSearchComplexity, geoSearchCmd(2, geoSearchFlag|geoSearchStore)),
	)
	registry["geosearchstore"].Meta.KeySpecs = []resp.KeySpec{
		{Flags: []string{"OW", "update"}, Index: 1, KeyStep: 1},
		{Flags: []string{"RO", "access"}, Index: 2, KeyStep: 1},
	}
}

// storing gives GEORADIUS or GEORADIUSBYMEMBER, whose options start at
// argument start, the keys of their STORE and STOREDIST options.
func (cmd *Command) storing(start int) *Command {
	cmd.Meta.Keys = georadiusKeys
	cmd.Meta.KeySpecs = []resp.KeySpec{
		{Flags: []string{"RO", "access"}, Index: 1, KeyStep: 1},
		{Flags: []string{"OW", "update"}, Keyword: "STORE", StartFrom: start, KeyStep: 1},
		{Flags: []string{"OW", "update"}, Keyword: "STOREDIST", StartFrom: start, KeyStep: 1},
	}
	return cmd
}

// georadiusKeys is Redis's georadiusGetKeys: the source key and the key
// after the last STORE or STOREDIST (searched from argument 5).
func georadiusKeys(args [][]byte) []int {
	stored := -1
	for i := 5; i < len(args); i++ {
		if (eq(args[i], "store") || eq(args[i], "storedist")) && i+1 < len(args) {
			stored = i + 1
			i++
		}
	}
	if stored < 0 {
		return []int{1}
	}
	return []int{1, stored}
}

var (
	errGeoDecodeMember = resp.NewError("ERR could not decode requested zset member")
	errGeoUnit         = resp.NewError("ERR unsupported unit provided. please use M, KM, FT, MI")
	errGeoRadiusNum    = resp.NewError("ERR need numeric radius")
	errGeoRadiusNeg    = resp.NewError("ERR radius cannot be negative")
	errGeoWidthNum     = resp.NewError("ERR need numeric width")
	errGeoHeightNum    = resp.NewError("ERR need numeric height")
	errGeoBoxNeg       = resp.NewError("ERR height or width cannot be negative")
	errGeoCount        = resp.NewError("ERR COUNT must be > 0")
	errGeoAny          = resp.NewError("ERR the ANY argument requires COUNT argument")
)

// geoCFloat formats like C's "%f" (inf and nan as glibc prints them).
func geoCFloat(f float64) string {
	if b, ok := resp.FormatNonFinite(f); ok {
		return string(b)
	}
	return strconv.FormatFloat(f, 'f', 6, 64)
}

// geoLonLat is extractLongLatOrReply.
func geoLonLat(lonArg, latArg []byte) (lon, lat float64, err error) {
	if lon, err = resp.ParseFloat(lonArg); err != nil {
		return 0, 0, err
	}
	if lat, err = resp.ParseFloat(latArg); err != nil {
		return 0, 0, err
	}
	if lon < geoLongMin || lon > geoLongMax || lat < geoLatMin || lat > geoLatMax {
		return 0, 0, resp.Errorf("ERR invalid longitude,latitude pair %s,%s", geoCFloat(lon), geoCFloat(lat))
	}
	return lon, lat, nil
}

// geoUnit is extractUnitOrReply: meters per unit.
func geoUnit(b []byte) (float64, error) {
	switch {
	case eq(b, "m"):
		return 1, nil
	case eq(b, "km"):
		return 1000, nil
	case eq(b, "ft"):
		return 0.3048, nil
	case eq(b, "mi"):
		return 1609.34, nil
	}
	return 0, errGeoUnit
}

// geoRadiusArg is extractDistanceOrReply.
func geoRadiusArg(s *geoShape, radiusArg, unitArg []byte) error {
	r, err := resp.ParseFloat(radiusArg)
	if err != nil {
		return errGeoRadiusNum
	}
	if r < 0 {
		return errGeoRadiusNeg
	}
	s.radius = r
	conv, err := geoUnit(unitArg)
	if err != nil {
		return err
	}
	s.conversion = conv
	return nil
}

// geoBoxArg is extractBoxOrReply.
func geoBoxArg(s *geoShape, widthArg, heightArg, unitArg []byte) error {
	w, err := resp.ParseFloat(widthArg)
	if err != nil {
		return errGeoWidthNum
	}
	h, err := resp.ParseFloat(heightArg)
	if err != nil {
		return errGeoHeightNum
	}
	if h < 0 || w < 0 {
		return errGeoBoxNeg
	}
	s.width, s.height = w, h
	conv, err := geoUnit(unitArg)
	if err != nil {
		return err
	}
	s.conversion = conv
	return nil
}

// geoHumanDouble renders a coordinate as addReplyHumanLongDouble does: a
// bulk string in RESP2, a RESP3 double with the same text.
func geoHumanDouble(f float64) resp.Value {
	return resp.DoubleText(f, geoFormatCoord(f))
}

// geoaddCmd is geoaddCommand: options, then ZADD with encoded scores.
func geoaddCmd(c *Ctx, args [][]byte) resp.Value {
	xx, nx := false, false
	longIdx := 2
	for ; longIdx < len(args); longIdx++ {
		a := args[longIdx]
		switch {
		case eq(a, "nx"):
			nx = true
		case eq(a, "xx"):
			xx = true
		case eq(a, "ch"):
		default:
			goto done
		}
	}
done:
	if (len(args)-longIdx)%3 != 0 || (xx && nx) {
		return errReply(resp.ErrSyntax)
	}
	n := (len(args) - longIdx) / 3
	zargs := make([][]byte, 0, longIdx+2*n)
	zargs = append(zargs, []byte("zadd"))
	zargs = append(zargs, args[1:longIdx]...)
	for i := range n {
		at := longIdx + 3*i
		lon, lat, err := geoLonLat(args[at], args[at+1])
		if err != nil {
			return errReply(err)
		}
		score := strconv.AppendUint(nil, geoEncodeScore(lon, lat), 10)
		zargs = append(zargs, score, args[at+2])
	}
	return zaddGeneric(c, zargs, zaddFlags{})
}

func geodistCmd(c *Ctx, args [][]byte) resp.Value {
	toMeter := 1.0
	if len(args) == 5 {
		u, err := geoUnit(args[4])
		if err != nil {
			return errReply(err)
		}
		toMeter = u
	} else if len(args) > 5 {
		return errReply(resp.ErrSyntax)
	}
	z, err := c.getZSet(args[1])
	if err != nil {
		return errReply(err)
	}
	if z == nil {
		return resp.Null()
	}
	s1, ok1 := z.Score(args[2])
	s2, ok2 := z.Score(args[3])
	if !ok1 || !ok2 {
		return resp.Null()
	}
	lon1, lat1, ok1 := geoDecodeScore(s1)
	lon2, lat2, ok2 := geoDecodeScore(s2)
	if !ok1 || !ok2 {
		return resp.Null()
	}
	return resp.Bulk(geoFormatDistance(geoDistance(lon1, lat1, lon2, lat2) / toMeter))
}

func geohashCmd(c *Ctx, args [][]byte) resp.Value {
	z, err := c.getZSet(args[1])
	if err != nil {
		return errReply(err)
	}
	return memberScoresReply(z, args[2:], resp.Null(), func(score float64) resp.Value {
		return resp.Bulk(geoHashString(score))
	})
}

func geoposCmd(c *Ctx, args [][]byte) resp.Value {
	z, err := c.getZSet(args[1])
	if err != nil {
		return errReply(err)
	}
	return memberScoresReply(z, args[2:], resp.NullArray(), func(score float64) resp.Value {
		if lon, lat, ok := geoDecodeScore(score); ok {
			return resp.Array(geoHumanDouble(lon), geoHumanDouble(lat))
		}
		return resp.NullArray()
	})
}

// geoMemberPos is longLatFromMember.
func geoMemberPos(z *store.ZSet, member []byte) (lon, lat float64, ok bool) {
	score, ok := z.Score(member)
	if !ok {
		return 0, 0, false
	}
	return geoDecodeScore(score)
}

func geoSearchCmd(srcIdx int, flags int) func(*Ctx, [][]byte) resp.Value {
	return func(c *Ctx, args [][]byte) resp.Value { return c.georadius(args, srcIdx, flags) }
}

// georadius is georadiusGeneric, for every search command.
func (c *Ctx) georadius(args [][]byte, srcIdx int, flags int) resp.Value {
	var storeKey []byte
	storeDist := false
	z, err := c.getZSet(args[srcIdx])
	if err != nil {
		return errReply(err)
	}
	var s geoShape
	var base int
	switch {
	case flags&geoRadiusCoords != 0:
		base = 6
		if s.lon, s.lat, err = geoLonLat(args[2], args[3]); err != nil {
			return errReply(err)
		}
		if err := geoRadiusArg(&s, args[base-2], args[base-1]); err != nil {
			return errReply(err)
		}
	case flags&geoRadiusMember != 0 && z == nil:
		base = 5
	case flags&geoRadiusMember != 0:
		base = 5
		var ok bool
		if s.lon, s.lat, ok = geoMemberPos(z, args[2]); !ok {
			return errReply(errGeoDecodeMember)
		}
		if err := geoRadiusArg(&s, args[base-2], args[base-1]); err != nil {
			return errReply(err)
		}
	default: // GEOSEARCH, GEOSEARCHSTORE
		base = 2
		if flags&geoSearchStore != 0 {
			base = 3
			storeKey = args[1]
		}
	}

	withDist, withHash, withCoord := false, false, false
	fromMember, fromLoc, byRadius, byBox := false, false, false, false
	sortDir := 0 // 0 none, 1 asc, 2 desc
	anyOpt := false
	var count int64
	search := flags&geoSearchFlag != 0
	canStore := flags&geoNoStore == 0 && !search
	rest := args[base:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		left := len(rest) - i - 1 // arguments after this one
		switch {
		case eq(a, "withdist"):
			withDist = true
		case eq(a, "withhash"):
			withHash = true
		case eq(a, "withcoord"):
			withCoord = true
		case eq(a, "any"):
			anyOpt = true
		case eq(a, "asc"):
			sortDir = 1
		case eq(a, "desc"):
			sortDir = 2
		case eq(a, "count") && left >= 1:
			n, err := resp.ParseInt(rest[i+1])
			if err != nil {
				return errReply(err)
			}
			if n <= 0 {
				return errReply(errGeoCount)
			}
			count = n
			i++
		case eq(a, "store") && left >= 1 && canStore:
			storeKey, storeDist = rest[i+1], false
			i++
		case eq(a, "storedist") && left >= 1 && canStore:
			storeKey, storeDist = rest[i+1], true
			i++
		case eq(a, "storedist") && search && flags&geoSearchStore != 0:
			storeDist = true
		case eq(a, "frommember") && left >= 1 && search && !fromLoc:
			if z != nil {
				var ok bool
				if s.lon, s.lat, ok = geoMemberPos(z, rest[i+1]); !ok {
					return errReply(errGeoDecodeMember)
				}
			}
			fromMember = true
			i++
		case eq(a, "fromlonlat") && left >= 2 && search && !fromMember:
			if s.lon, s.lat, err = geoLonLat(rest[i+1], rest[i+2]); err != nil {
				return errReply(err)
			}
			fromLoc = true
			i += 2
		case eq(a, "byradius") && left >= 2 && search && !byBox:
			if err := geoRadiusArg(&s, rest[i+1], rest[i+2]); err != nil {
				return errReply(err)
			}
			s.box, byRadius = false, true
			i += 2
		case eq(a, "bybox") && left >= 3 && search && !byRadius:
			if err := geoBoxArg(&s, rest[i+1], rest[i+2], rest[i+3]); err != nil {
				return errReply(err)
			}
			s.box, byBox = true, true
			i += 3
		default:
			return errReply(resp.ErrSyntax)
		}
	}

	if storeKey != nil && (withDist || withHash || withCoord) {
		what := "STORE option in GEORADIUS"
		if flags&geoSearchStore != 0 {
			what = "GEOSEARCHSTORE"
		}
		return errf("ERR %s is not compatible with WITHDIST, WITHHASH and WITHCOORD options", what)
	}
	if search && !(fromMember || fromLoc) {
		return errf("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for %s", args[0])
	}
	if search && !(byRadius || byBox) {
		return errf("ERR exactly one of BYRADIUS and BYBOX can be specified for %s", args[0])
	}
	if anyOpt && count == 0 {
		return errReply(errGeoAny)
	}
	if z == nil {
		if storeKey != nil {
			if c.del(storeKey) {
				c.notify(NotifyGeneric, "del", storeKey)
			}
			return zero
		}
		return resp.Array()
	}
	if count != 0 && sortDir == 0 && !anyOpt {
		sortDir = 1
	}

	limit := 0
	if anyOpt {
		limit = int(min(count, math.MaxInt32))
	}
	cells := geoSearchAreas(&s)
	pts := geoMembersOfAllNeighbors(z, cells, &s, limit)
	if len(pts) == 0 && storeKey == nil {
		return resp.Array()
	}
	returned := len(pts)
	if count != 0 && int64(returned) > count {
		returned = int(count)
	}
	if sortDir != 0 {
		geoSort(pts, sortDir == 2, returned)
	}
	pts = pts[:returned]

	if storeKey == nil {
		out := make([]resp.Value, len(pts))
		for i := range pts {
			p := &pts[i]
			p.dist /= s.conversion
			if !withDist && !withHash && !withCoord {
				out[i] = resp.BulkString(p.member)
				continue
			}
			item := []resp.Value{resp.BulkString(p.member)}
			if withDist {
				item = append(item, resp.Bulk(geoFormatDistance(p.dist)))
			}
			if withHash {
				item = append(item, resp.Int(int64(p.score)))
			}
			if withCoord {
				item = append(item, resp.Array(geoHumanDouble(p.lon), geoHumanDouble(p.lat)))
			}
			out[i] = resp.Array(item...)
		}
		return resp.Array(out...)
	}
	dst := store.NewZSet(nil) // given the store's limits by storeZSet
	for i := range pts {
		p := &pts[i]
		p.dist /= s.conversion
		score := p.score
		if storeDist {
			score = p.dist
		}
		dst.Add([]byte(p.member), score)
	}
	event := "georadiusstore"
	if flags&geoSearchStore != 0 {
		event = "geosearchstore"
	}
	return c.storeZSet(storeKey, dst, event)
}

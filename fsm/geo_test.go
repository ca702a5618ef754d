package fsm

import (
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"
)

// Redis's documented examples (Sicily), checked against redis-server.
const geoSicily = "GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania"

func TestGeoCommands(t *testing.T) {
	palermoCoord := `["13.36138933897018433" "38.11555639549629859"]`
	cataniaCoord := `["15.08726745843887329" "37.50266842333162032"]`
	runTable(t, map[string][]step{
		"geoadd": {
			{geoSicily, ":2"},
			{geoSicily, ":0"},
			{"GEOADD Sicily CH 13.361389 38.115556 Palermo 15 37 Catania", ":1"},
			{"GEOADD Sicily NX 13 37 Palermo 14 38 Agrigento", ":1"},
			{"GEOADD Sicily XX 13 37 Nowhere", ":0"},
			{"GEOADD Sicily XX CH 13 37 Agrigento", ":1"},
			{"GEOADD Sicily NX XX 13 37 x", "-ERR syntax error"},
			{"GEOADD Sicily 13 37 x 1", "-ERR syntax error"},
			{"GEOADD Sicily CH 13 37", "-ERR syntax error"},
			{"GEOADD Sicily CH CH CH", "-ERR syntax error"},
			{"GEOADD Sicily 200 100 x", "-ERR invalid longitude,latitude pair 200.000000,100.000000"},
			{"GEOADD Sicily 1 2 ok 180 85.06 x", "-ERR invalid longitude,latitude pair 180.000000,85.060000"},
			{"GEOADD Sicily inf 0 x", "-ERR invalid longitude,latitude pair inf,0.000000"},
			{"GEOADD Sicily abc 0 x", "-ERR value is not a valid float"},
			{"ZCARD Sicily", ":3"},
			{"ZSCORE Sicily Palermo", ",3479099956230698"},
			{"SET str x", "+OK"},
			{"GEOADD str 1 2 x", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
			{"GEOADD str 1 200 x", "-ERR invalid longitude,latitude pair 1.000000,200.000000"},
		},
		"geodist": {
			{geoSicily, ":2"},
			{"GEODIST Sicily Palermo Catania", `"166274.1516"`},
			{"GEODIST Sicily Palermo Catania km", `"166.2742"`},
			{"GEODIST Sicily Palermo Catania MI", `"103.3182"`},
			{"GEODIST Sicily Palermo Catania ft", `"545518.8700"`},
			{"GEODIST Sicily Palermo Palermo", `"0.0000"`},
			{"GEODIST Sicily Foo Bar", "nil"},
			{"GEODIST nokey Foo Bar", "nil"},
			{"GEODIST nokey Foo Bar yards", "-ERR unsupported unit provided. please use M, KM, FT, MI"},
			{"GEODIST Sicily Palermo Catania km x", "-ERR syntax error"},
		},
		"geohash-geopos": {
			{geoSicily, ":2"},
			{"GEOHASH Sicily Palermo Catania Nope", `["sqc8b49rny0" "sqdtr74hyu0" nil]`},
			{"GEOHASH nokey a", `[nil]`},
			{"GEOHASH Sicily", `[]`},
			{"GEOPOS Sicily Palermo Catania NonExisting", "[" + palermoCoord + " " + cataniaCoord + " nil]"},
			{"GEOPOS nokey a b", `[nil nil]`},
			{"GEOADD z 0 0 zero -180 -85.05112878 sw 180 85.05112878 ne", ":3"},
			{"GEOPOS z zero", `[["0.00000268220901489" "0.00000126736058093"]]`},
			{"GEOHASH z zero sw ne", `["s0000000000" "00bh0hbj200" "bp05b5048p0"]`},
		},
		"georadius": {
			{geoSicily, ":2"},
			{"GEORADIUS Sicily 15 37 200 km WITHDIST", `[["Palermo" "190.4424"] ["Catania" "56.4413"]]`},
			{"GEORADIUS Sicily 15 37 200 km WITHCOORD", `[["Palermo" ` + palermoCoord + `] ["Catania" ` + cataniaCoord + `]]`},
			{"GEORADIUS Sicily 15 37 200 km WITHDIST WITHCOORD WITHHASH ASC",
				`[["Catania" "56.4413" :3479447370796909 ` + cataniaCoord + `] ["Palermo" "190.4424" :3479099956230698 ` + palermoCoord + `]]`},
			{"GEORADIUS Sicily 15 37 200 km DESC", `["Palermo" "Catania"]`},
			{"GEORADIUS Sicily 15 37 200 km COUNT 1", `["Catania"]`},
			{"GEORADIUS Sicily 15 37 200 km COUNT 1 DESC", `["Palermo"]`},
			{"GEORADIUS Sicily 15 37 200 km COUNT 1 ANY", `["Palermo"]`},
			{"GEORADIUS Sicily 15 37 100 km", `["Catania"]`},
			{"GEORADIUS Sicily 15 37 10 km", `[]`},
			{"GEORADIUS nokey 15 37 10 km", `[]`},
			{"GEORADIUS Sicily 15 37 200 km STORE dst", ":2"},
			{"ZRANGE dst 0 -1 WITHSCORES", `["Palermo" ,3479099956230698 "Catania" ,3479447370796909]`},
			{"GEORADIUS Sicily 15 37 200 km STOREDIST dst ASC", ":2"},
			{"ZRANGE dst 0 -1 WITHSCORES", `["Catania" ,56.4412578701582 "Palermo" ,190.44242984775784]`},
			{"GEORADIUS Sicily 15 37 1 km STORE dst", ":0"},
			{"EXISTS dst", ":0"},
			{"GEORADIUS Sicily 15 37 200 km STORE dst WITHDIST", "-ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options"},
			{"GEORADIUS_RO Sicily 15 37 200 km STORE dst", "-ERR syntax error"},
			{"GEORADIUS Sicily 15 37 200 km COUNT 0", "-ERR COUNT must be > 0"},
			{"GEORADIUS Sicily 15 37 200 km COUNT x", "-ERR value is not an integer or out of range"},
			{"GEORADIUS Sicily 15 37 200 km COUNT", "-ERR syntax error"},
			{"GEORADIUS Sicily 15 37 200 km ANY", "-ERR the ANY argument requires COUNT argument"},
			{"GEORADIUS Sicily 15 37 200 yd", "-ERR unsupported unit provided. please use M, KM, FT, MI"},
			{"GEORADIUS Sicily 15 37 -1 km", "-ERR radius cannot be negative"},
			{"GEORADIUS Sicily 15 37 r km", "-ERR need numeric radius"},
			{"GEORADIUS Sicily 15 95 1 km", "-ERR invalid longitude,latitude pair 15.000000,95.000000"},
			{"GEORADIUS Sicily 15 37 200 km FROMMEMBER x", "-ERR syntax error"},
			{"SET str x", "+OK"},
			{"GEORADIUS str 15 37 200 km", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
			{"read GEORADIUS_RO Sicily 15 37 200 KM ASC", `["Catania" "Palermo"]`},
		},
		"georadiusbymember": {
			{geoSicily, ":2"},
			{"GEOADD Sicily 13.583333 37.316667 Agrigento", ":1"},
			{"GEORADIUSBYMEMBER Sicily Agrigento 100 km", `["Agrigento" "Palermo"]`},
			{"GEORADIUSBYMEMBER Sicily Agrigento 100 km WITHDIST ASC", `[["Agrigento" "0.0000"] ["Palermo" "90.9778"]]`},
			{"GEORADIUSBYMEMBER Sicily Nope 100 km", "-ERR could not decode requested zset member"},
			{"GEORADIUSBYMEMBER nokey Nope bad unit", `[]`},
			{"GEORADIUSBYMEMBER nokey Nope 1 km STORE dst", ":0"},
			{"read GEORADIUSBYMEMBER_RO Sicily Agrigento 100 km", `["Agrigento" "Palermo"]`},
		},
		"geosearch": {
			{geoSicily, ":2"},
			{"GEOADD Sicily 12.758489 38.788135 edge1 17.241510 38.788135 edge2", ":2"},
			{"read GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ASC", `["Catania" "Palermo"]`},
			{"read GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 km ASC WITHDIST",
				`[["Catania" "56.4413"] ["Palermo" "190.4424"] ["edge2" "279.7403"] ["edge1" "279.7405"]]`},
			{"read GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 200 km DESC COUNT 1", `["Catania"]`},
			{"read GEOSEARCH Sicily FROMMEMBER Nope BYRADIUS 200 km", "-ERR could not decode requested zset member"},
			{"read GEOSEARCH nokey FROMMEMBER Nope BYRADIUS 200 km", `[]`},
			{"read geosearch Sicily BYRADIUS 200 km ASC WITHDIST", "-ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for geosearch"},
			{"read GEOSEARCH Sicily FROMLONLAT 15 37 ASC WITHDIST", "-ERR exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH"},
			{"read GEOSEARCH Sicily FROMLONLAT 15 37 FROMMEMBER Palermo BYRADIUS 1 km", "-ERR syntax error"},
			{"read GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km BYBOX 1 1 km", "-ERR syntax error"},
			{"read GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX -1 1 km", "-ERR height or width cannot be negative"},
			{"read GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX w 1 km", "-ERR need numeric width"},
			{"read GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 h km", "-ERR need numeric height"},
			{"read GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km STORE x", "-ERR syntax error"},
			{"GEOADD Sicily 13.583333 37.316667 Agrigento", ":1"},
			{"GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYBOX 400 400 km ASC COUNT 3 STOREDIST", ":3"},
			{"ZRANGE dst 0 -1 WITHSCORES", `["Catania" ,56.4412578701582 "Agrigento" ,130.42348706714702 "Palermo" ,190.44242984775784]`},
			{"GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYBOX 400 400 km WITHDIST", "-ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options"},
			{"GEOSEARCHSTORE dst nokey FROMLONLAT 15 37 BYBOX 400 400 km", ":0"},
			{"EXISTS dst", ":0"},
		},
	})
}

// TestGeoPqsort checks the partial sort: the first n are the n smallest in
// order, whatever the input.
func TestGeoPqsort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		n := 1 + r.IntN(120)
		pts := make([]geoPoint, n)
		for i := range pts {
			pts[i].dist = float64(r.IntN(50))
		}
		want := make([]float64, n)
		for i := range pts {
			want[i] = pts[i].dist
		}
		sort.Float64s(want)
		k := 1 + r.IntN(n)
		geoSort(pts, false, k)
		for i := range k {
			if pts[i].dist != want[i] {
				t.Fatalf("n=%d k=%d: position %d is %v, want %v", n, k, i, pts[i].dist, want[i])
			}
		}
	}
}

func TestGeoEncodeDecode(t *testing.T) {
	if got := geoEncodeScore(13.361389, 38.115556); got != 3479099956230698 {
		t.Fatalf("score %d", got)
	}
	if got := string(geoFormatCoord(math.Copysign(0, -1))); got != "0" {
		t.Fatalf("coord -0: %q", got)
	}
	if got := string(geoFormatDistance(1.23455)); got != "1.2346" && got != "1.2345" {
		t.Fatalf("distance: %q", got)
	}
	if got := cScoreBits(-1); got != 1<<64-1 {
		t.Fatalf("bits of -1: %x", got)
	}
}

func BenchmarkGeoadd(b *testing.B) {
	h := newHarness(&testing.T{})
	r := rand.New(rand.NewPCG(1, 1))
	b.ResetTimer()
	for i := range b.N {
		h.apply([][]byte{[]byte("GEOADD"), []byte("pts"),
			[]byte(strconv.FormatFloat(r.Float64()*360-180, 'f', 6, 64)),
			[]byte(strconv.FormatFloat(r.Float64()*170-85, 'f', 6, 64)),
			[]byte("m" + strconv.Itoa(i))})
	}
}

func BenchmarkGeosearch(b *testing.B) {
	h := newHarness(&testing.T{})
	r := rand.New(rand.NewPCG(1, 1))
	for i := range 100000 {
		h.apply([][]byte{[]byte("GEOADD"), []byte("pts"),
			[]byte(strconv.FormatFloat(r.Float64()*20-10, 'f', 6, 64)),
			[]byte(strconv.FormatFloat(r.Float64()*20-10, 'f', 6, 64)),
			[]byte("m" + strconv.Itoa(i))})
	}
	b.ResetTimer()
	for range b.N {
		h.read("GEOSEARCH pts FROMLONLAT 0 0 BYRADIUS 50 km ASC COUNT 10 WITHDIST")
	}
}

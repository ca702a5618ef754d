package server

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/slotraft/slotraft/resp"
)

// LOLWUT [VERSION v] [args…]: Redis 7.2's computer art, drawn as
// src/lolwut.c, lolwut5.c and lolwut6.c draw it. Version 5 is Georg Nees'
// "Schotter" in braille characters, version 6 a city skyline in terminal
// colours; any other version prints only the server's version. Both
// drawings take their randomness from rand(), as Redis does (here: a
// rand-like source that tests replace); the float32 arithmetic follows C's,
// so the same random numbers give the same bytes.

func lolwutCommand() *command {
	return &command{meta: &resp.Command{Name: "lolwut", Arity: -1, Flags: resp.FlagReadOnly | resp.FlagFast,
		ACL: []string{"read", "fast"}, Group: "server", Since: "5.0.0",
		Summary: "Displays computer art and the Redis version"}, node: cmdLolwut}
}

// randMax is C's RAND_MAX on glibc.
const randMax = math.MaxInt32

// cRand is a source like C's rand(): 0..randMax.
type cRand func() int

func defaultRand() int { return int(rand.Uint32() >> 1) }

func cmdLolwut(_ *Server, _ *client, args [][]byte) resp.Value {
	out, err := lolwut(args, defaultRand)
	if err != nil {
		return resp.Err(err)
	}
	return resp.Verbatim("txt", []byte(out))
}

// lolwut renders LOLWUT args (args[0] is the command name) as Redis's
// lolwutCommand picks the version: "VERSION v" names it, else the
// server's own version does (which draws nothing).
func lolwut(args [][]byte, rnd cRand) (string, error) {
	v := Version
	if len(args) >= 3 && strings.EqualFold(string(args[1]), "version") {
		n, err := resp.ParseInt(args[2])
		if err != nil {
			return "", resp.ErrNotInteger
		}
		v = fmt.Sprintf("%d.0.0", uint32(n)) // C's (unsigned int) cast
		args = args[2:]
	}
	switch {
	case strings.HasPrefix(v, "5.") && !strings.HasPrefix(v, "5.9"), strings.HasPrefix(v, "4.9"):
		return lolwut5(args, rnd)
	case strings.HasPrefix(v, "6.") && !strings.HasPrefix(v, "6.9"), strings.HasPrefix(v, "5.9"):
		return lolwut6(args, rnd)
	}
	return "Redis ver. " + Version + "\n", nil
}

// lolwutArgs parses the optional numeric arguments args[1:] over defs,
// each clamped to [1, limits[i]] as Redis clamps them.
func lolwutArgs(args [][]byte, defs, limits []int64) ([]int64, error) {
	out := append([]int64(nil), defs...)
	for i := range out {
		if len(args) > i+1 {
			n, err := resp.ParseInt(args[i+1])
			if err != nil {
				return nil, resp.ErrNotInteger
			}
			out[i] = n
		}
		out[i] = min(max(out[i], 1), limits[i])
	}
	return out, nil
}

// canvas is lolwut.c's lwCanvas: one byte of colour per pixel.
type canvas struct {
	width, height int
	pixels        []byte
}

func newCanvas(width, height int, bg byte) *canvas {
	c := &canvas{width: width, height: height, pixels: make([]byte, width*height)}
	for i := range c.pixels {
		c.pixels[i] = bg
	}
	return c
}

func (c *canvas) set(x, y int, color byte) {
	if x < 0 || x >= c.width || y < 0 || y >= c.height {
		return
	}
	c.pixels[x+y*c.width] = color
}

func (c *canvas) get(x, y int) byte {
	if x < 0 || x >= c.width || y < 0 || y >= c.height {
		return 0
	}
	return c.pixels[x+y*c.width]
}

// line is Bresenham's line, as lwDrawLine.
func (c *canvas) line(x1, y1, x2, y2 int, color byte) {
	dx, dy := abs(x2-x1), abs(y2-y1)
	sx, sy := -1, -1
	if x1 < x2 {
		sx = 1
	}
	if y1 < y2 {
		sy = 1
	}
	err := dx - dy
	for {
		c.set(x1, y1, color)
		if x1 == x2 && y1 == y2 {
			return
		}
		e2 := err * 2
		if e2 > -dy {
			err -= dy
			x1 += sx
		}
		if e2 < dx {
			err += dx
			y1 += sy
		}
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// square is lwDrawSquare: a square of side size centred on x, y and
// rotated by angle. size and the angle are C floats, the trigonometry
// doubles.
func (c *canvas) square(x, y int, size, angle float32) {
	size = float32(float64(size) / 1.4142135623)
	size = float32(math.Round(float64(size)))
	var px, py [4]int
	k := float32(math.Pi/4 + float64(angle))
	for j := range 4 {
		px[j] = int(math.Round(math.Sin(float64(k))*float64(size) + float64(x)))
		py[j] = int(math.Round(math.Cos(float64(k))*float64(size) + float64(y)))
		k = float32(float64(k) + math.Pi/2)
	}
	for j := range 4 {
		c.line(px[j], py[j], px[(j+1)%4], py[(j+1)%4], 1)
	}
}

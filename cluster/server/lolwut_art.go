package server

import (
	"strings"
	"unicode/utf8"
)

// The two drawings of LOLWUT (lolwut.go): version 5's Schotter
// (lolwut5.c) and version 6's skyline (lolwut6.c).

// lolwut5 is LOLWUT VERSION 5 [cols [squares-per-row [squares-per-col]]].
func lolwut5(args [][]byte, rnd cRand) (string, error) {
	p, err := lolwutArgs(args, []int64{66, 8, 12}, []int64{1000, 200, 200})
	if err != nil {
		return "", err
	}
	cv := schotter(int(p[0]), int(p[1]), int(p[2]), rnd)
	return brailleText(cv) + "\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. " + Version + "\n", nil
}

// schotter is lwDrawSchotter: rows of squares, turned and shifted more
// and more at random from the third row down. Its arithmetic is C's:
// float32 for the sides and the random factors, truncation to int.
func schotter(cols, perRow, perCol int, rnd cRand) *canvas {
	width := cols * 2
	padding := 0
	if width > 4 {
		padding = 2
	}
	side := float32(width-padding*2) / float32(perRow)
	cv := newCanvas(width, int(side*float32(perCol)+float32(padding*2)), 0)
	random := func(y int) float32 {
		return float32(rnd()) / float32(randMax) / float32(perCol) * float32(y)
	}
	for y := range perCol {
		for x := range perRow {
			sx := int(float32(x)*side + side/2 + float32(padding))
			sy := int(float32(y)*side + side/2 + float32(padding))
			var angle float32
			if y > 1 {
				r1, r2, r3 := random(y), random(y), random(y)
				for _, r := range []*float32{&r1, &r2, &r3} {
					if rnd()%2 != 0 {
						*r = -*r
					}
				}
				angle = r1
				sx = int(float32(sx) + r2*side/3)
				sy = int(float32(sy) + r3*side/3)
			}
			cv.square(sx, sy, side, angle)
		}
	}
	return cv
}

// brailleBits maps a 2x4 cell's pixels (dx, dy) to the bits of a braille
// character, as lolwut5.c's renderCanvas does.
var brailleBits = [8][3]int{{0, 0, 0}, {0, 1, 1}, {0, 2, 2}, {1, 0, 3}, {1, 1, 4}, {1, 2, 5}, {0, 3, 6}, {1, 3, 7}}

// brailleText renders cv as braille characters (U+2800 + the cell's
// bits), a line per four rows of pixels.
func brailleText(cv *canvas) string {
	var b []byte
	for y := 0; y < cv.height; y += 4 {
		for x := 0; x < cv.width; x += 2 {
			bits := 0
			for _, p := range brailleBits {
				if cv.get(x+p[0], y+p[1]) != 0 {
					bits |= 1 << p[2]
				}
			}
			b = utf8.AppendRune(b, rune(0x2800+bits))
		}
		if y != cv.height-1 { // Redis's test: a last line of pixels at y ends without one
			b = append(b, '\n')
		}
	}
	return string(b)
}

// lolwut6 is LOLWUT VERSION 6 [cols [rows]].
func lolwut6(args [][]byte, rnd cRand) (string, error) {
	p, err := lolwutArgs(args, []int64{80, 20}, []int64{1000, 1000})
	if err != nil {
		return "", err
	}
	cv := newCanvas(int(p[0]), int(p[1]), 3)
	skyline(cv, rnd)
	return colorText(cv) + "\nDedicated to the 8 bit game developers of past and present.\n" +
		"Original 8 bit image from Plaguemon by hikikomori. Redis ver. " + Version + "\n", nil
}

// skyscraper is one building of the skyline.
type skyscraper struct {
	xoff, width, height int
	windows             bool
	color               byte
}

// skyline is generateSkyline: two rows of grey buildings behind a row of
// black ones with windows.
func skyline(cv *canvas, rnd cRand) {
	for color := byte(2); color >= 1; color-- {
		for offset := -10; offset < cv.width; {
			offset += rnd() % 8
			s := skyscraper{xoff: offset, width: 10 + rnd()%9, color: color}
			if color == 2 {
				s.height = cv.height/2 + rnd()%cv.height/2
			} else {
				s.height = cv.height/2 + rnd()%cv.height/3
			}
			s.draw(cv, rnd)
			if color == 2 {
				offset += s.width / 2
			} else {
				offset += s.width + 1
			}
		}
	}
	for offset := -10; offset < cv.width; {
		offset += rnd() % 8
		s := skyscraper{xoff: offset, width: 5 + rnd()%14, windows: true}
		if s.width%4 != 0 {
			s.width += s.width % 3
		}
		s.height = cv.height/3 + rnd()%cv.height/2
		s.draw(cv, rnd)
		offset += s.width + 5
	}
}

// draw is generateSkyscraper: the building from the bottom up, its roof
// four pixels narrower, windows two pixels wide on every other row.
func (s skyscraper) draw(cv *canvas, rnd cRand) {
	starty := cv.height - 1
	endy := starty - s.height + 1
	for y := starty; y >= endy; y-- {
		for x := s.xoff; x < s.xoff+s.width; x++ {
			if y == endy && (x <= s.xoff+1 || x >= s.xoff+s.width-2) {
				continue
			}
			color := s.color
			if s.windows && x > s.xoff+1 && x < s.xoff+s.width-2 && y > endy+1 && y < starty-1 {
				relx, rely := x-(s.xoff+1), y-(endy+1)
				if relx/2%2 != 0 && rely%2 != 0 {
					for color = s.color; color == s.color; {
						color = byte(1 + rnd()%2)
					}
					if relx%2 != 0 {
						color = cv.get(x-1, y)
					}
				}
			}
			cv.set(x, y, color)
		}
	}
}

// colorEscapes are lolwut6.c's foreground and background colours of the
// four shades, black to white.
var colorEscapes = [4]string{"0;30;40m", "0;90;100m", "0;37;47m", "0;97;107m"}

// colorText renders cv as a space per pixel in the pixel's colour.
func colorText(cv *canvas) string {
	var b strings.Builder
	for y := range cv.height {
		for x := range cv.width {
			ce := colorEscapes[0]
			if c := cv.get(x, y); int(c) < len(colorEscapes) {
				ce = colorEscapes[c]
			}
			b.WriteString("\033[" + ce + " \033[0m")
		}
		if y != cv.height-1 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

package chaos

import (
	"cmp"
	"fmt"
	"html"
	"html/template"
	"maps"
	"slices"
	"strings"
)

// The leader timeline of the report: one row per group, a bar per node's
// belief that it led the group, coloured by node, on the time axis of the
// charts above it. Beliefs that overlap (two nodes leading one group at
// once, in their own views) go on lanes of their own and are outlined in red.

const leaderLaneH = 14.0

var nodeColors = []string{"#1864ab", "#2b8a3e", "#e67700", "#862e9c", "#c2255c", "#0b7285", "#5c940d", "#d9480f", "#495057", "#364fc7"}

// leaderChart draws spans over n seconds, with the faults as bands.
func leaderChart(n int, spans []LeaderSpan, events []Event) template.HTML {
	if len(spans) == 0 {
		return ""
	}
	byGroup := map[uint32][]LeaderSpan{}
	nodes := map[string]bool{}
	for _, s := range spans {
		byGroup[s.Group] = append(byGroup[s.Group], s)
		nodes[s.Node] = true
	}
	groups := slices.Sorted(maps.Keys(byGroup))
	names := slices.Sorted(maps.Keys(nodes))
	color := func(node string) string { return nodeColors[slices.Index(names, node)%len(nodeColors)] }
	type row struct {
		group   uint32
		spans   []LeaderSpan
		lanes   []int
		nlanes  int
		overlap [][2]int64
	}
	rows := make([]row, len(groups))
	height := padT + padB
	for i, g := range groups {
		ss := byGroup[g]
		slices.SortFunc(ss, func(a, b LeaderSpan) int { return cmp.Compare(a.Start, b.Start) })
		lanes, nl := assignLanes(ss)
		rows[i] = row{group: g, spans: ss, lanes: lanes, nlanes: nl, overlap: overlaps(ss)}
		height += float64(nl)*leaderLaneH + 4
	}
	w := chartW - padL - padR
	x := func(ns int64) float64 { return padL + w*secs(ns)/float64(max(n, 1)) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg viewBox="0 0 %.0f %.0f" class="chart" role="img"><title>leader of each group over time</title>`, chartW, height)
	for _, e := range events {
		end := max(e.End, e.Start)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="%s" opacity="0.15"/>`,
			x(e.Start), padT, max(x(end)-x(e.Start), 1), height-padT-padB, faultColor(e.Kind))
	}
	top := padT
	for _, r := range rows {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" class="tick" text-anchor="end">group %d</text>`, padL-4, top+leaderLaneH-3, r.group)
		for i, s := range r.spans {
			y := top + float64(r.lanes[i])*leaderLaneH
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.0f" fill="%s"><title>%s</title></rect>`,
				x(s.Start), y+1, max(x(s.End)-x(s.Start), 2), leaderLaneH-2, color(s.Node),
				html.EscapeString(fmt.Sprintf("group %d: %s leads, term %d, %s – %s", s.Group, s.Node, s.Term, at(s.Start), at(s.End))))
		}
		rh := float64(r.nlanes) * leaderLaneH
		for _, o := range r.overlap {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#c92a2a" stroke-width="2"><title>%s</title></rect>`,
				x(o[0]), top, max(x(o[1])-x(o[0]), 2), rh, html.EscapeString("two nodes believe they lead group "+fmt.Sprint(r.group)+": "+at(o[0])+" – "+at(o[1])))
		}
		top += rh + 4
	}
	step := max(1, n/10)
	for s := 0; s <= n; s += step {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" class="tick" text-anchor="middle">%ds</text>`, padL+w*float64(s)/float64(max(n, 1)), top+14, s)
	}
	for i, name := range names {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" fill="%s" class="legend">%s</text>`, padL+float64(i)*90, height-5, color(name), html.EscapeString(name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// assignLanes puts each span (sorted by start) on the first lane free at
// its start, so overlapping spans lie side by side.
func assignLanes(ss []LeaderSpan) ([]int, int) {
	lanes := make([]int, len(ss))
	var ends []int64
	for i, s := range ss {
		l := slices.IndexFunc(ends, func(e int64) bool { return e < s.Start })
		if l < 0 {
			l = len(ends)
			ends = append(ends, 0)
		}
		ends[l] = s.End
		lanes[i] = l
	}
	return lanes, max(len(ends), 1)
}

// overlaps are the intervals in which two or more spans (sorted by start)
// hold at once.
func overlaps(ss []LeaderSpan) [][2]int64 {
	var out [][2]int64
	for i, a := range ss {
		for _, b := range ss[i+1:] {
			if b.Start > a.End {
				break
			}
			lo, hi := b.Start, min(a.End, b.End)
			if n := len(out); n > 0 && lo <= out[n-1][1] {
				out[n-1][1] = max(out[n-1][1], hi)
				continue
			}
			out = append(out, [2]int64{lo, hi})
		}
	}
	return out
}

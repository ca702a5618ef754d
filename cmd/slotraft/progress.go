package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// The progress of slot migrations, as `slotraft admin move-slots` and
// `rebalance` show it and `slotraft bench reshard` measures it. Everything
// here is fed with samples of SLOTRAFT MIGRATIONS's counters and the time
// each was taken, so tests drive it without a terminal or a clock.

// progressSample is one reading of SLOTRAFT MIGRATIONS.
type progressSample struct {
	at        time.Time
	pending   int   // migrations recorded and not finished
	moved     int64 // migrations finished ever (a counter)
	keysMoved int64 // keys moved ever (a counter)
}

// progressWindow is how far back keys/s looks: long enough to smooth
// polls a few hundred ms apart, short enough to follow a change of pace.
const progressWindow = 5 * time.Second

// migrationProgress follows the migrations from a baseline sample taken
// before the command was sent: the counters count from there.
type migrationProgress struct {
	base   progressSample
	recent []progressSample // oldest first; the first is at or before the window's start
	total  int              // largest done+pending seen: the total never shrinks
}

// progressStats is what the renderers show.
type progressStats struct {
	at       time.Time
	elapsed  time.Duration // since the baseline
	done     int           // migrations finished since the baseline
	total    int           // done plus pending: later batches make it grow
	keys     int64         // keys moved since the baseline
	keysRate float64       // keys/s over progressWindow
	eta      time.Duration
	etaKnown bool // false until a migration finished
}

func newMigrationProgress(base progressSample) *migrationProgress {
	return &migrationProgress{base: base, recent: []progressSample{base}}
}

// atLeast raises the total to n: a command that reports n migrations
// recorded makes them count before the node we poll shows them pending.
func (p *migrationProgress) atLeast(n int) { p.total = max(p.total, n) }

// add records a sample and forgets those the window no longer needs.
func (p *migrationProgress) add(s progressSample) {
	p.recent = append(p.recent, s)
	start := s.at.Add(-progressWindow)
	for len(p.recent) > 2 && !p.recent[1].at.After(start) {
		p.recent = p.recent[1:]
	}
	p.total = max(p.total, p.done(s)+s.pending)
}

// done counts from the baseline; a counter that went back (another node's
// view, a restart) counts as no progress rather than negative progress.
func (p *migrationProgress) done(s progressSample) int {
	return int(max(s.moved-p.base.moved, 0))
}

func (p *migrationProgress) last() progressSample { return p.recent[len(p.recent)-1] }

func (p *migrationProgress) stats() progressStats {
	last, first := p.last(), p.recent[0]
	st := progressStats{
		at: last.at, elapsed: last.at.Sub(p.base.at),
		done: p.done(last), total: p.total,
		keys: max(last.keysMoved-p.base.keysMoved, 0),
	}
	if dt := last.at.Sub(first.at); dt > 0 {
		st.keysRate = max(float64(last.keysMoved-first.keysMoved)/dt.Seconds(), 0)
	}
	// Slots finish in batches, so their rate is taken over the whole run,
	// not the window, for an ETA that does not jump with every batch.
	remaining := st.total - st.done
	switch {
	case remaining <= 0:
		st.eta, st.etaKnown = 0, true
	case st.done > 0 && st.elapsed > 0:
		perSlot := st.elapsed / time.Duration(st.done)
		st.eta, st.etaKnown = perSlot*time.Duration(remaining), true
	}
	return st
}

// progressBarWidth is the number of cells between the bar's brackets.
const progressBarWidth = 20

// renderBar draws the one-line bar, e.g.
// "[=======>            ] 42/120 slots  51,234 keys  8,210 keys/s  ETA 9s".
func renderBar(st progressStats, width int) string {
	fill := 0
	if st.total > 0 {
		fill = min(width*st.done/st.total, width)
	}
	cells := strings.Repeat("=", fill)
	if fill < width && st.done < st.total {
		cells += ">"
	}
	cells += strings.Repeat(" ", width-len(cells))
	return fmt.Sprintf("[%s] %d/%d slots  %s keys  %s keys/s  ETA %s",
		cells, st.done, st.total, groupDigits(st.keys), groupDigits(int64(st.keysRate+0.5)), etaText(st))
}

// renderPlain is the line written when the output is not a terminal, e.g.
// "moved 42/120 slots, 51234 keys, 8210 keys/s, eta 9s".
func renderPlain(st progressStats) string {
	return fmt.Sprintf("moved %d/%d slots, %d keys, %.0f keys/s, eta %s",
		st.done, st.total, st.keys, st.keysRate, etaText(st))
}

// renderSummary is the final line's account of the whole run, e.g.
// "moved 120/120 slots, 51234 keys in 14.2s (3608 keys/s)"; the rate is
// the run's average, not the window's.
func renderSummary(st progressStats) string {
	rate := 0.0
	if st.elapsed > 0 {
		rate = float64(st.keys) / st.elapsed.Seconds()
	}
	return fmt.Sprintf("moved %d/%d slots, %d keys in %.1fs (%.0f keys/s)",
		st.done, st.total, st.keys, st.elapsed.Seconds(), rate)
}

func etaText(st progressStats) string {
	if !st.etaKnown {
		return "?"
	}
	return formatETA(st.eta)
}

// formatETA rounds to what a person reads at a glance: "9s", "4m05s", "2h03m".
func formatETA(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	default:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
}

// groupDigits writes n >= 0 with thousands separators: 51234 -> "51,234".
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// progressMode is how progress is written.
type progressMode int

const (
	progressPlain progressMode = iota // a line at most every period: logs, pipes
	progressBar                       // one line redrawn with \r: terminals
)

// parseProgressMode reads --progress; auto picks the bar when out is a
// terminal.
func parseProgressMode(s string, out io.Writer) (progressMode, error) {
	switch s {
	case "auto":
		if isTerminal(out) {
			return progressBar, nil
		}
		return progressPlain, nil
	case "bar":
		return progressBar, nil
	case "plain":
		return progressPlain, nil
	default:
		return 0, fmt.Errorf("--progress %q: want auto, bar or plain", s)
	}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressPlainPeriod keeps plain output readable in a log.
const progressPlainPeriod = 2 * time.Second

// progressPrinter writes progress updates in one mode.
type progressPrinter struct {
	w      io.Writer
	mode   progressMode
	period time.Duration // plain mode: least time between two lines

	lastLine time.Time // plain mode: when the last line was written
	drawn    int       // bar mode: width of the line on screen
}

func newProgressPrinter(w io.Writer, mode progressMode) *progressPrinter {
	return &progressPrinter{w: w, mode: mode, period: progressPlainPeriod}
}

// update shows st: the bar at once, a plain line only if the last one is a
// period old.
func (p *progressPrinter) update(st progressStats) {
	if p.mode == progressBar {
		p.redraw(st)
		return
	}
	if !p.lastLine.IsZero() && st.at.Sub(p.lastLine) < p.period {
		return
	}
	p.lastLine = st.at
	fmt.Fprintln(p.w, renderPlain(st))
}

// redraw overwrites the bar in place, blanking what a longer one left.
func (p *progressPrinter) redraw(st progressStats) {
	line := renderBar(st, progressBarWidth)
	pad := max(p.drawn-len(line), 0)
	fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", pad))
	p.drawn = len(line)
}

// finish draws the bar a last time and ends its line, then writes the
// final summary line, which every mode gets.
func (p *progressPrinter) finish(st progressStats, summary string) {
	if p.mode == progressBar {
		p.redraw(st)
		fmt.Fprintln(p.w)
		p.drawn = 0
	}
	fmt.Fprintln(p.w, summary)
}

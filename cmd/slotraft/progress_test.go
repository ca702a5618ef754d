package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

var progressT0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// at is a sample d after progressT0.
func at(d time.Duration, pending int, moved, keys int64) progressSample {
	return progressSample{at: progressT0.Add(d), pending: pending, moved: moved, keysMoved: keys}
}

func TestProgressStats(t *testing.T) {
	base := at(0, 0, 100, 1000)
	tests := []struct {
		name     string
		floor    int
		samples  []progressSample
		want     progressStats // at and elapsed are not compared
		wantRate float64
	}{
		{
			name: "no sample yet",
			want: progressStats{etaKnown: true},
		},
		{
			name:  "recorded but not yet seen pending",
			floor: 10,
			want:  progressStats{total: 10},
		},
		{
			name:     "halfway",
			samples:  []progressSample{at(time.Second, 60, 140, 5000)},
			want:     progressStats{done: 40, total: 100, keys: 4000, eta: 1500 * time.Millisecond, etaKnown: true},
			wantRate: 4000,
		},
		{
			name: "a rebalance records in batches: the total grows and never shrinks",
			samples: []progressSample{
				at(1*time.Second, 16, 100, 1000),
				at(2*time.Second, 16, 116, 3000),
				at(3*time.Second, 0, 132, 5000),
			},
			want:     progressStats{done: 32, total: 32, keys: 4000, etaKnown: true},
			wantRate: 4000.0 / 3,
		},
		{
			name:    "counters that went back count as no progress",
			samples: []progressSample{at(time.Second, 5, 90, 500)},
			want:    progressStats{total: 5},
		},
		{
			name: "keys/s looks at the last five seconds only",
			samples: func() []progressSample {
				var s []progressSample
				keys := int64(1000)
				for i := 1; i <= 10; i++ {
					keys += map[bool]int64{true: 1000, false: 3000}[i <= 5]
					s = append(s, at(time.Duration(i)*time.Second, 10, 100, keys))
				}
				return s
			}(),
			want:     progressStats{total: 10, keys: 20000},
			wantRate: 3000,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newMigrationProgress(base)
			p.atLeast(tt.floor)
			for _, s := range tt.samples {
				p.add(s)
			}
			got := p.stats()
			if got.keysRate < tt.wantRate-0.01 || got.keysRate > tt.wantRate+0.01 {
				t.Errorf("keys/s %.2f, want %.2f", got.keysRate, tt.wantRate)
			}
			got.at, got.elapsed, got.keysRate = time.Time{}, 0, 0
			if got != tt.want {
				t.Errorf("stats %+v\nwant  %+v", got, tt.want)
			}
		})
	}
}

func TestProgressRender(t *testing.T) {
	tests := []struct {
		name               string
		st                 progressStats
		bar, plain, summry string
	}{
		{
			name:   "started, nothing finished",
			st:     progressStats{total: 120},
			bar:    "[>                   ] 0/120 slots  0 keys  0 keys/s  ETA ?",
			plain:  "moved 0/120 slots, 0 keys, 0 keys/s, eta ?",
			summry: "moved 0/120 slots, 0 keys in 0.0s (0 keys/s)",
		},
		{
			name: "under way",
			st: progressStats{elapsed: 6 * time.Second, done: 42, total: 120, keys: 51234,
				keysRate: 8210.4, eta: 9 * time.Second, etaKnown: true},
			bar:    "[=======>            ] 42/120 slots  51,234 keys  8,210 keys/s  ETA 9s",
			plain:  "moved 42/120 slots, 51234 keys, 8210 keys/s, eta 9s",
			summry: "moved 42/120 slots, 51234 keys in 6.0s (8539 keys/s)",
		},
		{
			name: "done",
			st: progressStats{elapsed: 14200 * time.Millisecond, done: 120, total: 120, keys: 1234567,
				keysRate: 90000, etaKnown: true},
			bar:    "[====================] 120/120 slots  1,234,567 keys  90,000 keys/s  ETA 0s",
			plain:  "moved 120/120 slots, 1234567 keys, 90000 keys/s, eta 0s",
			summry: "moved 120/120 slots, 1234567 keys in 14.2s (86941 keys/s)",
		},
		{
			name:   "nothing to move",
			st:     progressStats{etaKnown: true},
			bar:    "[                    ] 0/0 slots  0 keys  0 keys/s  ETA 0s",
			plain:  "moved 0/0 slots, 0 keys, 0 keys/s, eta 0s",
			summry: "moved 0/0 slots, 0 keys in 0.0s (0 keys/s)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := renderBar(tt.st, progressBarWidth); got != tt.bar {
				t.Errorf("bar\n got %q\nwant %q", got, tt.bar)
			}
			if got := renderPlain(tt.st); got != tt.plain {
				t.Errorf("plain\n got %q\nwant %q", got, tt.plain)
			}
			if got := renderSummary(tt.st); got != tt.summry {
				t.Errorf("summary\n got %q\nwant %q", got, tt.summry)
			}
		})
	}
}

func TestProgressFormat(t *testing.T) {
	etas := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {9400 * time.Millisecond, "9s"}, {59 * time.Second, "59s"},
		{245 * time.Second, "4m05s"}, {2*time.Hour + 3*time.Minute + 40*time.Second, "2h03m"},
	}
	for _, tt := range etas {
		if got := formatETA(tt.d); got != tt.want {
			t.Errorf("formatETA(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	digits := []struct {
		n    int64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {51234, "51,234"}, {1234567, "1,234,567"}}
	for _, tt := range digits {
		if got := groupDigits(tt.n); got != tt.want {
			t.Errorf("groupDigits(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestProgressPrinter(t *testing.T) {
	st := func(d time.Duration, done int) progressStats {
		return progressStats{at: progressT0.Add(d), done: done, total: 10}
	}
	tests := []struct {
		name    string
		mode    progressMode
		updates []progressStats
		want    string
	}{
		{
			name:    "plain writes a line at most every 2s",
			mode:    progressPlain,
			updates: []progressStats{st(0, 0), st(500*time.Millisecond, 1), st(1900*time.Millisecond, 2), st(2*time.Second, 3), st(3*time.Second, 4)},
			want: "moved 0/10 slots, 0 keys, 0 keys/s, eta ?\n" +
				"moved 3/10 slots, 0 keys, 0 keys/s, eta ?\n" +
				"summary\n",
		},
		{
			name:    "bar redraws in place and ends its line before the summary",
			mode:    progressBar,
			updates: []progressStats{{at: progressT0, total: 10, keys: 12345}, st(time.Second, 10)},
			want: "\r[>                   ] 0/10 slots  12,345 keys  0 keys/s  ETA ?" +
				"\r[====================] 10/10 slots  0 keys  0 keys/s  ETA ?    " + // blanks what the longer line left
				"\r[====================] 10/10 slots  0 keys  0 keys/s  ETA ?\n" +
				"summary\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			p := newProgressPrinter(&b, tt.mode)
			for _, u := range tt.updates {
				p.update(u)
			}
			p.finish(tt.updates[len(tt.updates)-1], "summary")
			if b.String() != tt.want {
				t.Errorf("output\n got %q\nwant %q", b.String(), tt.want)
			}
		})
	}
}

func TestProgressMode(t *testing.T) {
	tests := []struct {
		in      string
		want    progressMode
		wantErr bool
	}{
		{in: "auto", want: progressPlain}, // a buffer is no terminal
		{in: "bar", want: progressBar},
		{in: "plain", want: progressPlain},
		{in: "fancy", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseProgressMode(tt.in, &bytes.Buffer{})
		if (err != nil) != tt.wantErr || err == nil && got != tt.want {
			t.Errorf("parseProgressMode(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "auto, bar or plain") {
			t.Errorf("parseProgressMode(%q): error %q does not list the modes", tt.in, err)
		}
	}
}

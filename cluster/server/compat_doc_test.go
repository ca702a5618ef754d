package server

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// docRow matches one command row of docs/compatibility.md: | `GET` | supported | … |
var docRow = regexp.MustCompile("^\\| `([A-Z0-9_ -]+)` \\| (supported|differs|missing) \\|")

// TestCompatibilityDocMatchesTable keeps docs/compatibility.md true: every
// command the server knows is listed as supported or differs, and every
// command listed as supported or differs is known.
func TestCompatibilityDocMatchesTable(t *testing.T) {
	listed := readCompatibilityDoc(t, "../../docs/compatibility.md")
	known := map[string]bool{}
	for _, c := range commands().meta.All() {
		if len(c.Subcommands) == 0 {
			known[c.Name] = true
		}
		for _, sc := range c.Subcommands {
			known[sc.Name] = true
		}
	}
	for name := range known {
		switch status, ok := listed[name]; {
		case !ok:
			t.Errorf("%s is implemented but not listed in docs/compatibility.md", name)
		case status == "missing":
			t.Errorf("%s is implemented but listed as missing", name)
		}
	}
	for name, status := range listed {
		if status != "missing" && !known[name] {
			t.Errorf("%s is listed as %s but the server does not know it", name, status)
		}
	}
}

// readCompatibilityDoc maps "container|sub" or "name" (lowercase) to its status.
func readCompatibilityDoc(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open compatibility doc: %v", err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := docRow.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		name := strings.ToLower(strings.Replace(m[1], " ", "|", 1))
		if _, dup := out[name]; dup {
			t.Errorf("%s is listed twice", name)
		}
		out[name] = m[2]
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read compatibility doc: %v", err)
	}
	if len(out) < 300 {
		t.Fatalf("only %d commands listed in %s; the table format may have changed", len(out), path)
	}
	return out
}

// totalsLine is the sentence of docs/compatibility.md with the counts.
var totalsLine = regexp.MustCompile(`^Totals \(Redis 7\.2 commands, without slotraft's own SLOTRAFT rows\): (\d+) supported, (\d+) differs, (\d+) missing\.$`)

// TestCompatibilityDocTotals: the totals sentence counts the rows.
func TestCompatibilityDocTotals(t *testing.T) {
	const path = "../../docs/compatibility.md"
	listed := readCompatibilityDoc(t, path)
	count := map[string]int{}
	for name, status := range listed {
		if !strings.HasPrefix(name, "slotraft") {
			count[status]++
		}
	}
	want := fmt.Sprintf("%d supported, %d differs, %d missing", count["supported"], count["differs"], count["missing"])
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if m := totalsLine.FindStringSubmatch(line); m != nil {
			if got := fmt.Sprintf("%s supported, %s differs, %s missing", m[1], m[2], m[3]); got != want {
				t.Errorf("%s says %s; the rows count %s", path, got, want)
			}
			return
		}
	}
	t.Errorf("%s has no totals sentence", path)
}

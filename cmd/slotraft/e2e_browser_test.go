package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The dashboard's browser tests drive Debian's headless chromium with
// chromedp. Screenshots go to the test's artifact directory (go test
// -artifacts -outputdir DIR keeps them) and, when SLOTRAFT_TEST_ARTIFACTS
// names a directory (make test sets bin/test-artifacts), are copied there.

// lookChromium finds a Chromium; without one the test is skipped, except
// in CI (CI=true) and under make test, which installed it (make
// test-deps).
func lookChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" || os.Getenv("SLOTRAFT_TEST_ARTIFACTS") != "" {
		// CI, or make test (which sets the variable): make test-deps ran.
		t.Fatal("chromium not found, though `make test-deps` installs Debian's chromium")
	}
	t.Skip("chromium not found: install Debian's chromium (`make test-deps` does) to run the dashboard's browser tests")
	return ""
}

// browserTab is a headless Chromium tab that records what the page asked
// for on the network and any script error it threw.
type browserTab struct {
	ctx context.Context

	mu       sync.Mutex
	requests []string
	thrown   []string
}

// newBrowser starts headless Chromium (no sandbox: tests run as root) for
// the test's duration.
func newBrowser(t *testing.T) *browserTab {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(lookChromium(t)), chromedp.NoSandbox, chromedp.Headless,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1600, 1300))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	b := &browserTab{ctx: ctx}
	if err := chromedp.Listen(ctx, b.observe); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return b
}

func (b *browserTab) observe(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		b.requests = append(b.requests, e.Request.URL)
	case *runtime.EventExceptionThrown:
		b.thrown = append(b.thrown, e.ExceptionDetails.Text+" "+fmt.Sprint(e.ExceptionDetails.Exception))
	}
}

// open loads url in the tab.
func (b *browserTab) open(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, e2eDeadline)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
}

// checkClean fails the test if the page threw a script error or asked
// for anything not under base.
func (b *browserTab) checkClean(t *testing.T, base string) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, u := range b.requests {
		if !strings.HasPrefix(u, base) {
			t.Errorf("the page asked for %s, outside %s", u, base)
		}
	}
	for _, e := range b.thrown {
		t.Errorf("the page threw: %s", e)
	}
}

// pageNode is a row of the page's node table.
type pageNode struct {
	ID      string `json:"id"`
	Health  string `json:"health"`
	Process string `json:"process"`
}

// pageState is what the page shows, read from the DOM.
type pageState struct {
	Assigned int        `json:"assigned"`
	Nodes    []pageNode `json:"nodes"`
	Groups   int        `json:"groups"`
	Events   int        `json:"events"`
	Poll     string     `json:"poll"`
	Chaos    bool       `json:"chaos"`
	Result   string     `json:"result"`
	Verdict  string     `json:"verdict"`
}

const pageStateJS = `(() => {
  const rows = Array.from(document.querySelectorAll('#nodes tbody tr'));
  return {
    assigned: Number(document.getElementById('slotmap').dataset.assigned),
    nodes: rows.map(r => ({id: r.dataset.node, health: r.dataset.health, process: r.dataset.process})),
    groups: document.querySelectorAll('#groups tbody tr').length,
    events: document.querySelectorAll('#events tbody tr').length,
    poll: document.getElementById('poll').dataset.state,
    chaos: !document.getElementById('chaos').hidden,
    result: document.getElementById('chaos-result').textContent,
    verdict: document.getElementById('verdict').hidden ? '' : document.getElementById('verdict').textContent,
  };
})()`

func (b *browserTab) state(t *testing.T) pageState {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	st, err := chromedp.Run(ctx, chromedp.Evaluate[pageState](pageStateJS))
	if err != nil {
		t.Fatalf("read the page: %v", err)
	}
	return st
}

// waitFor polls the page until cond holds, within wait, and returns the
// state that satisfied it and how long that took.
func (b *browserTab) waitFor(t *testing.T, what string, wait time.Duration, cond func(pageState) bool) (pageState, time.Duration) {
	t.Helper()
	start := time.Now()
	for {
		st := b.state(t)
		if cond(st) {
			return st, time.Since(start)
		}
		if time.Since(start) > wait {
			js, _ := json.Marshal(st)
			t.Fatalf("the page did not show %s within %v; it shows %s", what, wait, js)
		}
		time.Sleep(50 * time.Millisecond) // poll interval of the page's DOM
	}
}

// click clicks the button sel in the page, as a user does (its click
// handler runs); the page redraws its tables every poll, so the button
// is found and clicked in one script rather than through a DOM node id
// that a redraw may detach in between. It fails if the button is
// missing or disabled.
func (b *browserTab) click(t *testing.T, sel string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return "missing"; if (e.disabled) return "disabled: " + e.title; e.click(); return "ok"; })()`, sel)
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil || got != "ok" {
		t.Fatalf("click %s: %q, %v", sel, got, err)
	}
}

// eval is the value of a JavaScript expression in the page, as text.
func (b *browserTab) eval(t *testing.T, expr string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string]("String("+expr+")"))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// screenshot saves the whole page as name in the test's artifact
// directory, and in $SLOTRAFT_TEST_ARTIFACTS when set.
func (b *browserTab) screenshot(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dirs := []string{t.ArtifactDir()}
	if d := os.Getenv("SLOTRAFT_TEST_ARTIFACTS"); d != "" {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(d, name)
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s (%d bytes)", path, len(png))
	}
}

func nodeRow(st pageState, id string) (pageNode, bool) {
	for _, n := range st.Nodes {
		if n.ID == id {
			return n, true
		}
	}
	return pageNode{}, false
}

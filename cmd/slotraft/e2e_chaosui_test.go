package main

import (
	"bufio"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slotraft/slotraft/internal/testports"
)

// TestChaosButtons: `slotraft dev --chaos-ui` serves the dashboard with
// chaos controls; in headless Chromium the buttons kill -9 node2 (its
// process is gone, the page says killed), refuse a second kill with a
// clear error (the button is disabled, the API answers 409 and nothing
// changes), pause and resume node3 (its process is stopped, then runs),
// restart node2, and partition node1 from the others and heal (as root
// with nft; otherwise the page shows why not). A screenshot is kept.
func TestChaosButtons(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	b := newBrowser(t)
	bin := buildSlotraft(t)
	cmd, out := startDevArgs(t, bin, t.TempDir(), "--chaos-ui")
	banner := readUntil(t, out, "chaos:")
	url := regexp.MustCompile(`chaos: +(http://\S+)`).FindStringSubmatch(banner)
	if url == nil {
		t.Fatalf("no chaos dashboard URL in:\n%s", banner)
	}
	pids := devPids(t, banner)
	base := strings.TrimSuffix(url[1], "ui/")
	b.open(t, url[1])
	b.waitFor(t, "the cluster and the chaos controls", e2eDeadline, func(st pageState) bool {
		ok := st.Chaos && st.Assigned == 16384 && len(st.Nodes) == 3
		for _, n := range st.Nodes {
			ok = ok && n.Health == "ok" && n.Process == "running"
		}
		return ok
	})

	b.click(t, `button[data-action="kill"][data-node="node2"]`)
	b.waitFor(t, "node2 killed", e2eDeadline, func(st pageState) bool {
		n, _ := nodeRow(st, "node2")
		return n.Process == "killed" && strings.Contains(st.Result, "kill -9 node2")
	})
	if err := syscall.Kill(pids["node2"], 0); err == nil {
		t.Errorf("node2 (pid %d) still runs after the kill button", pids["node2"])
	}
	if disabled := b.eval(t, `document.querySelector('button[data-action="kill"][data-node="node2"]').disabled`); disabled != "true" {
		t.Errorf("the kill button of a killed node is enabled")
	}
	code, msg := postAction(t, base, `{"action":"kill","node":"node2"}`)
	if code != http.StatusConflict || !strings.Contains(msg, "node2 is killed") {
		t.Errorf("a second kill of node2: %d %q, want 409 saying node2 is killed", code, msg)
	}

	b.click(t, `button[data-action="pause"][data-node="node3"]`)
	b.waitFor(t, "node3 paused", e2eDeadline, func(st pageState) bool {
		n, _ := nodeRow(st, "node3")
		return n.Process == "paused"
	})
	if s := procState(t, pids["node3"]); s != "T" {
		t.Errorf("node3 (pid %d) is in state %q after pause, want T (stopped)", pids["node3"], s)
	}
	b.click2(t, `button[data-action="resume"][data-node="node3"]`)
	b.click2(t, `button[data-action="restart"][data-node="node2"]`)
	b.waitFor(t, "node2 and node3 back", e2eDeadline, func(st pageState) bool {
		ok := true
		for _, n := range st.Nodes {
			ok = ok && n.Process == "running" && n.Health == "ok"
		}
		return ok
	})
	if s := procState(t, pids["node3"]); s == "T" {
		t.Errorf("node3 (pid %d) still stopped after resume", pids["node3"])
	}
	checkPartitionButtons(t, b)
	b.screenshot(t, "chaos-dashboard.png")
	b.checkClean(t, base)

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("slotraft dev --chaos-ui after SIGINT: %v", err)
	}
}

// checkPartitionButtons cuts node1 off and heals, where partitions are
// available (root, nft); elsewhere the page must say why they are not.
func checkPartitionButtons(t *testing.T, b *browserTab) {
	t.Helper()
	reason := b.eval(t, `document.getElementById('partition-reason').textContent`)
	disabled := b.eval(t, `document.getElementById('btn-partition').disabled`)
	if reason != "" {
		if disabled != "true" {
			t.Errorf("partitions unavailable (%s), yet the button is enabled", reason)
		}
		t.Logf("partition buttons disabled: %s", reason)
		return
	}
	b.click(t, `input[data-tick="node1"]`)
	b.click(t, `#btn-partition`)
	b.waitFor(t, "node1 cut off", e2eDeadline, func(st pageState) bool {
		return strings.Contains(st.Result, "partition {node1} | {node2,node3}")
	})
	b.click(t, `#btn-heal`)
	b.waitFor(t, "the partition healed", e2eDeadline, func(st pageState) bool {
		return strings.Contains(st.Result, "healed (")
	})
	b.click(t, `input[data-tick="node1"]`) // untick
}

// click2 is click after the previous action's answer came (the page
// disables the buttons while one is on its way).
func (b *browserTab) click2(t *testing.T, sel string) {
	t.Helper()
	deadline := time.Now().Add(e2eDeadline)
	for b.eval(t, `document.querySelector('`+sel+`') ? String(document.querySelector('`+sel+`').disabled) : "missing"`) != "false" {
		if time.Now().After(deadline) {
			t.Fatalf("%s not enabled within %v", sel, e2eDeadline)
		}
		time.Sleep(50 * time.Millisecond) // poll interval of the page's DOM
	}
	b.click(t, sel)
}

// startDevArgs runs `slotraft dev` with extra arguments on base ports
// whose client, bus and HTTP ports (and --chaos-ui's, HTTP base - 1) are
// free, trying a few, and returns its stdout.
func startDevArgs(t *testing.T, bin, dir string, extra ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	// Ports below Linux's ephemeral range (32768-60999), where outgoing
	// connections and other tests' OS-assigned ports never land: clients
	// 10000-11999 (their bus ports 20000-21999), HTTP, facades and proxies
	// each in a range of their own.
	for range 20 {
		base, http, sentinel, proxy := 10000+rand.IntN(2000), 12100+rand.IntN(1800), 14100+rand.IntN(1800), 16100+rand.IntN(1800)
		if !portsFree(base, base+1, base+2, base+10000, base+10001, base+10002, http-1, http, http+1, http+2,
			sentinel, sentinel+1, sentinel+2, proxy, proxy+1, proxy+2) {
			continue
		}
		args := append([]string{"dev", "--base-port", strconv.Itoa(base), "--http-base-port", strconv.Itoa(http),
			"--sentinel-base-port", strconv.Itoa(sentinel), "--proxy-base-port", strconv.Itoa(proxy),
			"--data-dir", dir, "--groups", "2"}, extra...)
		cmd := exec.Command(bin, args...)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
		})
		return cmd, bufio.NewReader(stdout)
	}
	t.Fatal("no free base port for slotraft dev")
	return nil, nil
}

// devPids reads the nodes' pids from dev's banner.
func devPids(t *testing.T, banner string) map[string]int {
	t.Helper()
	pids := map[string]int{}
	for _, m := range regexp.MustCompile(`(node\d+) +pid (\d+)`).FindAllStringSubmatch(banner, -1) {
		pids[m[1]], _ = strconv.Atoi(m[2])
	}
	if len(pids) != 3 {
		t.Fatalf("pids in the banner: %v", pids)
	}
	return pids
}

// procState is the state letter of pid in /proc (R, S, T…).
func procState(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatalf("pid %d: %v", pid, err)
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return fields[0]
}

// postAction sends an action to the chaos dashboard as its page does.
func postAction(t *testing.T, base, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"ui/api/chaos/action", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Slotraft-Chaos", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Text, Error string }
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out.Text + out.Error
}

// TestChaosRunDashboard: `slotraft chaos run --ui` serves the dashboard
// with the run's live counts and live verdict; a node killed and
// restarted from the page is recorded in the run; the verdict shows on
// the page after the run, which then lingers until Ctrl-C and exits 0.
func TestChaosRunDashboard(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	b := newBrowser(t)
	bin := buildSlotraft(t)
	ui := "127.0.0.1:" + strconv.Itoa(testports.Free(t, 1)[0])
	var progress lockedBuffer
	cmd := exec.Command(bin, "chaos", "run", "--nodes", "3", "--duration", "20s", "--faults", "pause",
		"--workload", "registers", "--seed", "3", "--dir", t.TempDir(), "--ui", ui, "--ui-linger", "3m")
	cmd.Stderr = &progress
	var summary strings.Builder
	cmd.Stdout = &summary
	exited := startUntilCleanup(t, cmd, "chaos run")
	base := "http://" + ui + "/"
	b.open(t, waitUIURL(t, base, exited, &progress))
	b.waitFor(t, "the run's progress", e2eDeadline, func(st pageState) bool {
		return st.Chaos && len(st.Nodes) == 3 && strings.Contains(st.Verdict, "Run in progress: faults") &&
			regexp.MustCompile(`registers [1-9]\d* ok`).MatchString(st.Verdict)
	})
	// The live verdict: the checks that hold on the history so far, every
	// 5 s (--live-every's default) while the faults run.
	liveOK := regexp.MustCompile(`Live check: no anomaly so far \(checked [1-9]\d* operations up to \d+\.\d s`)
	b.waitFor(t, "the live verdict", e2eDeadline, func(st pageState) bool {
		return strings.Contains(st.Verdict, "Run in progress") && liveOK.MatchString(st.Verdict) &&
			strings.Contains(st.Verdict, "pending until the end: registers: the final read of each key")
	})
	b.screenshot(t, "chaos-run-live.png")
	victim := killFromPage(t, b, base)
	b.click2(t, `button[data-action="restart"][data-node="`+victim+`"]`)
	b.waitFor(t, victim+" restarted", e2eDeadline, func(st pageState) bool {
		return strings.Contains(st.Result, "restarted "+victim)
	})
	st, _ := b.waitFor(t, "the verdict", 2*e2eDeadline, func(st pageState) bool {
		return strings.Contains(st.Verdict, "Verdict: ")
	})
	if !strings.Contains(st.Verdict, "Verdict: ok") || !strings.Contains(st.Verdict, "During the run, the live check found no anomaly (checked ") {
		t.Errorf("verdict on the page: %s\nprogress:\n%s", st.Verdict, progress.String())
	}
	b.screenshot(t, "chaos-run-verdict.png")
	b.checkClean(t, base)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(e2eDeadline):
		t.Fatal("chaos run did not end after Ctrl-C in its linger")
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("chaos run exited %d, want 0:\n%s\n%s", code, summary.String(), progress.String())
	}
	if !regexp.MustCompile(`live checks: [1-9]\d* during the run`).MatchString(summary.String()) {
		t.Errorf("the summary does not count the live checks:\n%s", summary.String())
	}
	if !strings.Contains(summary.String(), "ui-kill 1") {
		t.Errorf("the summary does not count the kill from the page:\n%s", summary.String())
	}
}

// waitUIURL waits until the run prints its dashboard's URL and the page
// answers.
func waitUIURL(t *testing.T, base string, exited <-chan struct{}, progress *lockedBuffer) string {
	t.Helper()
	deadline := time.Now().Add(e2eDeadline)
	for {
		select {
		case <-exited:
			t.Fatalf("chaos run ended:\n%s", progress.String())
		default:
		}
		if strings.Contains(progress.String(), "dashboard: "+base+"ui/") {
			if err := httpOK(base + "ui/api/chaos"); err == nil {
				return base + "ui/"
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no dashboard at %s within %v:\n%s", base, e2eDeadline, progress.String())
		}
		time.Sleep(100 * time.Millisecond) // poll interval
	}
}

// killFromPage kills a node with the page's button and returns it. The
// schedule's faults come and go meanwhile: a node it takes between the
// question and the click is refused (409, said on the page), and the
// test tries again with another.
func killFromPage(t *testing.T, b *browserTab, base string) string {
	t.Helper()
	for try := 1; ; try++ {
		victim := killableNode(t, base)
		b.click2(t, `button[data-action="kill"][data-node="`+victim+`"]`)
		st, _ := b.waitFor(t, "the kill's answer", e2eDeadline, func(st pageState) bool {
			return strings.Contains(st.Result, "kill -9 "+victim) || strings.Contains(st.Result, "refused")
		})
		if strings.Contains(st.Result, "refused") && try < 5 {
			t.Logf("kill of %s refused (try %d): %s", victim, try, st.Result)
			continue
		}
		b.waitFor(t, victim+" killed", e2eDeadline, func(st pageState) bool {
			n, _ := nodeRow(st, victim)
			return n.Process == "killed"
		})
		return victim
	}
}

// killableNode is a node the page may kill now (not under the schedule's
// fault), as the run's state says.
func killableNode(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "ui/api/chaos")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Nodes []struct {
			ID  string
			Can struct{ Kill bool }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	for _, n := range st.Nodes {
		if n.Can.Kill {
			return n.ID
		}
	}
	t.Fatalf("no node may be killed now: %+v", st)
	return ""
}

// lockedBuffer is a buffer a process writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

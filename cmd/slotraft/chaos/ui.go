package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slotraft/slotraft/cmd/slotraft/internal/chaosui"
)

// `chaos run --ui ADDR`: the run serves the dashboard (chaosui) with
// buttons that kill, pause, resume, restart and partition its nodes
// while the schedule runs, and the run's progress. The final checkers run
// once, on the whole history, after the faults (lost writes need the
// final reads): until then the page shows the running counts of
// operations by outcome, the faults in force, the nodes that exited by
// themselves and the live verdict (live.go: the checks that hold on the
// history so far, provisional), then the verdict, for --ui-linger after
// the run.
//
// An action from the page is recorded in the history as an event of
// kind ui-<action>, open until it is undone (resume, restart, heal) or
// the run heals everything at its end. It is refused on a node a fault
// of the schedule is hitting (the nemesis heals it), and serialised with
// the nemesis's injections and healings (chaosRun.acts).

// uiChecked tells the page what the live figures are and are not.
const uiChecked = "Live: operations so far by outcome, the faults in force, nodes that exited by themselves, " +
	"and every few seconds the checks that hold on the history so far (provisional). " +
	"The final check runs once on the whole history after the faults and the final reads; its verdict shows here then."

// uiCheckedOff is uiChecked with --live-every 0.
const uiCheckedOff = "Live: operations so far by outcome, the faults in force, nodes that exited by themselves (live checks are off: --live-every 0). " +
	"The checkers (linearizability, lost and phantom writes) run once on the whole history after the faults and the final reads; their verdict shows here then."

// runUI is a chaos run's chaosui.Controller.
type runUI struct {
	r *chaosRun

	mu          sync.Mutex
	phase       string
	faultsBegan time.Time
	verdict     *chaosui.Verdict
	open        map[string]int // node id, or "partition": the open event of an action from the page
	cut         string         // the page's partition in force
	nftReason   string         // why partitions are unavailable
}

func newRunUI(r *chaosRun) *runUI { return &runUI{r: r, phase: "starting", open: map[string]int{}} }

// setPhase tells the page where the run is.
func (u *runUI) setPhase(phase string) {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.phase = phase
	if phase == "faults" {
		u.faultsBegan = time.Now()
	}
}

// done shows the summary's verdict.
func (u *runUI) done(s *Summary) {
	if u == nil {
		return
	}
	v := &chaosui.Verdict{Result: s.Result, Error: s.Error}
	for _, a := range s.Anomalies {
		v.Anomalies = append(v.Anomalies, chaosui.Anomaly{Kind: a.Kind, Text: firstLine(a.Text)})
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.verdict, u.phase = v, "done"
}

// State implements chaosui.Controller.
func (u *runUI) State() chaosui.State {
	r := u.r
	u.replacedCut()
	u.mu.Lock()
	st := chaosui.State{Mode: chaosui.ModeChaosRun,
		Partition: chaosui.Partition{Available: r.nft != nil, Reason: u.nftReason, Cut: u.cut}}
	run := &chaosui.RunStatus{Phase: u.phase, Seed: r.o.Seed, DurationS: r.o.Duration.Seconds(), Checked: uiCheckedOff, Verdict: u.verdict}
	if !u.faultsBegan.IsZero() {
		run.ElapsedS = min(time.Since(u.faultsBegan), r.o.Duration).Seconds()
	}
	u.mu.Unlock()
	for _, n := range r.nodes {
		p := n.process()
		pr := chaosui.Proc{ID: n.id, Process: p, PID: n.pid(), Client: n.client, HTTP: n.http, Can: chaosui.CanFor(p)}
		if hit := u.nemesisOn(n.id); hit != "" {
			pr.Can, pr.Note = chaosui.Can{}, "the schedule's fault: "+hit
		}
		if run.Phase != "faults" {
			pr.Can = chaosui.Can{} // the page acts while the faults run
		}
		st.Nodes = append(st.Nodes, pr)
	}
	run.Workloads = outcomes(r.h, r.o.Workloads)
	events := r.h.eventsNow()
	for _, e := range events {
		if e.Kind == "crash" || e.Desc == "not injected" {
			continue
		}
		run.FaultsInjected++
		if e.End == 0 {
			run.FaultsActive = append(run.FaultsActive, e.Kind+": "+e.Desc)
			if st.Partition.Cut == "" && e.Kind == "partition" {
				st.Partition.Cut = e.Desc + " (the nemesis's)"
			}
		}
	}
	r.mu.Lock()
	for _, a := range r.crashes {
		run.Crashes = append(run.Crashes, firstLine(a.Text))
	}
	live := r.live
	r.mu.Unlock()
	if r.o.LiveEvery > 0 {
		run.Checked = uiChecked
	}
	if live != nil {
		run.Live = live.view(r.h.now())
	}
	st.Run = run
	return st
}

// process is n's process state for the page.
func (n *node) process() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.life == spare:
		return chaosui.ProcNotStarted
	case n.life == gone:
		return chaosui.ProcRemoved
	case n.cmd == nil:
		return chaosui.ProcKilled
	case n.paused:
		return chaosui.ProcPaused
	}
	return chaosui.ProcRunning
}

// Do implements chaosui.Controller.
func (u *runUI) Do(ctx context.Context, a chaosui.Action) (string, error) {
	r := u.r
	r.acts.Lock() // not while the nemesis injects or heals
	defer r.acts.Unlock()
	if phase := u.phaseNow(); phase != "faults" {
		return "", fmt.Errorf("%w: the run is at %q; the page acts while the faults run", chaosui.ErrConflict, phase)
	}
	u.replacedCut()
	switch a.Action {
	case chaosui.ActPartition:
		return u.partition(ctx, a.Nodes)
	case chaosui.ActHeal:
		return u.heal(ctx)
	}
	i := slices.IndexFunc(r.nodes, func(n *node) bool { return n.id == a.Node })
	if i < 0 {
		return "", fmt.Errorf("%w: %q", chaosui.ErrUnknownNode, a.Node)
	}
	n := r.nodes[i]
	if hit := u.nemesisOn(n.id); hit != "" {
		return "", fmt.Errorf("%w: %s is under the schedule's fault (%s); the nemesis heals it", chaosui.ErrConflict, n.id, hit)
	}
	p := n.process()
	can := chaosui.CanFor(p)
	if ok := map[string]bool{chaosui.ActKill: can.Kill, chaosui.ActPause: can.Pause,
		chaosui.ActResume: can.Resume, chaosui.ActRestart: can.Restart}[a.Action]; !ok {
		return "", fmt.Errorf("%w: %s is %s, nothing to %s", chaosui.ErrConflict, n.id, p, a.Action)
	}
	return u.act(a.Action, n)
}

// phaseNow is where the run is.
func (u *runUI) phaseNow() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.phase
}

// serveUI serves the dashboard (--ui) until the run's clean-up.
func (r *chaosRun) serveUI() error {
	if r.ui == nil {
		return nil
	}
	url, stop, err := chaosui.Serve(r.o.UI, chaosui.New(r.ui).Handler(), nil)
	if err != nil {
		return fmt.Errorf("--ui: %w (%w)", err, errBadInput)
	}
	r.clean.add(stop)
	r.say("dashboard: %s", url)
	return nil
}

// lingerUI shows the verdict on the dashboard, for --ui-linger or until
// ctx ends (Ctrl-C).
func (r *chaosRun) lingerUI(ctx context.Context, s *Summary) {
	if r.ui == nil {
		return
	}
	r.ui.done(s)
	if r.o.UILinger <= 0 {
		return
	}
	r.say("the dashboard shows the verdict (%s) for %v more; Ctrl-C ends it sooner", s.Result, r.o.UILinger)
	select {
	case <-ctx.Done():
	case <-time.After(r.o.UILinger):
	}
}

// act carries out a process action that applies to n's state.
func (u *runUI) act(action string, n *node) (string, error) {
	r := u.r
	pid := n.pid()
	switch action {
	case chaosui.ActKill, chaosui.ActPause:
		desc := fmt.Sprintf("kill -9 %s (pid %d) from the dashboard", n.id, pid)
		do := n.kill
		if action == chaosui.ActPause {
			desc = fmt.Sprintf("SIGSTOP %s (pid %d) from the dashboard", n.id, pid)
			do = func() error { return n.signalStop(true) }
		}
		i := r.h.begin(Event{Kind: "ui-" + action, Desc: desc, Targets: []string{n.id}})
		if err := do(); err != nil {
			r.h.end(i, "", err)
			return "", err
		}
		u.mu.Lock()
		u.open[n.id] = i
		u.mu.Unlock()
		r.say("dashboard: %s", desc)
		return desc, nil
	}
	var err error
	desc := fmt.Sprintf("SIGCONT %s (pid %d) from the dashboard", n.id, pid)
	if action == chaosui.ActResume {
		err = n.signalStop(false)
	} else {
		err = r.procs.start(n)
		desc = fmt.Sprintf("restarted %s (pid %d) from the dashboard", n.id, n.pid())
	}
	if err != nil {
		return "", err
	}
	u.closeEvent(n.id, "")
	r.say("dashboard: %s", desc)
	return desc, nil
}

// nemesisOn is the description of the schedule's fault in force on node
// id, "" if none.
func (u *runUI) nemesisOn(id string) string {
	events := u.r.h.eventsNow()
	for _, e := range events {
		if e.End == 0 && e.Kind != "crash" && !strings.HasPrefix(e.Kind, "ui-") && slices.Contains(e.Targets, id) {
			return e.Desc
		}
	}
	return ""
}

// partition cuts the members named off from the other members.
func (u *runUI) partition(ctx context.Context, side []string) (string, error) {
	r := u.r
	if r.nft == nil {
		return "", fmt.Errorf("%w: %s", chaosui.ErrUnavailable, u.nftReason)
	}
	if np := u.nemesisPartition(); np != "" {
		return "", fmt.Errorf("%w: the schedule's partition is in force (%s); the nemesis heals it", chaosui.ErrConflict, np)
	}
	members := r.procs.members()
	ip := map[string]string{}
	for _, n := range members {
		ip[n.id] = n.ip
	}
	in, out, err := chaosui.SplitSides(idsOf(members), side)
	if err != nil {
		return "", err
	}
	if err := r.nft.Cut(ctx, chaosui.CutPairs(in, out, ip)); err != nil {
		return "", err
	}
	desc := "partition " + chaosui.SideText(in) + " | " + chaosui.SideText(out) + " from the dashboard"
	i := r.h.begin(Event{Kind: "ui-partition", Desc: desc, Targets: append(in, out...)})
	u.closeEvent("partition", "") // a new cut replaces the one before
	u.mu.Lock()
	u.open["partition"], u.cut = i, desc
	u.mu.Unlock()
	r.say("dashboard: %s", desc)
	return desc, nil
}

// nemesisPartition is the schedule's partition in force, "" if none.
func (u *runUI) nemesisPartition() string {
	events := u.r.h.eventsNow()
	for _, e := range events {
		if e.End == 0 && e.Kind == "partition" {
			return e.Desc
		}
	}
	return ""
}

// replacedCut closes the page's partition when a partition of the
// schedule began after it: the nemesis's rules replaced the page's, and
// its healing removes both.
func (u *runUI) replacedCut() {
	u.mu.Lock()
	i, ok := u.open["partition"]
	u.mu.Unlock()
	if !ok {
		return
	}
	events := u.r.h.eventsNow()
	if slices.ContainsFunc(events[i+1:], func(e Event) bool { return e.Kind == "partition" && e.Desc != "not injected" }) {
		u.closeEvent("partition", " (replaced by the schedule's partition)")
		u.mu.Lock()
		u.cut = ""
		u.mu.Unlock()
	}
}

// outcomes counts each workload's operations so far by outcome (final
// reads apart), in the order of names.
func outcomes(h *history, names []string) []chaosui.WorkloadCounts {
	out := make([]chaosui.WorkloadCounts, len(names))
	for i, name := range names {
		out[i].Name = name
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, op := range h.ops {
		i := slices.Index(names, op.Workload)
		if i < 0 || op.Final {
			continue
		}
		switch op.Outcome {
		case OK:
			out[i].OK++
		case Fail:
			out[i].Fail++
		case Unknown:
			out[i].Unknown++
		}
	}
	return out
}

// heal removes the page's partition.
func (u *runUI) heal(ctx context.Context) (string, error) {
	r := u.r
	if r.nft == nil {
		return "", fmt.Errorf("%w: %s", chaosui.ErrUnavailable, u.nftReason)
	}
	u.mu.Lock()
	cut := u.cut
	u.mu.Unlock()
	if cut == "" {
		return "", fmt.Errorf("%w: no partition from the page is in force (the nemesis heals its own)", chaosui.ErrConflict)
	}
	dropped, err := r.nft.Heal(ctx)
	if err != nil {
		return "", err
	}
	desc := fmt.Sprintf("healed (%d packets dropped)", dropped)
	u.closeEvent("partition", " "+desc)
	u.mu.Lock()
	u.cut = ""
	u.mu.Unlock()
	r.say("dashboard: %s", desc)
	return desc, nil
}

// closeEvent ends the open event of key, adding extra to its description.
func (u *runUI) closeEvent(key, extra string) {
	u.mu.Lock()
	i, ok := u.open[key]
	delete(u.open, key)
	u.mu.Unlock()
	if !ok {
		return
	}
	events := u.r.h.eventsNow()
	u.r.h.end(i, events[i].Desc+extra, nil)
}

// closeAll ends every open event of the page: the run has healed all.
func (u *runUI) closeAll() {
	if u == nil {
		return
	}
	u.mu.Lock()
	keys := make([]string, 0, len(u.open))
	for k := range u.open {
		keys = append(keys, k)
	}
	u.cut = ""
	u.mu.Unlock()
	for _, k := range keys {
		u.closeEvent(k, " (healed at the end of the faults)")
	}
}

func idsOf(ns []*node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.id
	}
	return out
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

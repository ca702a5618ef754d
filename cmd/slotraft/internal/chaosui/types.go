package chaosui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Errors of a Controller's Do, which the handler answers with a status:
// each wraps one of these.
var (
	// ErrUnknownNode: no node has that id (404).
	ErrUnknownNode = errors.New("no such node")
	// ErrConflict: the node is not in a state the action applies to, such
	// as a kill of a node already down (409). Nothing was changed.
	ErrConflict = errors.New("not possible now")
	// ErrUnavailable: the action cannot be done here, such as a partition
	// without root (503).
	ErrUnavailable = errors.New("unavailable")
	// ErrBadAction: the request names no known action, or misses its
	// arguments (400).
	ErrBadAction = errors.New("bad action")
)

// Controller is what a supervisor lets the page do to its nodes.
type Controller interface {
	// State is the nodes' processes and the run's progress now.
	State() State
	// Do carries out a; the text says what was done, for the page's log.
	Do(ctx context.Context, a Action) (string, error)
}

// Modes of a supervisor.
const (
	ModeDev      = "dev"       // slotraft dev --chaos-ui
	ModeChaosRun = "chaos-run" // slotraft chaos run --ui
)

// Process states of a node.
const (
	ProcRunning    = "running"
	ProcPaused     = "paused"      // SIGSTOP
	ProcExiting    = "exiting"     // SIGKILL sent, not reaped yet
	ProcKilled     = "killed"      // not running
	ProcNotStarted = "not-started" // a chaos run's spare, not joined yet
	ProcRemoved    = "removed"     // removed from the cluster by the run
)

// Actions the page sends.
const (
	ActKill      = "kill"      // SIGKILL (kill -9)
	ActPause     = "pause"     // SIGSTOP
	ActResume    = "resume"    // SIGCONT
	ActRestart   = "restart"   // start a killed node again on its data dir
	ActPartition = "partition" // cut Nodes off from the other nodes
	ActHeal      = "heal"      // remove every partition rule
)

// State is /ui/api/chaos.
type State struct {
	Mode      string     `json:"mode"`
	Nodes     []Proc     `json:"nodes"`
	Partition Partition  `json:"partition"`
	Run       *RunStatus `json:"run,omitempty"` // a chaos run's progress; nil for dev
	Log       []LogLine  `json:"log"`           // the last actions, oldest first
}

// Proc is one node's process as its supervisor knows it.
type Proc struct {
	ID      string `json:"id"`
	Process string `json:"process"`
	PID     int    `json:"pid,omitempty"`
	Client  string `json:"client"`
	HTTP    string `json:"http,omitempty"` // its --http, where the cluster's view is fetched
	Can     Can    `json:"can"`
	// Note says why no action applies beyond its state (a chaos run's
	// own fault holds it), "" if nothing more.
	Note string `json:"note,omitempty"`
}

// Can says which actions apply to a node in its state now.
type Can struct {
	Kill    bool `json:"kill"`
	Pause   bool `json:"pause"`
	Resume  bool `json:"resume"`
	Restart bool `json:"restart"`
}

// CanFor is what applies to a process in state process.
func CanFor(process string) Can {
	return Can{
		Kill:    process == ProcRunning || process == ProcPaused,
		Pause:   process == ProcRunning,
		Resume:  process == ProcPaused,
		Restart: process == ProcKilled,
	}
}

// Partition says whether partitions can be made, and the one in force.
type Partition struct {
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"` // why not, when not available
	Cut       string `json:"cut,omitempty"`    // the partition in force, "" for none
}

// Action is a POST to /ui/api/chaos/action.
type Action struct {
	Action string   `json:"action"`
	Node   string   `json:"node,omitempty"`  // kill, pause, resume, restart
	Nodes  []string `json:"nodes,omitempty"` // partition: the side cut off from the rest
}

// ActionResult answers an action that was carried out.
type ActionResult struct {
	Text string `json:"text"`
}

// LogLine is an action carried out or refused.
type LogLine struct {
	At   time.Time `json:"at"`
	Text string    `json:"text"`
}

// RunStatus is a chaos run's progress. The final checkers run once, on
// the whole history, after the run (Verdict); during the run the page
// shows the running counts of operations and faults, and Live: the
// checks that hold on the history so far (Checked says what is what).
type RunStatus struct {
	Phase          string           `json:"phase"` // starting, faults, healing, final reads, checking, done
	Seed           uint64           `json:"seed"`
	ElapsedS       float64          `json:"elapsed_s"`  // since the faults began
	DurationS      float64          `json:"duration_s"` // --duration
	Workloads      []WorkloadCounts `json:"workloads"`
	FaultsInjected int              `json:"faults_injected"`
	FaultsActive   []string         `json:"faults_active"`
	Crashes        []string         `json:"crashes"`        // nodes that exited by themselves: anomalies found live
	Checked        string           `json:"checked"`        // what the counts are and are not
	Live           *LiveVerdict     `json:"live,omitempty"` // nil when the run checks nothing live
	Verdict        *Verdict         `json:"verdict,omitempty"`
}

// LiveVerdict is what the checks that hold on a prefix of the history
// found so far: provisional, since only the final check, with the final
// reads, gives the verdict.
type LiveVerdict struct {
	Checks    int       `json:"checks"`    // rounds done so far
	Ops       int       `json:"ops"`       // operations the last round checked
	UpToS     float64   `json:"up_to_s"`   // its prefix: the history up to this time, s since the run began
	AgeS      float64   `json:"age_s"`     // how long ago that was
	Anomalies []Anomaly `json:"anomalies"` // found so far, the first of each kind per key
	More      int       `json:"more,omitempty"`
	Undecided int       `json:"undecided,omitempty"` // keys porcupine did not decide in the last round (tried again)
	Capped    string    `json:"capped,omitempty"`    // why the live check stopped growing, "" while it grows
	Checked   []string  `json:"checked"`             // what is checked live, per workload
	Pending   []string  `json:"pending"`             // what waits for the end, per workload
}

// WorkloadCounts are one workload's operations so far by outcome.
type WorkloadCounts struct {
	Name    string `json:"name"`
	OK      int    `json:"ok"`
	Fail    int    `json:"fail"`
	Unknown int    `json:"unknown"`
}

// Verdict is the checkers' result at the end of a chaos run.
type Verdict struct {
	Result    string    `json:"result"` // ok, anomalies, failed
	Anomalies []Anomaly `json:"anomalies,omitempty"`
	Error     string    `json:"error,omitempty"`
}

// Anomaly is one thing a checker found.
type Anomaly struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
	// AtS is when a live check found it: the end of the history it
	// checked, s since the run began; 0 for the final verdict's.
	AtS float64 `json:"at_s,omitempty"`
}

// SplitSides splits the nodes ids into those the page ticked (side) and
// the others, for a partition: a name not among ids, or no node on one
// side, is an error.
func SplitSides(ids, side []string) (in, out []string, err error) {
	for _, id := range side {
		if !slices.Contains(ids, id) {
			return nil, nil, fmt.Errorf("%w: %q", ErrUnknownNode, id)
		}
	}
	for _, id := range ids {
		if slices.Contains(side, id) {
			in = append(in, id)
		} else {
			out = append(out, id)
		}
	}
	if len(in) == 0 || len(out) == 0 {
		return nil, nil, fmt.Errorf("%w: a partition needs nodes on both sides (tick some, not all)", ErrBadAction)
	}
	return in, out, nil
}

// CutPairs are the pairs of addresses a partition between in and out
// cuts: every node of one side with every node of the other.
func CutPairs(in, out []string, addr map[string]string) [][2]string {
	var pairs [][2]string
	for _, a := range in {
		for _, b := range out {
			pairs = append(pairs, [2]string{addr[a], addr[b]})
		}
	}
	return pairs
}

// SideText renders the ids of one side of a partition: {node1,node2}.
func SideText(ids []string) string { return "{" + strings.Join(ids, ",") + "}" }

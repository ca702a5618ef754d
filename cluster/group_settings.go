package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/slotraft/slotraft/fsm"
)

// Group settings that follow the node's CONFIG (the encoding limits,
// fsm.LimitSettings): every group takes the values of its leader, through
// its log (EntrySettings), so every replica of a group converts its
// collections at the same point. The leader proposes them when its CONFIG
// changes and when it starts leading a group whose settings differ; a
// group whose leader has Redis's defaults carries none.

// settingsEvery is how often the node compares the settings of the groups
// it leads with its own.
const settingsEvery = time.Second

// groupSettings is what SetGroupSettings gave, for settingsLoop.
type groupSettings struct {
	mu   sync.Mutex
	want map[string]string
	wake chan struct{} // buffered 1
}

// SetGroupSettings sets the values every group this node leads should
// hold (a value equal to the default is best given as ""); it takes a copy.
func (n *Node) SetGroupSettings(m map[string]string) {
	n.settings.mu.Lock()
	n.settings.want = maps.Clone(m)
	n.settings.mu.Unlock()
	select {
	case n.settings.wake <- struct{}{}:
	default:
	}
}

func (n *Node) wantedSettings() map[string]string {
	n.settings.mu.Lock()
	defer n.settings.mu.Unlock()
	return n.settings.want
}

// settingsLoop proposes to each group led here the settings it lacks.
func (n *Node) settingsLoop() {
	t := time.NewTicker(settingsEvery)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		case <-n.settings.wake:
		}
		_ = n.settingsPass(n.ctx)
	}
}

// settingsPass proposes to each group led here the settings it lacks and
// waits until they applied.
func (n *Node) settingsPass(ctx context.Context) error {
	want := n.wantedSettings()
	var errs []error
	for _, g := range n.ledGroups() {
		if e := settingsDiff(g.fsm.State(), want); e != nil {
			ctx, cancel := context.WithTimeout(ctx, requestTimeout)
			if err := g.proposeEntry(ctx, e); err != nil {
				n.log.Info("group settings: proposing the node's values", "group", g.id, "err", err)
				errs = append(errs, fmt.Errorf("group %d: %w", g.id, err))
			}
			cancel()
		}
	}
	return errors.Join(errs...)
}

// ApplyGroupSettings is SetGroupSettings, then the groups led here take
// the values before it returns (CONFIG SET: a write that follows it
// converts under the new values).
func (n *Node) ApplyGroupSettings(ctx context.Context, m map[string]string) error {
	n.SetGroupSettings(m)
	return n.settingsPass(ctx)
}

// settingsDiff is the EntrySettings that gives st the values of want, in
// key order; nil when it has them.
func settingsDiff(st fsm.Reader, want map[string]string) *fsm.Entry {
	e := &fsm.Entry{Type: fsm.EntrySettings}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if st.Setting(k) != want[k] {
			e.Cmds = append(e.Cmds, [][]byte{[]byte(k), []byte(want[k])})
		}
	}
	if len(e.Cmds) == 0 {
		return nil
	}
	return e
}

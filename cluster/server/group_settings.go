package server

import (
	"context"
	"maps"
	"sync"

	"github.com/slotraft/slotraft/fsm"
)

// The encoding parameters (hash-max-listpack-entries and the others of
// fsm.LimitSettings) change what Apply does, so they are replicated: the
// node hands their CONFIG values to the groups it leads, through their logs
// (cluster/group_settings.go), and each group's replicas convert their
// collections at the same point.

// groupSettingsMirror is the last values handed to the node.
type groupSettingsMirror struct {
	mu   sync.Mutex
	last map[string]string
}

// refreshGroupSettings hands the node the encoding parameters' values when
// they changed; a value at its default is given as "" (a group without the
// setting uses the default). With wait (CONFIG SET), the groups led here
// take them before it returns.
func (s *Server) refreshGroupSettings(wait bool) {
	want := make(map[string]string, len(fsm.LimitSettings))
	for _, name := range fsm.LimitSettings {
		v := s.configValue(name)
		if p := s.cfg.reg.lookup(name); p != nil && v == p.def {
			v = ""
		}
		want[name] = v
	}
	s.groupSettings.mu.Lock()
	defer s.groupSettings.mu.Unlock() // CONFIG SET's wait holds it: the ticker's refresh waits behind it
	if !wait && s.groupSettings.last != nil && maps.Equal(want, s.groupSettings.last) {
		return
	}
	s.groupSettings.last = want
	if !wait {
		s.n.SetGroupSettings(want)
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, requestTimeout)
	defer cancel()
	if err := s.n.ApplyGroupSettings(ctx, want); err != nil {
		s.log.Info("CONFIG SET: the groups led here did not all take the encoding limits yet; they will", "err", err)
	}
}

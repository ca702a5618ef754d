package server

import (
	"context"
	"errors"
	"time"

	"github.com/slotraft/slotraft/acl"
	"github.com/slotraft/slotraft/cluster/meta"
)

// The ACL parameters. requirepass is the default user's password, as in
// Redis, and so cluster state here: CONFIG SET requirepass on one node
// proposes the change to the meta group and holds on every node (Redis
// Cluster keeps one per node), and CONFIG GET answers the replicated
// value. A config file's requirepass is proposed when the server starts
// serving, only while no requirepass was ever set in the cluster, so a
// restarted node never undoes a CONFIG SET. acl-pubsub-default and
// acllog-max-len are this node's.

// configString is parameter name's current value.
func (s *Server) configString(name string) string { return s.cfg.value(s, s.cfg.reg.lookup(name)) }

// aclFile is the aclfile parameter ("" without one).
func (s *Server) aclFile() string { return s.configString("aclfile") }

// requirePassGet is CONFIG GET requirepass: the cluster's.
func requirePassGet(s *Server) string { return string(s.n.ACL().RequirePass) }

// requirePassApply proposes the new password (the file's waits for Serve:
// startACL).
func requirePassApply(s *Server, v configValue) error {
	pw := []byte(v.text)
	if !s.aclServing.Load() {
		s.aclFilePass.Store(&pw)
		return nil
	}
	set := meta.ACLSetUser{Name: []byte(acl.DefaultUser), Rules: meta.RequirePassRules(pw), RequirePass: &pw}
	return s.proposeACL(set)
}

func pubsubDefaultApply(s *Server, v configValue) error {
	s.acl.pubsubAll.Store(v.num == 1)
	return nil
}

func aclLogMaxLenApply(s *Server, v configValue) error {
	s.acl.mu.Lock()
	s.acl.log.MaxLen = int(min(v.num, 1<<30))
	s.acl.log.Trim()
	s.acl.mu.Unlock()
	return nil
}

// startACL runs as Serve starts: the aclfile, then the config file's
// requirepass go to the cluster's users (once; see above and
// loadACLFileAtStart). With both, the requirepass is the default user's
// password at the end, whatever the file says of the default user.
func (s *Server) startACL() {
	s.aclServing.Store(true)
	s.loadACLFileAtStart() // first: a requirepass then sets the default user's password
	if pw := s.aclFilePass.Load(); pw != nil && len(*pw) > 0 {
		for s.ctx.Err() == nil && !s.n.ACL().RequirePassSet {
			ctx, cancel := context.WithTimeout(s.ctx, aclProposeTimeout)
			set := meta.ACLSetUser{Name: []byte(acl.DefaultUser), Rules: meta.RequirePassRules(*pw), RequirePass: pw, IfUnset: true}
			err := s.n.ProposeACL(ctx, set)
			cancel()
			if err == nil || errors.Is(err, meta.ErrACLNotDefault) {
				break
			}
			s.log.Debug("requirepass: not applied yet, retrying", "err", err)
			s.aclRetryPause()
		}
	}
}

// aclRetryPause waits before a start-up proposal is tried again: until
// the users change (the condition may hold now) or a moment passed.
func (s *Server) aclRetryPause() {
	select {
	case <-s.n.ACLChanged():
	case <-time.After(100 * time.Millisecond):
	case <-s.ctx.Done():
	}
}

package server

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotraft/slotraft/acl"
	"github.com/slotraft/slotraft/cluster/meta"
	"github.com/slotraft/slotraft/resp"
)

// Authentication and the ACL check of every command, as Redis 7.2's
// processCommand: after the command is found and its arity checked, a
// connection that must authenticate gets NOAUTH (but for no_auth
// commands), then the user's permissions give NOPERM, logged in ACL LOG.
// The users are the meta group's replicated set (cluster/meta ACLState);
// each connection holds the set it last read and re-reads its user when
// the set changes, by pointer: the common case (the default user with
// every permission, nothing changed) is one atomic load and a flag test.

// aclConn is a connection's user. Its connection goroutine reads and
// writes it; name and born are also read by CLIENT LIST and the watcher
// of user changes, under the client's mu.
type aclConn struct {
	name   string // the user, "default" at first
	born   uint64 // the user's birth in the set (meta.ACLState.Born)
	authed bool   // authenticated, or needed not (the default user was nopass at connect)

	state *meta.ACLState // the set user and open were read from
	user  *acl.User
	// open: authenticated (or no auth needed) and every permission:
	// nothing to check.
	open bool
	// perms are permsOf's permissions (acl.User.Perms), kept for the
	// entries of its scripts (acl_script.go).
	perms   []byte
	permsOf *acl.User
	// gone: the user was deleted or replaced (watchACL): the connection
	// closes once its running command is answered.
	gone atomic.Bool
}

// aclServer is the node's ACL LOG and INFO's denial counters.
type aclServer struct {
	mu  sync.Mutex
	log *acl.Log // under mu

	deniedCmd, deniedKey, deniedChannel atomic.Int64
	pubsubAll                           atomic.Bool // acl-pubsub-default allchannels
}

func newACLServer() aclServer { return aclServer{log: acl.NewLog(acl.DefaultLogMaxLen)} }

// initACL gives a new (or RESET) connection the default user,
// authenticated when the default user needs no password.
func (s *Server) initACL(c *client) {
	st := s.n.ACL()
	c.setACLUser(acl.DefaultUser, 0)
	c.acl.authed = !st.Users.AuthRequired()
	c.acl.state = nil // read again at the next command
}

func (c *client) setACLUser(name string, born uint64) {
	c.mu.Lock()
	c.acl.name, c.acl.born = name, born
	c.mu.Unlock()
	c.acl.state = nil
}

// aclUser returns c's user name under mu (CLIENT LIST, CLIENT KILL USER).
func (c *client) aclUser() (string, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.acl.name, c.acl.born
}

// aclRead brings c's user up to the current set; false when c's user is
// gone (deleted, or replaced by ACL LOAD): c is then closed.
func (s *Server) aclRead(c *client) bool {
	st := s.n.ACL()
	if st == c.acl.state {
		return c.acl.user != nil
	}
	c.acl.state = st
	u := st.Users.Get(c.acl.name)
	if u == nil || st.Born(c.acl.name) != c.acl.born {
		c.acl.user, c.acl.open = nil, false
		c.closing = true
		_ = c.conn.nc.Close()
		return false
	}
	c.acl.user = u
	c.acl.open = (c.acl.authed || !st.Users.AuthRequired()) && u.AllowsAll()
	return true
}

// aclDenied is the reply refusing args (cmd found, arity right) to c, or
// nil: NOAUTH, or NOPERM with the denial to log (aclNote).
func (s *Server) aclDenied(c *client, cmd *command, args [][]byte) (*resp.Value, *acl.Denial) {
	if !s.aclRead(c) {
		v := resp.Err(acl.ErrNoAuth)
		return &v, nil
	}
	if c.acl.open {
		return nil, nil
	}
	if !c.acl.authed && c.acl.state.Users.AuthRequired() && !cmd.meta.Is(resp.FlagNoAuth) {
		v := resp.Err(acl.ErrNoAuth)
		return &v, nil
	}
	d := c.acl.user.Check(cmd.meta, args)
	if d == nil {
		return sortPatternDenied(c.acl.user, cmd, args), nil
	}
	v := resp.Err(d.Err(c.acl.name))
	return &v, d
}

// aclRefused is route's ACL gate: the refusal of args, if any.
func (s *Server) aclRefused(c *client, args [][]byte) (route, bool) {
	if c.acl.open && c.acl.state == s.n.ACL() {
		return route{}, false
	}
	cmd := s.table.lookup(args[0])
	if cmd == nil || !cmd.meta.ArityOK(len(args)) {
		return route{}, false // routeCommand answers these first, as Redis
	}
	v, d := s.aclDenied(c, cmd, args)
	if v == nil {
		return route{}, false
	}
	return route{cmd: cmd, reply: *v, denial: d}, true
}

// aclNote logs a denial in ACL LOG and counts it (INFO's
// acl_access_denied_*), as Redis's addACLLogEntry.
func (s *Server) aclNote(c *client, d *acl.Denial, ctx acl.Context, object, user string) {
	switch d.Reason {
	case acl.ReasonCommand:
		s.acl.deniedCmd.Add(1)
	case acl.ReasonKey:
		s.acl.deniedKey.Add(1)
	case acl.ReasonChannel:
		s.acl.deniedChannel.Add(1)
	case acl.ReasonAuth:
		s.io.authDenied.Add(1)
	}
	now := time.Now()
	info := c.info(now, s.watchesChanged)
	s.acl.mu.Lock()
	s.acl.log.Add(d.Reason, ctx, object, user, info, now.UnixMilli())
	s.acl.mu.Unlock()
}

// noteDenied logs the denial a routed command carries (once, when the
// command is answered: routing may look ahead).
func (s *Server) noteDenied(c *client, r route, ctx acl.Context) {
	if r.denial != nil {
		s.aclNote(c, r.denial, ctx, r.denial.Object, c.acl.name)
	}
}

// aclClose closes o, whose user is gone, as Redis frees such a client:
// at once when idle or blocked; after its reply when it is running a
// command (its own ACL DELUSER, say), which serveConn then sees.
func (s *Server) aclClose(o *client) {
	o.acl.gone.Store(true)
	if o.io.TryLock() {
		o.io.Unlock()
		s.kill(o)
		return
	}
	o.mu.Lock()
	blocked := o.blocked != notBlocked
	o.mu.Unlock()
	if blocked {
		s.kill(o)
	}
}

// watchACL closes the connections whose user is gone whenever the set
// changes, as Redis frees the clients of a deleted user at once.
func (s *Server) watchACL() {
	for {
		ch := s.n.ACLChanged()
		st := s.n.ACL()
		if st.Users != nil {
			for _, o := range s.clientList() {
				name, born := o.aclUser()
				if st.Users.Get(name) == nil || st.Born(name) != born {
					s.aclClose(o)
				}
			}
		}
		select {
		case <-ch:
		case <-s.ctx.Done():
			return
		}
	}
}

var (
	errSortByACL  = resp.NewError("ERR BY option of SORT denied due to insufficient ACL permissions.")
	errSortGetACL = resp.NewError("ERR GET option of SORT denied due to insufficient ACL permissions.")
)

// sortPatternDenied is sort.c's check of SORT's BY pattern and GET: they
// read keys the command does not declare, so the user needs read access
// to every key (ACLUserCheckCmdWithUnrestrictedKeyAccess); nil if allowed.
func sortPatternDenied(u *acl.User, cmd *command, args [][]byte) *resp.Value {
	if name := cmd.meta.Name; name != "sort" && name != "sort_ro" || u.CheckUnrestricted(cmd.meta, args, true, false) {
		return nil
	}
	for j := 2; j < len(args)-1; j++ {
		var err *resp.Error
		switch {
		case resp.EqualFold(args[j], "limit"):
			j += 2
		case resp.EqualFold(args[j], "store"):
			j++
		case resp.EqualFold(args[j], "by") && bytes.IndexByte(args[j+1], '*') >= 0:
			err = errSortByACL
		case resp.EqualFold(args[j], "get"):
			err = errSortGetACL
		}
		if err != nil {
			v := resp.Err(err)
			return &v
		}
	}
	return nil
}

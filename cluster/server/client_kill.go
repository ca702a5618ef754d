package server

import (
	"time"

	"github.com/slotraft/slotraft/resp"
)

// CLIENT KILL and CLIENT UNBLOCK: one connection acting on others.

var (
	errNoSuchClient  = resp.NewError("ERR No such client")
	errKillClientID  = resp.NewError("ERR client-id should be greater than 0")
	errMaxAgeNotInt  = resp.NewError("ERR maxage is not an integer or out of range")
	errMaxAgeNotPos  = resp.NewError("ERR maxage should be greater than 0")
	errUnblockReason = resp.NewError("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
	// errUnblocked is the reply of a command ended by CLIENT UNBLOCK … ERROR.
	errUnblocked = resp.NewError("UNBLOCKED client unblocked via CLIENT UNBLOCK")
)

// killFilter is what CLIENT KILL matches: every field set must match.
type killFilter struct {
	addr, laddr *string
	typ         string // "" for any
	id          uint64 // 0 for any
	user        *string
	skipme      bool
	maxAge      int64 // seconds; 0 for any
}

// parseKillFilter parses CLIENT KILL's arguments as Redis does: one
// argument is the old form (an address, yourself included); more are
// option-value pairs, each checked as it comes. MAXAGE is Redis 7.4's.
func parseKillFilter(args [][]byte) (killFilter, *resp.Error) {
	if len(args) == 3 {
		addr := string(args[2])
		return killFilter{addr: &addr}, nil
	}
	f := killFilter{skipme: true}
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return f, resp.ErrSyntax
		}
		if err := f.option(args[i], args[i+1]); err != nil {
			return f, err
		}
	}
	return f, nil
}

// option applies one option-value pair of CLIENT KILL's filter form.
func (f *killFilter) option(opt, val []byte) *resp.Error {
	v := string(val)
	switch {
	case resp.EqualFold(opt, "id"):
		id, err := resp.ParseInt(val)
		if err != nil || id < 1 {
			return errKillClientID
		}
		f.id = uint64(id)
	case resp.EqualFold(opt, "maxage"):
		age, err := resp.ParseInt(val)
		if err != nil {
			return errMaxAgeNotInt
		}
		if age <= 0 {
			return errMaxAgeNotPos
		}
		f.maxAge = age
	case resp.EqualFold(opt, "type"):
		typ, ok := parseClientType(val)
		if !ok {
			return resp.Errorf("ERR Unknown client type '%s'", val)
		}
		f.typ = typ
	case resp.EqualFold(opt, "addr"):
		f.addr = &v
	case resp.EqualFold(opt, "laddr"):
		f.laddr = &v
	case resp.EqualFold(opt, "user"):
		f.user = &v // cmdClientKill checks that it exists
	case resp.EqualFold(opt, "skipme"):
		switch {
		case resp.EqualFold(val, "yes"):
			f.skipme = true
		case resp.EqualFold(val, "no"):
			f.skipme = false
		default:
			return resp.ErrSyntax
		}
	default:
		return resp.ErrSyntax
	}
	return nil
}

// matches reports whether o, seen from self at now, is to be killed.
func (f *killFilter) matches(o, self *client, now time.Time) bool {
	if f.user != nil {
		if name, _ := o.aclUser(); name != *f.user {
			return false
		}
	}
	switch {
	case f.addr != nil && o.addr != *f.addr,
		f.laddr != nil && o.laddr != *f.laddr,
		f.typ != "" && clientType(o) != f.typ,
		f.id != 0 && o.id != f.id,
		o == self && f.skipme,
		f.maxAge != 0 && int64(now.Sub(o.created)/time.Second) < f.maxAge:
		return false
	}
	return true
}

// cmdClientKill is CLIENT KILL addr (+OK, or "No such client") and CLIENT
// KILL option value … (the number killed). Others' connections close at
// once; the caller's own closes after this reply.
func cmdClientKill(s *Server, c *client, args [][]byte) resp.Value { return s.killClients(s, c, args) }

// killClients is CLIENT KILL over set's connections.
func (s *Server) killClients(set clientSet, c *client, args [][]byte) resp.Value {
	f, perr := parseKillFilter(args)
	if perr != nil {
		return resp.Err(perr)
	}
	if f.user != nil && s.n.ACL().Users.Get(*f.user) == nil { // names are case-sensitive, as ACLGetUserByName
		return resp.Err(resp.Errorf("ERR No such user '%s'", *f.user))
	}
	now := time.Now()
	killed := 0
	for _, o := range set.clientList() {
		if !f.matches(o, c, now) {
			continue
		}
		killed++
		if o == c {
			c.closing = true
			continue
		}
		set.kill(o)
	}
	if len(args) == 3 {
		if killed == 0 {
			return resp.Err(errNoSuchClient)
		}
		return resp.OK()
	}
	return resp.Int(int64(killed))
}

// kill closes o's connection and forgets it at once, as Redis's
// freeClient, so CLIENT LIST and INFO no longer count it; o's goroutine
// notices the closed socket (even while it waits, blocking.go) and ends.
func (s *Server) kill(o *client) {
	_ = o.conn.nc.Close()
	s.mu.Lock()
	delete(s.clients, o.id)
	s.mu.Unlock()
}

// dropNormalClients closes the data port's normal connections (not the
// subscribers), as Sentinel has a demoted master do (CLIENT KILL TYPE
// normal): their clients ask their Sentinel for the new master.
func (s *Server) dropNormalClients() {
	n := 0
	for _, o := range s.clientList() {
		if clientType(o) == "normal" {
			s.kill(o)
			n++
		}
	}
	s.log.Info("sentinel facade: this node no longer leads the master's group; its normal clients were disconnected", "clients", n)
}

// cmdClientUnblock is CLIENT UNBLOCK id [TIMEOUT|ERROR]: 1 when client id
// waited in a blocking command and is now told to end it, else 0 (a
// client paused by CLIENT PAUSE is not unblocked: Redis 7.2 crashes on
// TIMEOUT there). The reason is checked before the id, as in Redis.
func cmdClientUnblock(s *Server, _ *client, args [][]byte) resp.Value {
	if len(args) > 4 {
		return resp.Err(resp.ErrSubcommandSyntax(args[0], args[1]))
	}
	asError := false
	if len(args) == 4 {
		switch {
		case resp.EqualFold(args[3], "error"):
			asError = true
		case !resp.EqualFold(args[3], "timeout"):
			return resp.Err(errUnblockReason)
		}
	}
	id, err := resp.ParseInt(args[2])
	if err != nil {
		return resp.Err(resp.ErrNotInteger)
	}
	o := s.clientByID(id)
	if o == nil {
		return resp.Int(0)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.blocked != blockedOnKeys {
		return resp.Int(0)
	}
	select {
	case o.unblockC <- asError:
	default: // told already
		return resp.Int(0)
	}
	// It counts as unblocked from now on, as in Redis, though its reply
	// waits for the group to end its waiter.
	o.blocked = notBlocked
	s.blockedN.Add(-1)
	return resp.Int(1)
}

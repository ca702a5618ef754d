package acl

import (
	"maps"
	"slices"
)

// DefaultUser is the name of the user every connection starts as.
const DefaultUser = "default"

// Users is the set of users, by name: what ACL SETUSER, DELUSER, LIST,
// USERS, LOAD and SAVE work on, and what the cluster replicates.
type Users struct {
	cmds  *Commands
	users map[string]*User
	// allChannels is acl-pubsub-default allchannels: new users and
	// selectors start with &* (Redis 7's default is resetchannels).
	allChannels bool
}

// NewUsers is a set holding only the default user ("on nopass ~* &*
// +@all"), rules applying to cmds.
func NewUsers(cmds *Commands) *Users {
	s := &Users{cmds: cmds, users: map[string]*User{}}
	s.users[DefaultUser] = s.defaultUser()
	return s
}

// defaultUser is ACLCreateDefaultUser.
func (s *Users) defaultUser() *User {
	u := newUser(s.cmds, DefaultUser, s.allChannels)
	for _, r := range []string{"+@all", "~*", "&*", "on", "nopass"} {
		_ = u.set(s.cmds, r, s.allChannels) // cannot fail
	}
	return u
}

// SetPubsubDefault is the acl-pubsub-default setting: allChannels true
// for "allchannels", false for "resetchannels". It applies to users and
// selectors made (and users reset) afterwards, as in Redis.
func (s *Users) SetPubsubDefault(allChannels bool) { s.allChannels = allChannels }

// Get is the user named name (exact bytes), nil if none.
func (s *Users) Get(name string) *User { return s.users[name] }

// Names are the users' names in Redis's order (byte order): ACL USERS.
func (s *Users) Names() []string { return slices.Sorted(maps.Keys(s.users)) }

// List is ACL LIST: each user's line, by name.
func (s *Users) List() []string {
	names := s.Names()
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = s.users[n].ListLine()
	}
	return out
}

// SetUser is ACL SETUSER name rules…: the user is created if needed and
// the rules applied to a copy, which replaces the user only when every
// rule succeeded. An existing *User is updated in place, so connections
// that hold it see the new rules. Errors: ErrUsernameSpaces, a
// *ParenError, or a *RuleError naming the rule that failed.
func (s *Users) SetUser(name string, rules ...string) error {
	if hasSpaces(name) {
		return ErrUsernameSpaces
	}
	merged, open, ok := mergeSelectors(rules)
	if !ok {
		return &ParenError{Rule: cstr(rules[open])}
	}
	u := s.users[name]
	tmp := newUser(s.cmds, name, s.allChannels)
	if u != nil {
		tmp = u.clone()
	}
	for _, r := range merged {
		if err := tmp.set(s.cmds, r, s.allChannels); err != nil {
			return &RuleError{Rule: cstr(r), Err: err}
		}
	}
	if u == nil {
		s.users[name] = tmp
	} else {
		*u = *tmp
	}
	return nil
}

// DelUsers is ACL DELUSER: how many of names existed and are gone. The
// default user cannot be removed (ErrDefaultUser, nothing removed). The
// server disconnects the clients authenticated as a removed user.
func (s *Users) DelUsers(names ...string) (int, error) {
	if slices.Contains(names, DefaultUser) {
		return 0, ErrDefaultUser
	}
	n := 0
	for _, name := range names {
		if _, ok := s.users[name]; ok {
			delete(s.users, name)
			n++
		}
	}
	return n, nil
}

// Authenticate is AUTH's check (ACLCheckUserCredentials): the user when
// name exists, is on, and the password is one of its own (or it is
// nopass); nil otherwise. The server logs a failure as an ACL LOG entry
// with ReasonAuth and object "AUTH" (the command's name as sent).
func (s *Users) Authenticate(name string, password []byte) *User {
	u := s.users[name]
	if u == nil || !u.Authenticate(password) {
		return nil
	}
	return u
}

// Clone is a deep copy of the set (sharing the command table).
func (s *Users) Clone() *Users {
	c := &Users{cmds: s.cmds, users: make(map[string]*User, len(s.users)), allChannels: s.allChannels}
	for n, u := range s.users {
		c.users[n] = u.clone()
	}
	return c
}

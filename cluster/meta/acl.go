package meta

import (
	"errors"
	"fmt"
	"slices"

	"github.com/slotraft/slotraft/acl"
)

// The ACL user set is cluster state beside the map: one ACL SETUSER on any
// node holds on every node. Its entries change the users, never the map,
// so the FSM applies them on its own (aclstate.go); their types carry
// IgnoreUnknown: a node of the previous release skips them and keeps
// serving with its default user during a rolling upgrade.
//
// Every entry carries AllChannels, the proposer's acl-pubsub-default, as
// it decides the channels of users that the entry creates or resets: the
// replicas must not read their own setting.

// ACLSetUser is ACL SETUSER Name Rules… (and requirepass: SETUSER default
// resetpass >pw, or nopass). All or nothing, as in Redis.
type ACLSetUser struct {
	Name        []byte   `json:"name"`
	Rules       [][]byte `json:"rules,omitempty"`
	AllChannels bool     `json:"allchannels,omitempty"`
	// RequirePass, when set, records the rules as the requirepass setting
	// (CONFIG GET requirepass): Rules then are Redis's
	// ACLUpdateDefaultUserPassword.
	RequirePass *[]byte `json:"requirepass,omitempty"`
	// IfUnset applies a RequirePass only while none was ever set: a
	// node's config file at start, which must not undo a CONFIG SET.
	IfUnset bool `json:"ifunset,omitempty"`
}

// ACLDelUsers is ACL DELUSER Names….
type ACLDelUsers struct {
	Names [][]byte `json:"names"`
}

// ACLLoad replaces the whole set with an aclfile's users (ACL LOAD): Data
// is the file's contents, File its name for the error texts. IfDefault
// applies it only while no ACL entry has ever changed the set: the load
// of a node's aclfile at start, so that nodes started with the same file
// propose it at most once in effect and never undo a later change.
type ACLLoad struct {
	Data        []byte `json:"data"`
	File        string `json:"file"`
	AllChannels bool   `json:"allchannels,omitempty"`
	IfDefault   bool   `json:"ifdefault,omitempty"`
}

// errNotMapCommand: an ACL entry given to Apply (the map's); the FSM
// applies them to the user set.
var errNotMapCommand = errors.New("meta: an ACL entry changes the users, not the map")

func (ACLSetUser) apply(*Map) error  { return errNotMapCommand }
func (ACLDelUsers) apply(*Map) error { return errNotMapCommand }
func (ACLLoad) apply(*Map) error     { return errNotMapCommand }

// aclCommand is an entry that changes the user set: it applies to a
// copy; an error leaves the set as it was.
type aclCommand interface {
	applyACL(s *acl.Users) error
}

func (c ACLSetUser) applyACL(s *acl.Users) error {
	s.SetPubsubDefault(c.AllChannels)
	rules := make([]string, len(c.Rules))
	for i, r := range c.Rules {
		rules[i] = string(r)
	}
	return s.SetUser(string(c.Name), rules...)
}

func (c ACLDelUsers) applyACL(s *acl.Users) error {
	names := make([]string, len(c.Names))
	for i, n := range c.Names {
		names[i] = string(n)
	}
	_, err := s.DelUsers(names...)
	return err
}

func (c ACLLoad) applyACL(s *acl.Users) error {
	s.SetPubsubDefault(c.AllChannels)
	return s.Load(c.Data, c.File)
}

// ErrACLNotDefault is an IfDefault load refused because the set has
// changed since the cluster began, or an IfUnset requirepass because one
// was set.
var ErrACLNotDefault = errors.New("meta: the ACL users were changed already")

// RequirePassRules are the rules of the requirepass setting
// (ACLUpdateDefaultUserPassword): the default user's passwords replaced
// by pw, or nopass when pw is empty.
func RequirePassRules(pw []byte) [][]byte {
	if len(pw) == 0 {
		return [][]byte{[]byte("resetpass"), []byte("nopass")}
	}
	return [][]byte{[]byte("resetpass"), append([]byte(">"), pw...)}
}

// born records, for every user that c made anew, the entry index: a
// connection authenticated as a user of another birth is closed (DELUSER,
// ACL LOAD replace users as Redis frees them).
func bornAfter(old map[string]uint64, before, after *acl.Users, c aclCommand, index uint64) map[string]uint64 {
	out := make(map[string]uint64, len(old)+1)
	_, load := c.(ACLLoad)
	for _, name := range after.Names() {
		switch {
		case name == acl.DefaultUser:
			out[name] = 0 // the default user is updated in place, never replaced
		case load || before.Get(name) == nil:
			out[name] = index
		default:
			out[name] = old[name]
		}
	}
	return out
}

// cloneRules copies rules for an entry (the caller's buffers are reused).
func cloneRules(rules [][]byte) [][]byte {
	out := make([][]byte, len(rules))
	for i, r := range rules {
		out[i] = slices.Clone(r)
		if out[i] == nil {
			out[i] = []byte{}
		}
	}
	return out
}

// NewACLSetUser is an ACLSetUser of copies of name and rules.
func NewACLSetUser(name []byte, rules [][]byte, allChannels bool) ACLSetUser {
	return ACLSetUser{Name: slices.Clone(name), Rules: cloneRules(rules), AllChannels: allChannels}
}

// NewACLDelUsers is an ACLDelUsers of copies of names.
func NewACLDelUsers(names [][]byte) ACLDelUsers { return ACLDelUsers{Names: cloneRules(names)} }

func aclDescribe(c aclCommand) string {
	switch c := c.(type) {
	case ACLSetUser:
		return fmt.Sprintf("setuser %q (%d rules)", c.Name, len(c.Rules)) // never the rules: passwords
	case ACLDelUsers:
		return fmt.Sprintf("deluser %d names", len(c.Names))
	case ACLLoad:
		return fmt.Sprintf("load %s", c.File)
	}
	return "?"
}

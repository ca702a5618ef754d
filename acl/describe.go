package acl

import (
	"strings"

	"github.com/slotraft/slotraft/resp"
)

// flagNames are the user's flags in ACL LIST's order (ACLUserFlags).
func (u *User) flagNames() []string {
	var out []string
	if u.enabled {
		out = append(out, "on")
	} else {
		out = append(out, "off")
	}
	if u.nopass {
		out = append(out, "nopass")
	}
	if u.skipSanitize {
		out = append(out, "skip-sanitize-payload")
	} else {
		out = append(out, "sanitize-payload")
	}
	return out
}

// Describe is ACLDescribeUser: the user's rules as ACL LIST shows them
// after "user <name> " (flags, #hashes, the root selector, then each
// other selector in parentheses). Applied to a new user, they give this
// user back.
func (u *User) Describe() string {
	var b strings.Builder
	for _, f := range u.flagNames() {
		b.WriteString(f + " ")
	}
	for _, p := range u.passwords {
		b.WriteString("#" + p + " ")
	}
	for _, s := range u.selectors {
		if s.root {
			b.WriteString(s.describe())
		} else {
			b.WriteString(" (" + s.describe() + ")")
		}
	}
	return b.String()
}

// ListLine is the user's ACL LIST line (and aclfile line).
func (u *User) ListLine() string { return "user " + u.Name + " " + u.Describe() }

// describe is ACLDescribeSelector.
func (s *selector) describe() string { return strings.Join(s.tokens(false), " ") }

// tokens are the selector's rules as ACL LIST gives them: key patterns
// (or ~*), channel patterns (&*, or resetchannels and each &pattern),
// +@all or -@all and the command rules. exact spells a pattern "*" with
// both accesses "%RW~*", not "~*" (which ACL LIST shows, but which means
// allkeys when read back).
func (s *selector) tokens(exact bool) []string {
	var out []string
	if s.allKeys {
		out = append(out, "~*")
	} else {
		for _, k := range s.keys {
			if exact && k.pattern == "*" && k.perm == permAll {
				out = append(out, "%RW~*")
			} else {
				out = append(out, k.String())
			}
		}
	}
	if s.allChannels {
		out = append(out, "&*")
	} else {
		out = append(out, "resetchannels")
		for _, c := range s.channels {
			out = append(out, "&"+c)
		}
	}
	out = append(out, s.commandHead())
	return append(out, s.rules...)
}

// commandHead is +@all when future commands are allowed, else -@all.
func (s *selector) commandHead() string {
	if s.future {
		return "+@all"
	}
	return "-@all"
}

// commandRules is Redis 7.2's ACLDescribeSelectorCommandRules: +@all or
// -@all (whether future commands are allowed), then the rules still in
// effect in the order they were given. (Redis 7.0 instead recomputed a
// category approximation from the bitmap.)
func (s *selector) commandRules() string {
	return strings.Join(append([]string{s.commandHead()}, s.rules...), " ")
}

// keysText and channelsText are ACL GETUSER's "keys" and "channels".
func (s *selector) keysText() string {
	if s.allKeys {
		return "~*"
	}
	parts := make([]string, len(s.keys))
	for i, k := range s.keys {
		parts[i] = k.String()
	}
	return strings.Join(parts, " ")
}

func (s *selector) channelsText() string {
	if s.allChannels {
		return "&*"
	}
	parts := make([]string, len(s.channels))
	for i, c := range s.channels {
		parts[i] = "&" + c
	}
	return strings.Join(parts, " ")
}

// fields are aclAddReplySelectorDescription's three pairs.
func (s *selector) fields() []resp.Value {
	return []resp.Value{
		resp.BulkString("commands"), resp.BulkString(s.commandRules()),
		resp.BulkString("keys"), resp.BulkString(s.keysText()),
		resp.BulkString("channels"), resp.BulkString(s.channelsText()),
	}
}

// GetUserReply is ACL GETUSER's reply for the user: a map of flags (a
// set), passwords (an array of hashes), the root selector's commands,
// keys and channels, and selectors (an array of maps of the others').
func (u *User) GetUserReply() resp.Value {
	flags := make([]resp.Value, 0, 3)
	for _, f := range u.flagNames() {
		flags = append(flags, resp.BulkString(f))
	}
	pass := make([]resp.Value, len(u.passwords))
	for i, p := range u.passwords {
		pass[i] = resp.BulkString(p)
	}
	sels := make([]resp.Value, 0, len(u.selectors)-1)
	for _, s := range u.selectors[1:] {
		sels = append(sels, resp.Map(s.fields()...))
	}
	kvs := []resp.Value{
		resp.BulkString("flags"), resp.Set(flags...),
		resp.BulkString("passwords"), resp.Array(pass...),
	}
	kvs = append(kvs, u.selectors[0].fields()...)
	kvs = append(kvs, resp.BulkString("selectors"), resp.Array(sels...))
	return resp.Map(kvs...)
}

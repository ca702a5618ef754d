package acl

import (
	"strings"

	"github.com/slotraft/slotraft/resp"
)

// categoryNames are Redis 7.2's ACL categories in ACL CAT's order (acl.c).
var categoryNames = []string{
	"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
	"bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow",
	"blocking", "dangerous", "connection", "transaction", "scripting",
}

// CategoryNames is ACL CAT without an argument.
func CategoryNames() []string { return append([]string(nil), categoryNames...) }

// knownCategory finds a category by name in any case, as Redis's
// ACLGetCommandCategoryFlagByName; "" if unknown.
func knownCategory(name string) string {
	for _, c := range categoryNames {
		if strings.EqualFold(c, name) {
			return c
		}
	}
	return ""
}

// command is one command of the table as the engine sees it: its id (an
// index into a selector's bit set), categories and subcommands' ids.
type command struct {
	meta   *resp.Command
	id     int
	cats   map[string]bool
	subs   []int // ids of the subcommands of a container
	parent int   // id of the container, -1 for a top-level command
}

// Commands is the command table ACL rules apply to: every command and
// subcommand with an id and its categories (resp.Command.Categories: the
// declared ones plus those implied by the flags, as Redis's
// setImplicitACLCategories). Build it once from the server's table; it is
// read-only afterwards and may be shared by any number of user sets.
type Commands struct {
	list   []*command
	byName map[string]*command // full lowercase names: "get", "config|get"
}

// NewCommands indexes cmds (top-level commands, their subcommands in
// Subcommands) in their order.
func NewCommands(cmds []*resp.Command) *Commands {
	t := &Commands{byName: map[string]*command{}}
	for _, c := range cmds {
		parent := t.add(c, -1)
		for _, sc := range c.Subcommands {
			sub := t.add(sc, parent.id)
			parent.subs = append(parent.subs, sub.id)
		}
	}
	return t
}

func (t *Commands) add(c *resp.Command, parent int) *command {
	cmd := &command{meta: c, id: len(t.list), cats: map[string]bool{}, parent: parent}
	for _, cat := range c.Categories() {
		cmd.cats[strings.TrimPrefix(cat, "@")] = true
	}
	t.list = append(t.list, cmd)
	t.byName[strings.ToLower(c.Name)] = cmd
	return cmd
}

// lookup is Redis's ACLLookupCommand (lookupCommandBySdsLogic): "name" or
// "container|sub", any case; a '|' after a command without subcommands, or
// more than one '|', finds nothing.
func (t *Commands) lookup(name string) *command {
	base, sub, hasSub := strings.Cut(name, "|")
	c := t.byName[strings.ToLower(base)]
	if c == nil || !hasSub {
		return c
	}
	if len(c.subs) == 0 || strings.Contains(sub, "|") {
		return nil
	}
	return t.byName[strings.ToLower(base+"|"+sub)]
}

// Category is ACL CAT <category>: the full names of the commands and
// subcommands in it, in table order; Redis's error for an unknown one.
func (t *Commands) Category(name string) ([]string, error) {
	cat := knownCategory(name)
	if cat == "" {
		return nil, resp.Errorf("ERR Unknown category '%s'", name[:min(len(name), 128)]) // C's %.128s: bytes
	}
	var out []string
	for _, c := range t.list {
		if c.cats[cat] {
			out = append(out, c.meta.Name)
		}
	}
	return out, nil
}

// size is the number of command ids.
func (t *Commands) size() int { return len(t.list) }

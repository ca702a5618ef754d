package acl

import (
	"encoding/json"
	"fmt"
)

// Perms is the user's permissions without its flags and passwords: what
// a script's log entry carries so that every replica checks the script's
// calls as this user (docs/security.md). The same user gives the same
// bytes; no secret is in them.
func (u *User) Perms() []byte {
	rec := userRecord{Name: []byte(u.Name), Rules: toBytes(u.selectors[0].tokens(true))}
	for _, sel := range u.selectors[1:] {
		rec.Selectors = append(rec.Selectors, toBytes(sel.tokens(true)))
	}
	data, _ := json.Marshal(rec) // strings and slices only: cannot fail
	return data
}

// UserFromPerms is the user Perms gave, rules applying to cmds: its
// Check answers as the original's. The user is off and has no password.
// An error when data is not Perms's form or a rule does not apply (a
// command this table does not know).
func UserFromPerms(cmds *Commands, data []byte) (*User, error) {
	var rec userRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("acl: unmarshal permissions: %w", err)
	}
	u, err := rec.user(cmds)
	if err != nil {
		return nil, fmt.Errorf("acl: permissions of %q: %w", rec.Name, err)
	}
	return u, nil
}

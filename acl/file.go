package acl

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// LoadError is ACL LOAD's failure: Error is Redis's reply text without
// "ERR " (every problem found, then the warning that nothing changed); it
// unwraps to ErrLoad.
type LoadError struct{ Text string }

func (e *LoadError) Error() string { return e.Text }

func (e *LoadError) Unwrap() error { return ErrLoad }

// Save is what ACL SAVE writes: each user's ACL LIST line, by name, one
// per line.
func (s *Users) Save() []byte {
	var b strings.Builder
	for _, l := range s.List() {
		b.WriteString(l + "\n")
	}
	return []byte(b.String())
}

// Load is ACL LOAD (ACLLoadFromFile) from an aclfile's contents; filename
// is named in the error texts. All or nothing: on any error the set is
// unchanged and the error is a *LoadError listing every problem. On
// success the set holds the file's users (and the default user if the
// file has none); the default *User is updated in place, every other user
// is new, so the server disconnects the clients of the old ones as Redis
// does.
func (s *Users) Load(data []byte, filename string) error {
	users, errs := s.parseFile(string(data), filename)
	if errs != "" {
		return &LoadError{Text: errs + "WARNING: ACL errors detected, no change to the previously active ACL rules was performed"}
	}
	def := users[DefaultUser]
	if def == nil {
		def = s.defaultUser()
	}
	if old := s.users[DefaultUser]; old != nil {
		*old = *def
		def = old
	}
	users[DefaultUser] = def
	s.users = users
	return nil
}

// parseFile reads every line of an aclfile into a new set of users, with
// Redis's error texts concatenated ("" when there is none).
func (s *Users) parseFile(data, filename string) (map[string]*User, string) {
	users := map[string]*User{}
	var errs strings.Builder
	for i, line := range strings.Split(data, "\n") {
		line = strings.Trim(line, " \t\r\n")
		if line == "" {
			continue
		}
		args := strings.Split(line, " ")
		n := i + 1
		switch {
		case args[0] != "user" || len(args) < 2:
			fmt.Fprintf(&errs, "%s:%d should start with user keyword followed by the username. ", filename, n)
			continue
		case hasSpaces(args[1]):
			fmt.Fprintf(&errs, "'%s:%d: username '%s' contains invalid characters. ", filename, n, args[1])
			continue
		case users[args[1]] != nil:
			fmt.Fprintf(&errs, "WARNING: Duplicate user '%s' found on line %d. ", args[1], n)
			continue
		}
		u := newUser(s.cmds, args[1], s.allChannels)
		users[args[1]] = u
		s.loadRules(u, args[2:], fmt.Sprintf("%s:%d", filename, n), &errs)
	}
	return users, errs.String()
}

// loadRules applies one line's rules to u: an unknown command is named
// for every rule it fails, any other error only for the first.
func (s *Users) loadRules(u *User, args []string, where string, errs *strings.Builder) {
	merged, _, ok := mergeSelectors(args)
	if !ok {
		fmt.Fprintf(errs, "%s: Unmatched parenthesis in selector definition.", where)
		return
	}
	reported := false
	for _, r := range merged {
		r = strings.Trim(r, "\t\r\n")
		err := u.set(s.cmds, r, s.allChannels)
		switch {
		case err == nil:
		case errors.Is(err, ErrUnknownCommand):
			fmt.Fprintf(errs, "%s: Error in applying operation '%s': %s. ", where, cstr(r), err)
		case !reported:
			fmt.Fprintf(errs, "%s: %s. ", where, err)
			reported = true
		}
	}
}

// userRecord is one user in Marshal's form: its flags, #hashes and root
// selector's rules, and each other selector's rules, as ACL LIST gives
// them but never joined into one line, so that no pattern (one with ')'
// or quotes, which Redis's own ACL LIST cannot read back inside a
// selector) changes meaning on the way back.
//
// Names and rules are bytes (base64 in JSON): a JSON string would turn
// bytes that are not UTF-8 into U+FFFD.
type userRecord struct {
	Name      []byte     `json:"name"`
	Rules     [][]byte   `json:"rules"`
	Selectors [][][]byte `json:"selectors,omitempty"`
}

// Marshal is the set's replicable form: JSON, users by name, every list
// in its order, so equal sets give equal bytes.
func (s *Users) Marshal() []byte {
	recs := make([]userRecord, 0, len(s.users))
	for _, name := range s.Names() {
		u := s.users[name]
		rules := u.flagNames()
		for _, p := range u.passwords {
			rules = append(rules, "#"+p)
		}
		rec := userRecord{Name: []byte(name), Rules: toBytes(append(rules, u.selectors[0].tokens(true)...))}
		for _, sel := range u.selectors[1:] {
			rec.Selectors = append(rec.Selectors, toBytes(sel.tokens(true)))
		}
		recs = append(recs, rec)
	}
	data, _ := json.Marshal(recs) // strings and slices only: cannot fail
	return data
}

// Unmarshal is the set Marshal gave, rules applying to cmds; an error
// when a rule does not apply (a command this table does not know).
func Unmarshal(cmds *Commands, data []byte) (*Users, error) {
	var recs []userRecord
	if err := json.Unmarshal(data, &recs); err != nil {
		return nil, fmt.Errorf("acl: unmarshal users: %w", err)
	}
	s := &Users{cmds: cmds, users: map[string]*User{}}
	for _, rec := range recs {
		u, err := rec.user(cmds)
		if err != nil {
			return nil, fmt.Errorf("acl: unmarshal user %q: %w", rec.Name, err)
		}
		s.users[string(rec.Name)] = u
	}
	if s.users[DefaultUser] == nil {
		s.users[DefaultUser] = s.defaultUser()
	}
	return s, nil
}

// user rebuilds a user from its record, each rule applied as it is.
func (rec userRecord) user(cmds *Commands) (*User, error) {
	u := newUser(cmds, string(rec.Name), false)
	for _, r := range rec.Rules {
		if err := u.set(cmds, string(r), false); err != nil {
			return nil, &RuleError{Rule: string(r), Err: err}
		}
	}
	for _, rules := range rec.Selectors {
		sel := newSelector(cmds, false, false)
		for _, r := range rules {
			if err := sel.set(cmds, string(r)); err != nil {
				return nil, &RuleError{Rule: string(r), Err: err}
			}
		}
		u.selectors = append(u.selectors, sel)
	}
	return u, nil
}

func toBytes(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

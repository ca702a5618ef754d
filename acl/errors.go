package acl

import "fmt"

// Reason texts are Redis's, capitalised as Redis writes them; a reply
// adds "ERR " in front (resp.ErrorText).
type reasonError string

func (e reasonError) Error() string { return string(e) }

// The reasons a rule fails, with Redis 7.2's texts (ACLSetUserStringError).
// Compare with errors.Is; SetUser wraps them in a *RuleError.
const (
	ErrSyntax          = reasonError("Syntax error")
	ErrUnknownCommand  = reasonError("Unknown command or category name in ACL")
	ErrKeyAfterAll     = reasonError("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")
	ErrChannelAfterAll = reasonError("Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels")
	ErrNoSuchPassword  = reasonError("The password you are trying to remove from the user does not exist")
	ErrBadHash         = reasonError("The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters")
	ErrSubcommandArg   = reasonError("Allowing first-arg of a subcommand is not supported")
	ErrDuplicateUser   = reasonError("Duplicate user found. A user can only be defined once in config files")
	ErrUsernameSpaces  = reasonError("Usernames can't contain spaces or null characters")
	ErrDefaultUser     = reasonError("The 'default' user cannot be removed")
	ErrUnmatchedParen  = reasonError("Unmatched parenthesis in acl selector")
	ErrNoSuchUser      = reasonError("no such user")
	ErrGenPassBits     = reasonError("ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")
	ErrLoad            = reasonError("ACL errors detected, no change to the previously active ACL rules was performed")
)

// RuleError is a rule of ACL SETUSER that failed: Error is Redis's reply
// text without its "ERR " prefix (resp.ErrorText adds it), and it unwraps
// to the reason (ErrSyntax, ErrUnknownCommand…).
type RuleError struct {
	Rule string
	Err  error
}

func (e *RuleError) Error() string {
	return fmt.Sprintf("Error in ACL SETUSER modifier '%s': %s", e.Rule, e.Err.Error())
}

func (e *RuleError) Unwrap() error { return e.Err }

// ParenError is ACL SETUSER's unmatched parenthesis: Rule is the argument
// where the selector starts.
type ParenError struct{ Rule string }

func (e *ParenError) Error() string {
	return fmt.Sprintf("Unmatched parenthesis in acl selector starting at '%s'.", e.Rule)
}

func (e *ParenError) Unwrap() error { return ErrUnmatchedParen }

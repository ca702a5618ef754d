package acl

import "github.com/slotraft/slotraft/resp"

// The errors of AUTH and of commands before it, as Redis 7.2.
var (
	// ErrWrongPass is AUTH's and HELLO … AUTH's failure (addAuthErrReply).
	ErrWrongPass = resp.NewError("WRONGPASS invalid username-password pair or user is disabled.")
	// ErrAuthNoPassword is AUTH <password> while the default user is
	// nopass.
	ErrAuthNoPassword = resp.NewError("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
	// ErrNoAuth is any command but a no_auth one (AUTH, HELLO…) on a
	// connection that must authenticate first.
	ErrNoAuth = resp.NewError("NOAUTH Authentication required.")
	// ErrHelloNoAuth is HELLO <proto> without AUTH on such a connection.
	ErrHelloNoAuth = resp.NewError("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
)

// AuthRequired is Redis's authRequired for a connection not yet
// authenticated: whether it must AUTH before other commands (the default
// user has a password, or is off).
func (s *Users) AuthRequired() bool {
	d := s.users[DefaultUser]
	return !d.nopass || !d.enabled
}

// DefaultNoPass reports whether the default user is nopass: AUTH with
// only a password then answers ErrAuthNoPassword.
func (s *Users) DefaultNoPass() bool { return s.users[DefaultUser].nopass }

// SetRequirePass is the requirepass setting (ACLUpdateDefaultUserPassword):
// the default user's passwords are replaced by password, or it becomes
// nopass when password is empty.
func (s *Users) SetRequirePass(password string) {
	d := s.users[DefaultUser]
	_ = d.set(s.cmds, "resetpass", s.allChannels) // cannot fail
	if password == "" {
		_ = d.set(s.cmds, "nopass", s.allChannels)
		return
	}
	_ = d.set(s.cmds, ">"+password, s.allChannels)
}

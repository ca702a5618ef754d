package server

import (
	"github.com/slotraft/slotraft/acl"
	"github.com/slotraft/slotraft/resp"
)

// authenticate is AUTH's and HELLO … AUTH's check (ACLAuthenticateUser):
// +OK and the connection becomes the user's, or WRONGPASS, counted and
// logged in ACL LOG (reason auth, object AUTH, the name tried).
func (s *Server) authenticate(c *client, name, pass []byte) resp.Value {
	st := s.n.ACL()
	u := st.Users.Authenticate(string(name), pass)
	if u == nil {
		ctx := acl.ContextToplevel
		if inMulti(c) || c.inExec { // run by EXEC: Redis's client is still in MULTI
			ctx = acl.ContextMulti
		}
		s.aclNote(c, &acl.Denial{Reason: acl.ReasonAuth}, ctx, "AUTH", string(name))
		return resp.Err(acl.ErrWrongPass)
	}
	c.setACLUser(u.Name, st.Born(u.Name))
	c.acl.authed = true
	return resp.OK()
}

// mustAuth reports whether c must authenticate before other commands.
func (s *Server) mustAuth(c *client) bool {
	return !c.acl.authed && s.n.ACL().Users.AuthRequired()
}

package server

import "github.com/slotraft/slotraft/resp"

// CLIENT REPLY ON|OFF|SKIP, as Redis: OFF drops every reply from then on
// (its own included) until ON, which answers +OK; SKIP drops its own
// reply and the next command's (nothing while OFF). Pub/sub messages and
// subscribe confirmations are pushed all the same, as Redis's
// CLIENT_PUSHING does.

func cmdClientReply(_ *Server, c *client, args [][]byte) resp.Value {
	switch {
	case resp.EqualFold(args[2], "on"):
		c.replyOff, c.replySkip = false, false
		return resp.OK()
	case resp.EqualFold(args[2], "off"):
		c.replyOff = true
	case resp.EqualFold(args[2], "skip"):
		c.skipNext = !c.replyOff
	default:
		return resp.Err(resp.ErrSyntax)
	}
	c.silent = true
	return resp.Value{}
}

// send queues v, the one reply of a command of c, unless CLIENT REPLY
// drops it; errors count in the error stats either way, as in Redis.
func (s *Server) send(c *client, v resp.Value) {
	if v.IsError() {
		s.cstats.errorReply(v)
	}
	quiet := c.replyOff || c.replySkip || c.silent
	c.replied()
	if !quiet {
		s.stats.netOut.Add(int64(c.reply(v)))
	}
}

// sendPush queues v, one of the replies of a subscribe-family command,
// which CLIENT REPLY does not silence.
func (s *Server) sendPush(c *client, v resp.Value) {
	s.stats.netOut.Add(int64(c.reply(v)))
}

// replied ends a command for CLIENT REPLY: SKIP's effect lasts one
// command, as Redis's resetClient.
func (c *client) replied() {
	c.silent = false
	c.replySkip, c.skipNext = c.skipNext, false
}

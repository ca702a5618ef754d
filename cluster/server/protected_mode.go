package server

import (
	"net"
	"time"
)

// protected-mode, as Redis 7.2's clientAcceptHandler: while it is on and
// the default user needs no password, a client connecting from anywhere
// but loopback gets Redis's -DENIED text and is closed. A node listening
// on loopback only never sees such a client; one listening on a public
// address without a password refuses them until a password is set or
// protected-mode is turned off (the Docker image turns it off, as Redis's
// image does).

const protectedModeDenied = "-DENIED Redis is running in protected mode because protected " +
	"mode is enabled and no password is set for the default user. " +
	"In this mode connections are only accepted from the loopback interface. " +
	"If you want to connect from external computers to Redis you " +
	"may adopt one of the following solutions: " +
	"1) Just disable protected mode sending the command " +
	"'CONFIG SET protected-mode no' from the loopback interface " +
	"by connecting to Redis from the same host the server is " +
	"running, however MAKE SURE Redis is not publicly accessible " +
	"from internet if you do so. Use CONFIG REWRITE to make this " +
	"change permanent. " +
	"2) Alternatively you can just disable the protected mode by " +
	"editing the Redis configuration file, and setting the protected " +
	"mode option to 'no', and then restarting the server. " +
	"3) If you started the server manually just for testing, restart " +
	"it with the '--protected-mode no' option. " +
	"4) Set up an authentication password for the default user. " +
	"NOTE: You only need to do one of the above things in order for " +
	"the server to start accepting connections from the outside.\r\n"

func protectedModeApply(s *Server, v configValue) error {
	s.protectedMode.Store(v.num == 1)
	return nil
}

// protectedRefused reports whether nc is refused by protected mode; if so
// it has been told why and closed.
func (s *Server) protectedRefused(nc net.Conn) bool {
	if !s.protectedMode.Load() || !s.n.ACL().Users.DefaultNoPass() || isLoopback(nc.RemoteAddr()) {
		return false
	}
	s.stats.rejected.Add(1)
	_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = nc.Write([]byte(protectedModeDenied))
	_ = nc.Close()
	return true
}

// isLoopback is Redis's connIsLocal: a loopback IP (a Unix socket counts).
func isLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return !ok || tcp.IP.IsLoopback()
}

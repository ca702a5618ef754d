package server

import (
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
)

// What CONFIG parameters change in slotraft, and the checks of the special
// and string parameters. The parameters with no hook here are stored and
// reported only (docs/compatibility.md lists them).

// connSettings are the parameters that shape client connections, read by
// the accept loop and each connection without locks.
type connSettings struct {
	maxBulkLen  atomic.Int64 // proto-max-bulk-len
	maxQueryBuf atomic.Int64 // client-query-buffer-limit
	maxClients  atomic.Int64 // maxclients
	idleSecs    atomic.Int64 // timeout: close a client idle this long (0 never)
	keepAlive   atomic.Int64 // tcp-keepalive, seconds (0 off)
}

// limits are the protocol limits of a new connection's request reader.
func (cs *connSettings) limits() resp.Limits {
	return resp.Limits{MaxBulkLen: cs.maxBulkLen.Load(), MaxQueryBuffer: cs.maxQueryBuf.Load()}
}

func storeInto(f func(*connSettings) *atomic.Int64) func(*Server, configValue) error {
	return func(s *Server, v configValue) error {
		f(&s.connCfg).Store(v.num)
		return nil
	}
}

var (
	applyMaxBulkLen       = storeInto(func(c *connSettings) *atomic.Int64 { return &c.maxBulkLen })
	applyQueryBufferLimit = storeInto(func(c *connSettings) *atomic.Int64 { return &c.maxQueryBuf })
	applyMaxClients       = storeInto(func(c *connSettings) *atomic.Int64 { return &c.maxClients })
	applyIdleTimeout      = storeInto(func(c *connSettings) *atomic.Int64 { return &c.idleSecs })
	applyKeepAlive        = storeInto(func(c *connSettings) *atomic.Int64 { return &c.keepAlive })
)

// obufLimitParam is client-output-buffer-limit: its value lives in the
// pub/sub limits, which enforce its pubsub class (pubsub_limits.go).
func obufLimitParam() *configParam {
	p := &configParam{name: "client-output-buffer-limit", def: defaultObufLimits.String(),
		parse: func(cur, v string) (configValue, error) {
			base, err := parseObufLimits(defaultObufLimits, cur)
			if err != nil {
				base = defaultObufLimits
			}
			lim, err := parseObufLimits(base, v)
			if err != nil {
				return configValue{}, err
			}
			return configValue{text: lim.String()}, nil
		}}
	return p.onGet(func(s *Server) string { return s.ps.limits.Load().String() }).
		onApply(func(s *Server, v configValue) error {
			lim, err := parseObufLimits(defaultObufLimits, v.text)
			if err == nil {
				s.ps.limits.Store(&lim)
			}
			return err
		})
}

// notifyEventsParam is notify-keyspace-events: the node keeps its classes
// (notify.go).
func notifyEventsParam() *configParam {
	p := &configParam{name: "notify-keyspace-events", def: "",
		parse: func(_, v string) (configValue, error) {
			f, err := fsm.ParseNotifyClasses(v)
			if err != nil {
				return configValue{}, err
			}
			return configValue{text: f.String(), num: int64(f)}, nil
		}}
	return p.onGet(func(s *Server) string { return s.n.NotifyClasses().String() }).
		onApply(func(s *Server, v configValue) error {
			s.n.SetNotifyClasses(fsm.NotifyClass(v.num))
			return nil
		})
}

// shutdownParam is shutdown-on-sigint or -sigterm: flags, where save and
// nosave exclude each other.
func shutdownParam(name string) *configParam {
	return specialParam(name, noAlias, 0, "default", func(v string) (configValue, error) {
		x, err := enumShutdown.parse(v)
		if err == nil && x.num&1 != 0 && x.num&2 != 0 {
			return configValue{}, errShutdownFlags
		}
		return x, err
	}).multi()
}

var errShutdownFlags = errors.New("shutdown options SAVE and NOSAVE can't be used simultaneously")

// workingDir is dir's default, the process's directory as Redis reports
// it (getcwd).
func workingDir() string {
	d, err := os.Getwd()
	if err != nil {
		return ""
	}
	return d
}

// parseDir accepts an existing directory with Redis's chdir error texts.
// slotraft does not change its directory (its data directory is a flag):
// the value is stored and reported only.
func parseDir(v string) (configValue, error) {
	st, err := os.Stat(v)
	switch {
	case err != nil:
		var errno syscall.Errno
		if errors.As(err, &errno) {
			return configValue{}, errors.New(errno.Error()) // strerror's text, as Redis
		}
		return configValue{}, err
	case !st.IsDir():
		return configValue{}, errors.New(syscall.ENOTDIR.Error())
	}
	return configValue{text: v}, nil
}

// checkBaseName is Redis's check that a file name has no directory part.
func checkBaseName(name, what string, nonEmpty bool) func(string) error {
	return func(v string) error {
		if nonEmpty && v == "" {
			return errors.New(name + " can't be empty")
		}
		if strings.ContainsRune(v, '/') {
			return errors.New(name + " can't be a path, just " + what)
		}
		return nil
	}
}

func checkHostname(v string) error {
	if len(v) >= 256 {
		return resp.NewError("Hostnames must be less than 256 characters")
	}
	for _, c := range []byte(v) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return resp.NewError("Hostnames may only contain alphanumeric characters, hyphens or dots")
		}
	}
	return nil
}

// checkNodename is Redis's isValidAuxString: no spaces, no control
// characters.
func checkNodename(v string) error {
	for _, c := range []byte(v) {
		if c < '!' || c > '~' {
			return resp.NewError("Announced human node name contained invalid character")
		}
	}
	return nil
}

// procTitleVars are the variables of proc-title-template; those that
// expand to nothing when Redis validates a template are false.
var procTitleVars = map[string]bool{"title": false, "listen-addr": true, "server-mode": true,
	"port": true, "tls-port": true, "unixsocket": false, "config-file": false}

// checkProcTitle refuses a template with an unknown variable, an unclosed
// brace or nothing but empty variables and spaces.
func checkProcTitle(v string) error {
	bad := errors.New("template format is invalid or contains unknown variables")
	nonEmpty := false
	for i := 0; i < len(v); i++ {
		switch {
		case strings.HasPrefix(v[i:], "{{") || strings.HasPrefix(v[i:], "}}"):
			nonEmpty = true
			i++
		case v[i] == '{':
			end := strings.IndexByte(v[i:], '}')
			if end < 0 {
				return bad
			}
			full, known := procTitleVars[v[i+1:i+end]]
			if !known {
				return bad
			}
			nonEmpty = nonEmpty || full
			i += end
		case v[i] == '}':
			return bad
		case v[i] != ' ':
			nonEmpty = true
		}
	}
	if !nonEmpty {
		return bad
	}
	return nil
}

// readRequests reads c's next requests. With timeout set, a client that
// sends nothing for that long is closed, as Redis does, except a
// subscriber (Redis spares pub/sub clients); a blocked client is not
// reading here, so it is spared too.
func (s *Server) readRequests(c *client) ([]resp.Request, error) {
	idle := time.Duration(s.connCfg.idleSecs.Load()) * time.Second
	if idle <= 0 || c.watch == nil || c.subscribed() {
		return c.conn.rd.Read()
	}
	c.watch.SetIdle(idle)
	reqs, err := c.conn.rd.Read()
	c.watch.SetIdle(0)
	_ = c.watch.Conn.SetReadDeadline(time.Time{})
	return reqs, err
}

// setKeepAlive applies tcp-keepalive to an accepted connection as Redis's
// anetKeepAlive: probes after that many idle seconds, then every third of
// it, three times.
func (s *Server) setKeepAlive(nc net.Conn) {
	if tc, ok := nc.(interface{ NetConn() net.Conn }); ok { // TLS: the TCP connection below
		nc = tc.NetConn()
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return
	}
	secs := time.Duration(s.connCfg.keepAlive.Load()) * time.Second
	if secs <= 0 {
		_ = tc.SetKeepAlive(false)
		return
	}
	_ = tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: secs, Interval: max(secs/3, time.Second), Count: 3})
}

// reportPort makes CONFIG GET port show the port the server listens on.
func (s *Server) reportPort(a net.Addr) {
	if ta, ok := a.(*net.TCPAddr); ok {
		s.cfg.record("port", strconv.Itoa(ta.Port))
	}
}

package server

import (
	"context"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/resp"
)

// CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO (Redis's
// clientCommand), and how a tracking client's commands feed the tracker
// (tracking.go): its reads remember their keys, its proposals carry its
// origin, and invalidations reach its connection between its pipelines.

// trackState is a client's tracking mode, under client.mu. The
// connection's goroutine changes it (CLIENT TRACKING, CACHING, RESET) and
// may read it without the lock; the tracker sets broken.
type trackState struct {
	on, bcast, optin, optout, noloop bool
	caching                          bool   // CLIENT CACHING YES (OPTIN) or NO (OPTOUT), for the next command
	broken                           bool   // the redirection was gone when an invalidation was due
	redirect                         uint64 // the client the invalidations go to (0: this one)
	prefixes                         []string
}

// trackOptions are CLIENT TRACKING ON's options.
type trackOptions struct {
	redirect                     uint64
	bcast, optin, optout, noloop bool
	prefixes                     []string
}

var (
	errTrackRedirTwice  = resp.NewError("ERR A client can only redirect to a single other client")
	errTrackRedirNone   = resp.NewError("ERR The client ID you want redirect to does not exist")
	errTrackPrefixBcast = resp.NewError("ERR PREFIX option requires BCAST mode to be enabled")
	errTrackBcastSwitch = resp.NewError("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
	errTrackOptBcast    = resp.NewError("ERR OPTIN and OPTOUT are not compatible with BCAST")
	errTrackOptBoth     = resp.NewError("ERR You can't specify both OPTIN mode and OPTOUT mode")
	errTrackOptSwitch   = resp.NewError("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
	errCachingMode      = resp.NewError("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
	errCachingYes       = resp.NewError("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
	errCachingNo        = resp.NewError("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
)

// trackingCommands are the CLIENT subcommands of client-side caching.
func trackingCommands(sub func(name string, arity int, since, summary string, run nodeHandler) *command) []*command {
	tracking := sub("tracking", -3, "6.0.0", "Controls server-assisted client-side caching for the connection.", cmdClientTracking)
	tracking.meta.Complexity = "O(1). Some options may introduce additional complexity."
	return []*command{
		sub("caching", 3, "6.0.0", "Instructs the server whether to track the keys in the next request.", cmdClientCaching),
		sub("getredir", 2, "6.0.0", "Returns the client ID to which the connection's tracking notifications are redirected.", cmdClientGetRedir),
		tracking,
		sub("trackinginfo", 2, "6.2.0", "Returns information about server-assisted client-side caching for the connection.", cmdClientTrackingInfo),
	}
}

// cmdClientTracking is CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST]
// [PREFIX p]... [OPTIN] [OPTOUT] [NOLOOP], with Redis's checks in its
// order: every option is parsed first (REDIRECT's client must exist, even
// for OFF), then ON's combinations.
func cmdClientTracking(s *Server, c *client, args [][]byte) resp.Value {
	var o trackOptions
	for j := 3; j < len(args); j++ {
		more := j < len(args)-1
		switch a := args[j]; {
		case resp.EqualFold(a, "redirect") && more:
			j++
			if o.redirect != 0 {
				return resp.Err(errTrackRedirTwice)
			}
			id, err := resp.ParseInt(args[j])
			if err != nil {
				return resp.Err(resp.ErrNotInteger)
			}
			if s.clientByID(id) == nil {
				return resp.Err(errTrackRedirNone)
			}
			o.redirect = uint64(id)
		case resp.EqualFold(a, "bcast"):
			o.bcast = true
		case resp.EqualFold(a, "optin"):
			o.optin = true
		case resp.EqualFold(a, "optout"):
			o.optout = true
		case resp.EqualFold(a, "noloop"):
			o.noloop = true
		case resp.EqualFold(a, "prefix") && more:
			j++
			o.prefixes = append(o.prefixes, string(args[j]))
		default:
			return resp.Err(resp.ErrSyntax)
		}
	}
	switch {
	case resp.EqualFold(args[2], "on"):
		if err := checkTrackOn(&c.trk, o); err != nil {
			return resp.Err(err)
		}
		s.trk.enable(c, o)
	case resp.EqualFold(args[2], "off"):
		s.trk.disable(c)
	default:
		return resp.Err(resp.ErrSyntax)
	}
	return resp.OK()
}

// checkTrackOn is Redis's checks of CLIENT TRACKING ON against the options
// and the client's current mode.
func checkTrackOn(st *trackState, o trackOptions) error {
	switch {
	case !o.bcast && len(o.prefixes) > 0:
		return errTrackPrefixBcast
	case st.on && st.bcast != o.bcast:
		return errTrackBcastSwitch
	case o.bcast && (o.optin || o.optout):
		return errTrackOptBcast
	case o.optin && o.optout:
		return errTrackOptBoth
	case o.optin && st.optout, o.optout && st.optin:
		return errTrackOptSwitch
	case o.bcast:
		return prefixOverlap(st.prefixes, o.prefixes)
	}
	return nil
}

// cmdClientCaching is CLIENT CACHING YES|NO: in OPTIN mode YES, in OPTOUT
// mode NO, makes the next command (or transaction) an exception.
func cmdClientCaching(_ *Server, c *client, args [][]byte) resp.Value {
	st := &c.trk
	if !st.on {
		return resp.Err(errCachingMode)
	}
	switch {
	case resp.EqualFold(args[2], "yes"):
		if !st.optin {
			return resp.Err(errCachingYes)
		}
	case resp.EqualFold(args[2], "no"):
		if !st.optout {
			return resp.Err(errCachingNo)
		}
	default:
		return resp.Err(resp.ErrSyntax)
	}
	c.mu.Lock()
	st.caching = true
	c.mu.Unlock()
	return resp.OK()
}

// cmdClientGetRedir is CLIENT GETREDIR: the redirection, 0 for none, -1
// with tracking off.
func cmdClientGetRedir(_ *Server, c *client, _ [][]byte) resp.Value {
	if !c.trk.on {
		return resp.Int(-1)
	}
	return resp.Int(int64(c.trk.redirect))
}

// cmdClientTrackingInfo is CLIENT TRACKINGINFO: flags (a set), redirect,
// prefixes, as Redis.
func cmdClientTrackingInfo(_ *Server, c *client, _ [][]byte) resp.Value {
	c.mu.Lock()
	st := c.trk
	st.prefixes = append([]string(nil), st.prefixes...)
	c.mu.Unlock()
	flags := []resp.Value{resp.BulkString(map[bool]string{true: "on", false: "off"}[st.on])}
	add := func(on bool, name string) {
		if on {
			flags = append(flags, resp.BulkString(name))
		}
	}
	add(st.bcast, "bcast")
	add(st.optin, "optin")
	add(st.optin && st.caching, "caching-yes")
	add(st.optout, "optout")
	add(st.optout && st.caching, "caching-no")
	add(st.noloop, "noloop")
	add(st.broken, "broken_redirect")
	redirect := int64(-1)
	if st.on {
		redirect = int64(st.redirect)
	}
	prefixes := make([]resp.Value, len(st.prefixes))
	for i, p := range st.prefixes {
		prefixes[i] = resp.BulkString(p)
	}
	return resp.Map(resp.BulkString("flags"), resp.Set(flags...),
		resp.BulkString("redirect"), resp.Int(redirect),
		resp.BulkString("prefixes"), resp.Array(prefixes...))
}

// remembers reports whether c's reads now are to be remembered: tracking
// on, not BCAST, and OPTIN/OPTOUT with CLIENT CACHING allowing it. Only
// the connection's goroutine asks.
func (c *client) remembers() bool {
	st := &c.trk
	return st.on && !st.bcast && !(st.optin && !st.caching) && !(st.optout && st.caching)
}

// trackedReads is the fsm.ReadOpts hook of c's reads: nil unless c
// tracks keys and caches this read (BCAST clients are only marked as
// possibly caching).
func (s *Server) trackedReads(c *client) func(keys [][]byte) {
	if !c.trk.on || (!c.trk.bcast && !c.remembers()) {
		return nil
	}
	return func(keys [][]byte) { s.trk.remember(c, keys) }
}

// proposeCtx is ctx for c's proposals: tagged with its origin when it
// tracks (NOLOOP, and the keys its commands read in the log).
func proposeCtx(ctx context.Context, c *client) context.Context {
	if c == nil || !c.trk.on {
		return ctx
	}
	origin := c.id << 1
	if c.trk.bcast || c.remembers() {
		origin |= originReads
	}
	return cluster.WithOrigin(ctx, origin)
}

// afterTracked runs after each command of a tracking client (the last of
// a run): CLIENT CACHING lasts for one command, or one transaction, and
// does not end with a CLIENT command, as in Redis.
func (s *Server) afterTracked(c *client, last [][]byte) {
	if c.trk.caching && !inMulti(c) && !resp.EqualFold(last[0], "client") {
		c.mu.Lock()
		c.trk.caching = false
		c.mu.Unlock()
	}
}

// pushTo delivers b, an invalidation for client c, now if c's connection
// is between pipelines, else once the replies of the pipeline it runs are
// written (Redis sends the current client's after its reply). It never
// waits.
func (s *Server) pushTo(c *client, b []byte) {
	c.mu.Lock()
	c.pending = append(c.pending, b...)
	c.mu.Unlock()
	c.hasPending.Store(true)
	if c.io.TryLock() {
		s.deliverPending(c)
		c.io.Unlock()
	}
}

// deliverPending queues c's pending invalidations on its output queue
// (made now if it has none: the connection is between pipelines, its
// reply buffer written). c.io is held.
func (s *Server) deliverPending(c *client) {
	c.mu.Lock()
	b := c.pending
	c.pending = nil
	c.hasPending.Store(false)
	c.mu.Unlock()
	if len(b) == 0 || c.gone {
		return
	}
	s.subscriberOf(c).out.push(b)
}

// releaseIO ends the connection goroutine's hold of c.io, delivering what
// was pushed meanwhile.
func (s *Server) releaseIO(c *client) {
	s.deliverPending(c)
	c.io.Unlock()
	for c.hasPending.Load() && c.io.TryLock() {
		s.deliverPending(c)
		c.io.Unlock()
	}
}

// trackingHelp are CLIENT HELP's lines of these subcommands.
var trackingHelp = struct{ caching, tracking []string }{
	caching: []string{
		"CACHING (YES|NO)",
		"    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
		"GETREDIR",
		"    Return the client ID we are redirecting to when tracking is enabled.",
	},
	tracking: []string{
		"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
		"         [OPTIN] [OPTOUT] [NOLOOP]",
		"    Control server assisted client side caching.",
		"TRACKINGINFO",
		"    Report tracking status for the current connection.",
	},
}

// trackFlags are CLIENT LIST's tracking flags: t, R, B. c.mu is held.
func (c *client) trackFlags(f []byte) []byte {
	if c.trk.on {
		f = append(f, 't')
	}
	if c.trk.on && c.trk.broken {
		f = append(f, 'R')
	}
	if c.trk.on && c.trk.bcast {
		f = append(f, 'B')
	}
	return f
}

// redirField is CLIENT LIST's redir=. c.mu is held.
func (c *client) redirField() int64 {
	if !c.trk.on {
		return -1
	}
	return int64(c.trk.redirect)
}

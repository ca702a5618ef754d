package server

import (
	"math"
	"sync"
	"time"

	"github.com/slotraft/slotraft/resp"
)

// CLIENT PAUSE and CLIENT UNPAUSE, as Redis 7.2's pauseClientsByClient:
// while a pause lasts, every command (ALL) or every command that writes or
// may replicate (WRITE: write commands, EVAL/EVALSHA/FCALL, PUBLISH,
// SPUBLISH, PFCOUNT…, and EXEC of a transaction holding one) waits before
// it runs, in every client, the pausing one included; active expiry stops
// in every group this node leads. A new pause keeps the later end and the
// stricter mode of the two; UNPAUSE ends it at once.

var (
	errPauseMode      = resp.NewError("ERR CLIENT PAUSE mode must be WRITE or ALL")
	errTimeoutNotInt  = resp.NewError("ERR timeout is not an integer or out of range")
	errTimeoutNeg     = resp.NewError("ERR timeout is negative")
	errTimeoutOfRange = resp.NewError("ERR timeout is out of range")
)

// parseTimeoutMs is Redis's getTimeoutFromObjectOrReply for a timeout in
// milliseconds (CLIENT PAUSE, WAIT): an integer, not negative, whose end
// from now does not overflow.
func parseTimeoutMs(b []byte, now time.Time) (int64, error) {
	ms, err := resp.ParseInt(b)
	switch {
	case err != nil:
		return 0, errTimeoutNotInt
	case ms < 0:
		return 0, errTimeoutNeg
	case ms > math.MaxInt64-now.UnixMilli():
		return 0, errTimeoutOfRange
	}
	return ms, nil
}

// timeoutDuration is ms as a Duration, at most a century (a Duration
// holds 292 years).
func timeoutDuration(ms int64) time.Duration {
	return time.Duration(min(ms, int64(100*365*24*time.Hour/time.Millisecond))) * time.Millisecond
}

// pauseState is the node's client pause.
type pauseState struct {
	mu  sync.Mutex
	end time.Time // the pause lasts until end; zero when there is none
	all bool      // ALL, else WRITE
	// changed is closed (and replaced) when the pause is lifted or made
	// less strict, so the waiting commands look again.
	changed chan struct{}
}

// current is the pause in force at now: its end and mode, and the
// channel closed at its next change; active false when none.
func (p *pauseState) current(now time.Time) (end time.Time, all bool, changed <-chan struct{}, active bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.changed == nil {
		p.changed = make(chan struct{})
	}
	if !now.Before(p.end) {
		return time.Time{}, false, p.changed, false
	}
	return p.end, p.all, p.changed, true
}

// set pauses until end (the later of end and the pause in force) in the
// stricter mode of all and the one in force.
func (p *pauseState) set(now, end time.Time, all bool) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if now.Before(p.end) {
		all = all || p.all
		if p.end.After(end) {
			end = p.end
		}
	}
	p.end, p.all = end, all
	return end
}

// lift ends the pause and wakes the commands that wait for it.
func (p *pauseState) lift() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.end, p.all = time.Time{}, false
	if p.changed != nil {
		close(p.changed)
	}
	p.changed = make(chan struct{})
}

// cmdClientPause is CLIENT PAUSE timeout [WRITE|ALL]; the mode is checked
// before the timeout, as in Redis.
func cmdClientPause(s *Server, _ *client, args [][]byte) resp.Value {
	if len(args) > 4 {
		return resp.Err(resp.ErrSubcommandSyntax(args[0], args[1]))
	}
	all := true
	if len(args) == 4 {
		switch {
		case resp.EqualFold(args[3], "write"):
			all = false
		case !resp.EqualFold(args[3], "all"):
			return resp.Err(errPauseMode)
		}
	}
	now := time.Now()
	ms, err := parseTimeoutMs(args[2], now)
	switch {
	case err != nil:
		return resp.Err(err)
	case ms == 0:
		// Redis stores an end of 0, which is already over: nothing pauses.
		return resp.OK()
	}
	end := s.pause.set(now, now.Add(timeoutDuration(ms)), all)
	s.n.PauseExpiry(end)
	return resp.OK()
}

// cmdClientUnpause is CLIENT UNPAUSE.
func cmdClientUnpause(s *Server, _ *client, _ [][]byte) resp.Value {
	s.pause.lift()
	s.n.PauseExpiry(time.Time{})
	return resp.OK()
}

// pausedFor reports whether a pause in mode all holds back req of c:
// every command in ALL mode; in WRITE mode a command flagged write or
// may_replicate, and EXEC of a transaction that queued one.
func (s *Server) pausedFor(c *client, req resp.Request, all bool) bool {
	if all {
		return true
	}
	cmd := s.table.lookup(req.Args[0])
	if cmd == nil {
		return false
	}
	meta := cmd.meta
	if len(cmd.subs) > 0 && len(req.Args) > 1 {
		if i, err := meta.SubcommandIndex(req.Args); err == nil {
			meta = cmd.subs[i].meta
		}
	}
	if mayReplicate(meta) {
		return true
	}
	if meta.Name == "exec" && inMulti(c) {
		for _, q := range c.tx.queued {
			if mayReplicate(q.cmd.meta) {
				return true
			}
		}
	}
	return false
}

func mayReplicate(m *resp.Command) bool {
	return m.Is(resp.FlagWrite) || m.Is(resp.FlagMayReplicate)
}

// waitUnpaused holds req back while a pause applies to it, as Redis's
// blockPostponeClient: the connection shows flag b and counts in
// blocked_clients meanwhile. If the client goes away or the server
// closes, c.closing is set and the command is not to run.
func (s *Server) waitUnpaused(c *client, req resp.Request) {
	end, all, changed, active := s.pause.current(time.Now())
	if !active || !s.pausedFor(c, req, all) {
		return
	}
	c.publish()
	s.setBlocked(c, blockedPaused)
	defer s.setBlocked(c, notBlocked)
	var gone <-chan struct{}
	if c.watch != nil {
		var stop func()
		gone, stop = c.watch.Watch()
		defer stop()
	}
	for active && s.pausedFor(c, req, all) {
		t := time.NewTimer(time.Until(end))
		select {
		case <-t.C:
		case <-changed:
		case <-gone:
			c.closing = true
		case <-s.ctx.Done():
			c.closing = true
		}
		t.Stop()
		if c.closing {
			return
		}
		end, all, changed, active = s.pause.current(time.Now())
	}
}

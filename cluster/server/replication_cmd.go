package server

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/resp"
)

// ROLE, WAIT and WAITAOF: Redis's replication commands read as Raft
// (docs/compatibility.md, docs/consistency.md). A node that leads at least
// one slot group is a master, its followers are the other replicas of the
// groups it leads, and an offset is a sum of applied log indexes over
// those groups. A node that leads none is a replica of the leader of its
// first group (in slot order).

var (
	errWaitReplica    = resp.NewError("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.")
	errWaitAOFReplica = resp.NewError("ERR WAITAOF cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated.")
	errNumLocalRange  = resp.NewError("ERR value is out of range, value must between 0 and 1")
	errNotPositive    = resp.NewError("ERR value is out of range, must be positive")
)

// waitPoll is how often WAIT asks the followers again while it waits.
const waitPoll = 20 * time.Millisecond

func replicationCommands() []*command {
	waitTips := []string{"request_policy:all_shards", "response_policy:agg_min"}
	return []*command{
		{meta: &resp.Command{Name: "role", Arity: 1, Flags: resp.FlagNoScript | resp.FlagLoading | resp.FlagStale | resp.FlagFast,
			ACL: []string{"admin", "fast", "dangerous"}, Group: "server", Since: "2.8.12",
			Summary: "Returns the replication role.", Complexity: "O(1)"}, node: cmdRole},
		{meta: &resp.Command{Name: "wait", Arity: 3, ACL: []string{"slow", "connection"}, Group: "generic", Since: "3.0.0",
			Summary:    "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.",
			Complexity: "O(1)", Tips: waitTips}, node: cmdWait},
		{meta: &resp.Command{Name: "waitaof", Arity: 4, Flags: resp.FlagNoScript, ACL: []string{"slow", "connection"}, Group: "generic", Since: "7.2.0",
			Summary:    "Blocks until all of the preceding write commands sent by the connection are written to the append-only file of the master and/or replicas.",
			Complexity: "O(1)", Tips: waitTips}, node: cmdWaitAOF},
	}
}

// roleView is this node's replication role as ROLE and INFO report it.
type roleView struct {
	master bool
	led    []*cluster.Group // master: the groups led here, in slot order
	offset int64            // master: applied indexes summed over led; replica: over the groups its master leads
	// A replica's master: the leader of its first group with a known leader.
	leader    cluster.Peer
	connected bool // a leader is known (Redis's "connected"; "connect" otherwise)
}

// role reads this node's role from local state only (no network).
func (s *Server) role() roleView {
	if led := s.ledGroups(); len(led) > 0 {
		v := roleView{master: true, led: led}
		for _, g := range led {
			v.offset += int64(g.AppliedIndex())
		}
		return v
	}
	v := roleView{offset: -1}
	hosted := s.hostedGroups()
	for _, g := range hosted {
		if l, ok := s.n.Leader(g); ok && l.ID != s.n.Self().ID {
			v.leader, v.connected = l, true
			break
		}
	}
	if !v.connected {
		if len(hosted) == 0 {
			return roleView{master: true} // hosts nothing: a master without replicas, as a fresh Redis
		}
		return v
	}
	v.offset = 0
	for _, g := range hosted {
		if l, ok := s.n.Leader(g); ok && l.ID == v.leader.ID {
			v.offset += int64(g.AppliedIndex())
		}
	}
	return v
}

// hostedGroups are the groups with a replica here, in slot order.
func (s *Server) hostedGroups() []*cluster.Group { return s.groupsWhere((*cluster.Group).Local) }

// follower is one node that follows groups led here: the sum of its
// applied indexes over those groups.
type follower struct {
	peer    cluster.Peer
	applied int64
}

// followers asks the followers of the led groups how far they applied,
// and sums per node; a node that answered for no group is left out, as
// Redis lists only its online replicas.
func (s *Server) followers(ctx context.Context, led []*cluster.Group) []follower {
	var out []follower
	at := map[string]int{}
	for _, g := range led {
		for _, fp := range g.Followers(ctx) {
			if fp.Err != nil {
				continue
			}
			i, ok := at[fp.Peer.ID]
			if !ok {
				i = len(out)
				at[fp.Peer.ID] = i
				out = append(out, follower{peer: fp.Peer})
			}
			out[i].applied += int64(fp.Applied)
		}
	}
	return out
}

func cmdRole(s *Server, _ *client, _ [][]byte) resp.Value {
	v := s.role()
	if !v.master {
		host, port := hostPort(v.leader.ClientAddr)
		state := "connected"
		if !v.connected {
			host, port, state = "?", 0, "connect"
		}
		return resp.Array(resp.BulkString("slave"), resp.BulkString(host), resp.Int(int64(port)),
			resp.BulkString(state), resp.Int(v.offset))
	}
	ctx, cancel := context.WithTimeout(s.ctx, cluster.StatusTimeout)
	defer cancel()
	var reps []resp.Value
	for _, f := range s.followers(ctx, v.led) {
		host, port := hostPort(f.peer.ClientAddr)
		reps = append(reps, resp.Array(resp.BulkString(host), resp.BulkString(itoa(int64(port))), resp.BulkString(itoa(f.applied))))
	}
	return resp.Array(resp.BulkString("master"), resp.Int(v.offset), resp.Array(reps...))
}

// infoRole is INFO replication's role part, from the same reading as ROLE.
func (s *Server) infoRole(v roleView) [][2]string {
	if v.master {
		return [][2]string{kv("role", "master")}
	}
	host, port := hostPort(v.leader.ClientAddr)
	link := "up"
	if !v.connected {
		link = "down"
	}
	out := [][2]string{
		kv("role", "slave"), kv("master_host", host), kv("master_port", port),
		kv("master_link_status", link), kv("master_last_io_seconds_ago", 0), kv("master_sync_in_progress", 0),
		kv("slave_read_repl_offset", v.offset), kv("slave_repl_offset", v.offset),
	}
	if !v.connected {
		out = append(out, kv("master_link_down_since_seconds", -1))
	}
	return append(out, kv("slave_priority", 100), kv("slave_read_only", 1), kv("replica_announced", 1))
}

// parseWaitTimeout is a WAIT timeout in milliseconds, as Redis's
// getTimeoutFromObjectOrReply reads one; 0 waits for ever.
func parseWaitTimeout(b []byte) (time.Duration, error) {
	ms, err := parseTimeoutMs(b, time.Now())
	return timeoutDuration(ms), err
}

// cmdWait is WAIT numreplicas timeout: how many followers have applied
// this connection's writes (see acked).
func cmdWait(s *Server, c *client, args [][]byte) resp.Value {
	if !s.role().master {
		return resp.Err(errWaitReplica)
	}
	n, err := resp.ParseInt(args[1])
	if err != nil {
		return resp.Err(resp.ErrNotInteger)
	}
	timeout, err := parseWaitTimeout(args[2])
	if err != nil {
		return resp.Err(err)
	}
	return resp.Int(int64(s.waitAcks(c, n, timeout)))
}

// cmdWaitAOF is WAITAOF numlocal numreplicas timeout. The Raft log is the
// append-only file: a write is acknowledged only once its entry is synced
// to this node's log (so numlocal is met at once), and a follower that
// applied it has it in its own synced log.
func cmdWaitAOF(s *Server, c *client, args [][]byte) resp.Value {
	local, err := resp.ParseInt(args[1])
	if err != nil {
		return resp.Err(resp.ErrNotInteger)
	}
	if local < 0 || local > 1 {
		return resp.Err(errNumLocalRange)
	}
	n, err := resp.ParseInt(args[2])
	if err != nil {
		return resp.Err(resp.ErrNotInteger)
	}
	if n < 0 {
		return resp.Err(errNotPositive)
	}
	timeout, err := parseWaitTimeout(args[3])
	if err != nil {
		return resp.Err(err)
	}
	if !s.role().master {
		return resp.Err(errWaitAOFReplica)
	}
	return resp.Array(resp.Int(1), resp.Int(int64(s.waitAcks(c, n, timeout))))
}

// waitAcks counts the followers that have c's writes (acked) until there
// are n of them, timeout passes (0: never), the client goes or the server
// closes. Inside MULTI it does not wait, as Redis does not block there.
func (s *Server) waitAcks(c *client, n int64, timeout time.Duration) int {
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	var gone <-chan struct{}
	if c.watch != nil && !c.inExec {
		var stop func()
		gone, stop = c.watch.Watch()
		defer stop()
	}
	tick := time.NewTicker(waitPoll)
	defer tick.Stop()
	for {
		// Each count is asked in full (not cut short by the deadline):
		// applied indexes only grow, so the last count is the best known.
		got := s.acked(s.ctx, c)
		if int64(got) >= n || c.inExec {
			return got
		}
		select {
		case <-tick.C:
		case <-gone:
			c.closing = true
			return got
		case <-expired:
			return got
		case <-s.ctx.Done():
			return got
		}
	}
}

// acked is how many followers have applied every write c made: for each
// group c wrote to, the followers whose applied index reached the index
// the leader had applied when the write was answered; the least over
// those groups. With no write yet, every follower that answers counts,
// as Redis counts its online replicas.
func (s *Server) acked(ctx context.Context, c *client) int {
	qctx, cancel := context.WithTimeout(ctx, cluster.StatusTimeout)
	defer cancel()
	if len(c.writes) == 0 {
		return len(s.followers(qctx, s.ledGroups()))
	}
	least := math.MaxInt
	for gid, idx := range c.writes {
		g, ok := s.n.Group(gid)
		if !ok {
			return 0 // the group is gone from the map: nothing to ask
		}
		have := 0
		for _, fp := range g.Followers(qctx) {
			if fp.Err == nil && fp.Applied >= idx {
				have++
			}
		}
		least = min(least, have)
	}
	return least
}

// noteWrite records that c's write to g was answered: WAIT waits for the
// followers to apply as far as g's leader had applied then.
func (c *client) noteWrite(g *cluster.Group) {
	if c == nil {
		return
	}
	if c.writes == nil {
		c.writes = map[uint32]uint64{}
	}
	c.writes[g.ID()] = max(c.writes[g.ID()], g.AppliedIndex())
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

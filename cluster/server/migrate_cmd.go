package server

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
)

// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
// [AUTH password | AUTH2 username password] [KEYS key …], Redis 7.2's
// migrateCommand as a node command: it talks to the network, so it runs
// here and not inside a state machine.
//
// The keys must share a slot whose group is led here (else CROSSSLOT or
// MOVED, as Redis Cluster routes MIGRATE). Then one of two paths:
//
//   - the slot is migrating in the map and host:port is the client address
//     of the target group's leader (redis-cli --cluster reshard after
//     CLUSTER SETSLOT): the migration moves the keys through both groups'
//     logs, so MIGRATE only waits until none of them is left in the
//     source, and answers OK (NOKEY when none existed);
//   - otherwise a real MIGRATE: DUMP and PTTL through a linearizable read,
//     RESTORE-ASKING (pipelined) on a new connection to host:port, then,
//     unless COPY, one transaction that deletes the restored keys only if
//     they did not change since they were read (WATCH/EXEC, multi.go).

const (
	// migrateMinWait bounds from below how long the migration path waits.
	migrateMinWait = time.Second
	// migrateDefaultTimeout is Redis's timeout when the argument is <= 0.
	migrateDefaultTimeout = time.Second
	// migrateChunk is how much is written under one idle deadline (Redis
	// writes 64 KiB per syncWrite).
	migrateChunk = 64 << 10
	// migrateMaxLine caps one reply line read from the target: RESTORE,
	// AUTH and SELECT answer a status or an error, never more.
	migrateMaxLine = 4 << 10
	// migratePollMin and migratePollMax bound the pause between two reads
	// of the source while the migration path waits.
	migratePollMin = 5 * time.Millisecond
	migratePollMax = 100 * time.Millisecond
)

var (
	errMigrateKeysArg = resp.NewError("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
	errMigrateConnect = resp.NewError("IOERR error or timeout connecting to the client")
	errMigrateWrite   = resp.NewError("IOERR error or timeout writing to target instance")
	errMigrateRead    = resp.NewError("IOERR error or timeout reading to target instance")
	// errMigrateChanged: the target restored the keys but a key changed
	// here since it was read, so nothing was deleted. IOERR, not ERR: Redis
	// promises after ERR that the key is only in the source, and after
	// IOERR that it may be in both.
	errMigrateChanged = resp.NewError("IOERR the target instance now has a copy of the keys, but a key changed here while it was migrated, so the source kept every key")
	errMigrateWait    = resp.NewError("IOERR timeout waiting for the slot migration to move the keys to target instance")
)

func migrateCommand() *command {
	m := &resp.Command{
		Name: "migrate", Arity: -6, Flags: resp.FlagWrite, FirstKey: 3, LastKey: 3, Step: 1,
		ACL: []string{"keyspace", "write", "slow", "dangerous"}, Group: "generic", Since: "2.6.0",
		Summary:    "Atomically transfers a key from one Redis instance to another.",
		Complexity: "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the target instance. See the pages of these commands for time complexity. Also an O(N) data transfer between the two instances is performed.",
		Tips:       []string{"nondeterministic_output"},
		Keys:       migrateKeys,
		KeySpecs: []resp.KeySpec{
			{Flags: []string{"RW", "access", "delete"}, Index: 3, KeyStep: 1},
			{Flags: []string{"RW", "access", "delete", "incomplete"}, Keyword: "KEYS", StartFrom: -2, LastKey: -1, KeyStep: 1},
		},
	}
	return &command{meta: m, node: cmdMigrate}
}

// migrateKeys is Redis's migrateGetKeys: the key argument, or every
// argument after KEYS (none when the key argument is not empty).
func migrateKeys(args [][]byte) []int {
	for i := 6; i < len(args); i++ {
		switch {
		case resp.EqualFold(args[i], "keys"):
			if len(args[3]) > 0 {
				return nil
			}
			out := make([]int, 0, len(args)-i-1)
			for j := i + 1; j < len(args); j++ {
				out = append(out, j)
			}
			return out
		case resp.EqualFold(args[i], "auth"):
			i++
		case resp.EqualFold(args[i], "auth2"):
			i += 2
		}
	}
	return []int{3}
}

// migrateArgs is a parsed MIGRATE.
type migrateArgs struct {
	host, port     string
	db             int64
	timeout        time.Duration
	copy, replace  bool
	user, password []byte // AUTH: password; AUTH2: both
	auth           bool
	keys           [][]byte
	// selectDB: send SELECT db first (the connection is on another one).
	selectDB bool
}

// parseMigrate parses MIGRATE in migrateCommand's order: the options
// first (syntax errors, KEYS with a key), then timeout, then db.
func parseMigrate(args [][]byte) (migrateArgs, error) {
	a := migrateArgs{host: string(args[1]), port: string(args[2]), keys: args[3:4]}
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case resp.EqualFold(args[j], "copy"):
			a.copy = true
		case resp.EqualFold(args[j], "replace"):
			a.replace = true
		case resp.EqualFold(args[j], "auth") && more >= 1:
			a.auth, a.user, a.password = true, nil, args[j+1]
			j++
		case resp.EqualFold(args[j], "auth2") && more >= 2:
			a.auth, a.user, a.password = true, args[j+1], args[j+2]
			j += 2
		case resp.EqualFold(args[j], "keys"):
			if len(args[3]) != 0 {
				return a, errMigrateKeysArg
			}
			a.keys = args[j+1:]
			j = len(args)
		default:
			return a, resp.ErrSyntax
		}
	}
	ms, err := resp.ParseInt(args[5])
	if err != nil {
		return a, err
	}
	if a.db, err = resp.ParseInt(args[4]); err != nil {
		return a, err
	}
	a.timeout = migrateDefaultTimeout
	if ms > 0 { // capped where a Duration would overflow
		a.timeout = time.Duration(min(ms, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond
	}
	return a, nil
}

func cmdMigrate(s *Server, c *client, args [][]byte) resp.Value {
	var keys [][]byte // routed before the options are parsed, as in Redis
	for _, i := range migrateKeys(args) {
		keys = append(keys, args[i])
	}
	g, slot, v, ok := s.keysLedHere(c, keys)
	if !ok {
		return v
	}
	a, err := parseMigrate(args)
	if err != nil {
		return resp.Err(err)
	}
	if len(keys) == 0 {
		return resp.Status("NOKEY")
	}
	if s.isMigrationTarget(slot, a.host, a.port) {
		return s.migrateAwait(c, g, slot, a.keys, a.timeout)
	}
	return s.migrateCopy(c, g, slot, a)
}

// keysLedHere is Redis Cluster's routing of MIGRATE: its keys in one slot
// (CROSSSLOT), the slot's group led here (MOVED or CLUSTERDOWN). g is nil
// when there are no keys.
func (s *Server) keysLedHere(c *client, keys [][]byte) (*cluster.Group, uint16, resp.Value, bool) {
	at := -1
	for _, k := range keys {
		if !sameSlot(&at, int(slots.Of(k))) {
			return nil, 0, resp.Err(resp.ErrCrossSlot), false
		}
	}
	if at < 0 {
		return nil, 0, resp.Value{}, true
	}
	slot := uint16(at)
	g := s.n.GroupOf(slot)
	if !g.IsLeader() {
		return nil, 0, s.redirect(c, g, slot), false
	}
	return g, slot, resp.Value{}, true
}

// isMigrationTarget reports whether slot is migrating and host:port is the
// client address of its target group's leader.
func (s *Server) isMigrationTarget(slot uint16, host, port string) bool {
	mig, ok := s.n.Migration(slot)
	if !ok {
		return false
	}
	g, ok := s.n.Group(mig.To)
	if !ok {
		return false
	}
	leader, ok := s.n.Leader(g)
	return ok && sameHostPort(leader.ClientAddr, host, port)
}

// sameHostPort compares an advertised host:port with MIGRATE's host and
// port arguments: host names ignore case, ports compare as numbers.
func sameHostPort(addr, host, port string) bool {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	a, errA := strconv.Atoi(p)
	b, errB := strconv.Atoi(port)
	return errA == nil && errB == nil && a == b && strings.EqualFold(h, host)
}

// --- the migration path --------------------------------------------------

// migrateAwait waits until none of keys is live in g any more: the slot's
// migration moves them. The wait is bounded by the MIGRATE timeout (at
// least migrateMinWait) and by the server's life.
func (s *Server) migrateAwait(c *client, g *cluster.Group, slot uint16, keys [][]byte, timeout time.Duration) resp.Value {
	ctx, cancel := context.WithTimeout(s.ctx, max(timeout, migrateMinWait))
	defer cancel()
	live, err := liveKeys(ctx, g, keys)
	if err != nil {
		return s.migrateReadError(c, g, slot, err)
	}
	if live == 0 {
		return resp.Status("NOKEY")
	}
	pause := migratePollMin
	for live > 0 {
		// No signal says when the mover dropped a key, so poll, backing
		// off: the mover works in steps of a few hundred milliseconds.
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return resp.Err(errMigrateWait)
		}
		pause = min(2*pause, migratePollMax)
		if live, err = liveKeys(ctx, g, keys); err != nil {
			return s.migrateReadError(c, g, slot, err)
		}
	}
	return resp.OK()
}

// liveKeys counts the keys live in g, through a linearizable read.
func liveKeys(ctx context.Context, g *cluster.Group, keys [][]byte) (int, error) {
	n := 0
	err := g.Read(ctx, func(st fsm.Reader) {
		for _, w := range st.Observe(cluster.ReadNow(st), keys) {
			if w.Present {
				n++
			}
		}
	})
	return n, err
}

// migrateReadError is the reply when reading the source failed: MOVED
// when this node stopped leading it (nothing was done), the timeout as
// the migration path's, else the error.
func (s *Server) migrateReadError(c *client, g *cluster.Group, slot uint16, err error) resp.Value {
	switch {
	case errors.Is(err, cluster.ErrNotLeader):
		return s.redirect(c, g, slot)
	case errors.Is(err, context.DeadlineExceeded):
		return resp.Err(errMigrateWait)
	}
	return resp.Err(err)
}

// --- the real MIGRATE ----------------------------------------------------

// migrateItem is one key to send: its payload, its TTL (0: none) and what
// WATCH saw of it before it was dumped.
type migrateItem struct {
	key     []byte
	ttl     int64
	payload []byte
	watch   fsm.Watch
}

// migrateCopy is the real MIGRATE (see the top of this file).
func (s *Server) migrateCopy(c *client, g *cluster.Group, slot uint16, a migrateArgs) resp.Value {
	items, err := dumpKeys(s.ctx, g, a.keys)
	if err != nil {
		if errors.Is(err, cluster.ErrNotLeader) {
			return s.redirect(c, g, slot)
		}
		return resp.Err(err)
	}
	if len(items) == 0 {
		return resp.Status("NOKEY")
	}
	res := s.exchangeMigrate(s.ctx, a, items)
	if !a.copy && len(res.restored) > 0 {
		if v := s.deleteMigrated(g, slot, items, res.restored); v.IsError() {
			return v
		}
	}
	switch {
	case res.targetErr != "":
		return resp.Err(resp.Errorf("ERR Target instance replied with error: %s", res.targetErr))
	case res.ioErr != nil:
		return resp.Err(res.ioErr)
	}
	return resp.OK()
}

// dumpKeys reads, in one linearizable read, what each key is (for the
// watches), then its DUMP payload and PTTL, as the DUMP and PTTL commands
// would. Keys missing (or expired) are left out. A value DUMP cannot
// serialise fails the whole MIGRATE before anything is sent.
func dumpKeys(ctx context.Context, g *cluster.Group, keys [][]byte) ([]migrateItem, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var items []migrateItem
	var failed error
	dump, pttl := fsm.Lookup([]byte("dump")), fsm.Lookup([]byte("pttl"))
	err := g.Read(ctx, func(st fsm.Reader) {
		now := cluster.ReadNow(st)
		// Watches first: any change after them aborts the deletion.
		for _, w := range st.Observe(now, keys) {
			if !w.Present {
				continue
			}
			payload := st.Read(now, dump, [][]byte{[]byte("dump"), w.Key})
			ttl := st.Read(now, pttl, [][]byte{[]byte("pttl"), w.Key})
			if payload.Kind != fsm.OutcomeReply || ttl.Kind != fsm.OutcomeReply {
				failed = resp.ErrTryAgain // the slot is moving between groups: retry
				return
			}
			item, ok, err := migrateItemOf(w, payload.Reply, ttl.Reply)
			if err != nil {
				failed = err
				return
			}
			if ok {
				items = append(items, item)
			}
		}
	})
	if err == nil {
		err = failed
	}
	return items, err
}

// migrateItemOf makes the item of a watched key from its DUMP and PTTL
// replies; ok is false when the key vanished meanwhile. The TTL is
// Redis's: none, or the time left, at least 1 ms.
func migrateItemOf(w fsm.Watch, payload, pttl resp.Value) (migrateItem, bool, error) {
	if payload.IsError() {
		text := strings.TrimPrefix(string(payload.Str), "ERR ")
		return migrateItem{}, false, resp.Errorf("ERR cannot MIGRATE key '%s': %s", w.Key, text)
	}
	if payload.Kind != resp.KindBulk || pttl.Kind != resp.KindInt || pttl.Int == -2 {
		return migrateItem{}, false, nil
	}
	item := migrateItem{key: w.Key, payload: payload.Str, watch: w}
	if pttl.Int >= 0 {
		item.ttl = max(pttl.Int, 1)
	}
	return item, true, nil
}

// deleteMigrated deletes the restored items in one transaction watching
// them: if any changed since it was dumped, nothing is deleted.
func (s *Server) deleteMigrated(g *cluster.Group, slot uint16, items []migrateItem, restored []int) resp.Value {
	del := [][]byte{[]byte("del")}
	watches := make([]fsm.Watch, 0, len(restored))
	for _, i := range restored {
		del = append(del, items[i].key)
		watches = append(watches, items[i].watch)
	}
	v := s.proposeExec(nil, g, slot, fsm.ExecCommand(watches, [][][]byte{del}))
	switch {
	case v.Kind == resp.KindNullArray:
		return resp.Err(errMigrateChanged)
	case v.IsError():
		// The target has the keys; whether they are still here is not
		// known (or this node stopped leading): IOERR's promise.
		return resp.Err(resp.Errorf("IOERR the target instance now has a copy of the keys, but deleting them here failed: %s", v.Str))
	}
	return v
}

// migrateResult is what the target answered.
type migrateResult struct {
	restored  []int  // indexes of the items the target restored
	targetErr string // the first error the target replied, without '-'
	ioErr     error  // the connection failed (after restored were answered)
	// selectFailed: the target refused SELECT (the connection stays on
	// its database).
	selectFailed bool
}

// exchangeMigrate sends AUTH, SELECT (when the connection is on another
// database) and one RESTORE-ASKING per item, pipelined, on a connection to
// the target (kept from an earlier MIGRATE, or new: migrate_conns.go), and
// reads the replies. Every read and write is bounded by the idle timeout;
// ctx ends it early. The connection is kept for the next MIGRATE unless it
// failed.
func (s *Server) exchangeMigrate(ctx context.Context, a migrateArgs, items []migrateItem) migrateResult {
	addr := net.JoinHostPort(a.host, a.port)
	mc, err := s.migrateConns.take(ctx, addr, a.timeout)
	if err != nil {
		return migrateResult{ioErr: errMigrateConnect}
	}
	stop := context.AfterFunc(ctx, func() { mc.nc.Close() })
	a.selectDB = a.db != mc.db
	conn := idleConn{Conn: mc.nc, idle: a.timeout}
	var res migrateResult
	if err := writeMigrate(conn, a, items); err != nil {
		res = migrateResult{ioErr: errMigrateWrite}
	} else {
		mc.br.Reset(conn)
		res = readMigrate(mc.br, a, len(items))
	}
	if !stop() || res.ioErr != nil {
		_ = mc.nc.Close()
		return res
	}
	if a.selectDB && !res.selectFailed {
		mc.db = a.db
	}
	s.migrateConns.put(addr, mc, time.Now())
	return res
}

// writeMigrate writes the pipeline of commands.
func writeMigrate(w io.Writer, a migrateArgs, items []migrateItem) error {
	bw := bufio.NewWriterSize(w, migrateChunk)
	if a.auth {
		args := [][]byte{[]byte("AUTH"), a.password}
		if a.user != nil {
			args = [][]byte{[]byte("AUTH"), a.user, a.password}
		}
		writeCommand(bw, args)
	}
	if a.selectDB {
		writeCommand(bw, [][]byte{[]byte("SELECT"), strconv.AppendInt(nil, a.db, 10)})
	}
	for _, it := range items {
		args := [][]byte{[]byte("RESTORE-ASKING"), it.key, strconv.AppendInt(nil, it.ttl, 10), it.payload}
		if a.replace {
			args = append(args, []byte("REPLACE"))
		}
		writeCommand(bw, args)
	}
	return bw.Flush()
}

// writeCommand writes one command as a RESP array of bulk strings; errors
// stick in bw and come out of Flush.
func writeCommand(bw *bufio.Writer, args [][]byte) {
	_, _ = bw.Write(resp.AppendRequest(nil, args))
}

// readMigrate reads the AUTH and SELECT replies, then one reply per
// RESTORE-ASKING, as migrateCommand does: an AUTH or SELECT error counts as
// every key's error, the first error is the one reported, and the items
// answered with a status were restored.
func readMigrate(r *bufio.Reader, a migrateArgs, n int) migrateResult {
	var res migrateResult
	var authErr, selectErr string
	var err error
	if a.auth {
		if authErr, err = readStatusLine(r); err != nil {
			return migrateResult{ioErr: errMigrateRead}
		}
	}
	if a.selectDB {
		if selectErr, err = readStatusLine(r); err != nil {
			return migrateResult{ioErr: errMigrateRead}
		}
		res.selectFailed = selectErr != ""
	}
	for i := range n {
		restoreErr, err := readStatusLine(r)
		if err != nil {
			res.ioErr = errMigrateRead
			return res
		}
		first := cmp.Or(authErr, selectErr, restoreErr)
		if first == "" {
			res.restored = append(res.restored, i)
		} else if res.targetErr == "" {
			res.targetErr = first
		}
	}
	return res
}

// readStatusLine reads one status or error reply of at most
// migrateMaxLine bytes: "" for a status, the error's text for an error.
// Any other reply is a protocol error: nothing is deleted on its account.
func readStatusLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return "", fmt.Errorf("reading the target's reply: %w", err)
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	switch {
	case len(line) > 0 && line[0] == '+':
		return "", nil
	case len(line) > 1 && line[0] == '-':
		return string(line[1:]), nil
	}
	return "", fmt.Errorf("unexpected reply %.40q from the target", line)
}

// idleConn bounds every read and every write chunk by the idle timeout:
// MIGRATE's timeout is the longest the target may stay silent.
type idleConn struct {
	net.Conn
	idle time.Duration
}

func (c idleConn) Read(p []byte) (int, error) {
	_ = c.SetReadDeadline(time.Now().Add(c.idle))
	return c.Conn.Read(p)
}

func (c idleConn) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), migrateChunk)]
		_ = c.SetWriteDeadline(time.Now().Add(c.idle))
		n, err := c.Conn.Write(chunk)
		written += n
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/cluster/server"
	"github.com/slotraft/slotraft/fsm"
)

// Moving data between redis-server and slotraft in Redis's own RDB format:
// `slotraft admin export-rdb FILE` writes every key of the cluster (DUMP
// and PTTL of each, SCANned on every master) as a file redis-server 7.0+
// loads; `slotraft admin import-rdb FILE` RESTOREs the keys of a file
// redis-server saved (with their TTLs, and its function libraries) into a
// running cluster.

// rdbBatch is how many keys one pipeline dumps or restores.
const rdbBatch = 256

// rdbCounter reports a long copy's progress: a line every 2 s (or a bar
// redrawn in place on a terminal) and a summary.
type rdbCounter struct {
	what  string
	total int64 // 0: unknown
	n     atomic.Int64
	start time.Time
	stop  chan struct{}
	done  chan struct{}
}

func startRDBCounter(w io.Writer, what string, total int64) *rdbCounter {
	c := &rdbCounter{what: what, total: total, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	bar := isTerminal(w)
	go func() {
		defer close(c.done)
		tick := time.NewTicker(progressPlainPeriod)
		if bar {
			tick.Reset(200 * time.Millisecond)
		}
		defer tick.Stop()
		for {
			select {
			case <-c.stop:
				if bar {
					fmt.Fprintf(w, "\r%s\n", c.line())
				}
				return
			case <-tick.C:
				if bar {
					fmt.Fprintf(w, "\r%s", c.line())
				} else {
					fmt.Fprintln(w, c.line())
				}
			}
		}
	}()
	return c
}

func (c *rdbCounter) line() string {
	n := c.n.Load()
	rate := float64(n) / max(time.Since(c.start).Seconds(), 0.001)
	if c.total > 0 {
		return fmt.Sprintf("%s %s/%s keys  %s keys/s", c.what, groupDigits(n), groupDigits(c.total), groupDigits(int64(rate)))
	}
	return fmt.Sprintf("%s %s keys  %s keys/s", c.what, groupDigits(n), groupDigits(int64(rate)))
}

// finish stops the reports and prints the summary.
func (c *rdbCounter) finish(w io.Writer, extra string) {
	close(c.stop)
	<-c.done
	fmt.Fprintf(w, "%s %d keys in %.1fs%s\n", c.what, c.n.Load(), time.Since(c.start).Seconds(), extra)
}

// fileArg parses an admin command's flags (declared by flags, which may
// be nil) and its one FILE argument.
func fileArg(name string, args []string, stderr io.Writer, flags func(*flag.FlagSet)) (string, error) {
	fs := flag.NewFlagSet("admin "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if flags != nil {
		flags(fs)
	}
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	if fs.NArg() != 1 {
		fmt.Fprint(stderr, adminUsage)
		return "", errUsage
	}
	return fs.Arg(0), nil
}

// adminConn is how admin commands reach the cluster: the node at addr,
// each request bounded by timeout, authenticated as user/pass.
type adminConn struct {
	addr       string
	timeout    time.Duration
	user, pass string
}

// client is a client of the node at addr (the admin's own or another).
func (a adminConn) client(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, DialTimeout: a.timeout, ReadTimeout: a.timeout,
		MaxRetries: -1, DisableIdentity: true, Protocol: 2, Username: a.user, Password: a.pass})
}

// cluster is a cluster client that starts from the admin's node.
func (a adminConn) cluster() *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{a.addr}, DialTimeout: a.timeout,
		ReadTimeout: a.timeout, MaxRedirects: 16, DisableIdentity: true, Protocol: 2, Username: a.user, Password: a.pass})
}

// adminExportRDB is `slotraft admin export-rdb FILE`.
func adminExportRDB(ctx context.Context, conn adminConn, args []string, stdout, stderr io.Writer) error {
	path, err := fileArg("export-rdb", args, stderr, nil)
	if err != nil {
		return err
	}
	rc := conn.cluster()
	defer rc.Close()
	total := int64(0)
	_ = rc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		if size, err := n.DBSize(ctx).Result(); err == nil {
			atomic.AddInt64(&total, size)
		}
		return nil
	})
	err = cluster.WriteFileAtomicFrom(path, backupPerm, func(bw io.Writer) error {
		w := fsm.NewRDBWriter(bw, map[string]string{"redis-ver": server.Version, "redis-bits": "64",
			"ctime": fmt.Sprint(time.Now().Unix()), "slotraft-ver": buildVersion()}, []string{"redis-ver", "redis-bits", "ctime", "slotraft-ver"})
		codes, err := functionCodes(ctx, rc)
		if err == nil {
			err = writeFunctions(w, codes)
		}
		if err != nil {
			return err
		}
		count := startRDBCounter(stdout, "exported", total)
		var mu sync.Mutex
		err = rc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			return exportNode(ctx, n, rc, func(key string, expireAt int64, payload []byte) error {
				mu.Lock()
				defer mu.Unlock()
				count.n.Add(1)
				return w.Key([]byte(key), expireAt, payload)
			})
		})
		count.finish(stdout, " to "+path)
		if err != nil {
			return err
		}
		return w.Close()
	})
	if err != nil {
		return fmt.Errorf("export-rdb: %w", err)
	}
	return nil
}

// functionCodes is the source code of every function library (FUNCTION
// LIST WITHCODE), for a file's FUNCTION2 records.
func functionCodes(ctx context.Context, c redis.Cmdable) ([][]byte, error) {
	libs, err := c.FunctionList(ctx, redis.FunctionListQuery{WithCode: true}).Result()
	if err != nil {
		return nil, fmt.Errorf("FUNCTION LIST: %w", err)
	}
	codes := make([][]byte, len(libs))
	for i, l := range libs {
		codes[i] = []byte(l.Code)
	}
	return codes, nil
}

// writeFunctions writes the libraries into the file.
func writeFunctions(rw *fsm.RDBWriter, codes [][]byte) error {
	for _, c := range codes {
		if err := rw.Function(c); err != nil {
			return err
		}
	}
	return nil
}

// exportNode SCANs one master and hands each key's DUMP payload and
// deadline to put; a key gone between SCAN and DUMP is skipped. DUMP and
// PTTL go through the cluster client rc, which follows a slot's leader if
// it moves meanwhile.
func exportNode(ctx context.Context, n *redis.Client, rc *redis.ClusterClient, put func(string, int64, []byte) error) error {
	var cursor uint64
	for {
		keys, next, err := n.Scan(ctx, cursor, "", rdbBatch).Result()
		if err != nil {
			return fmt.Errorf("SCAN on %s: %w", n.Options().Addr, err)
		}
		if err := exportKeys(ctx, rc, keys, put); err != nil {
			return err
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

func exportKeys(ctx context.Context, rc *redis.ClusterClient, keys []string, put func(string, int64, []byte) error) error {
	if len(keys) == 0 {
		return nil
	}
	pipe := rc.Pipeline()
	dumps := make([]*redis.StringCmd, len(keys))
	ttls := make([]*redis.DurationCmd, len(keys))
	for i, k := range keys {
		dumps[i] = pipe.Dump(ctx, k)
		ttls[i] = pipe.PTTL(ctx, k)
	}
	now := time.Now()
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("DUMP: %w", err)
	}
	for i, k := range keys {
		payload, err := dumps[i].Result()
		if errors.Is(err, redis.Nil) {
			continue // deleted or expired since SCAN
		}
		if err != nil {
			return fmt.Errorf("DUMP %s: %w", k, err)
		}
		var expireAt int64
		if ttl := ttls[i].Val(); ttl > 0 {
			expireAt = now.Add(ttl).UnixMilli()
		}
		if err := put(k, expireAt, []byte(payload)); err != nil {
			return err
		}
	}
	return nil
}

// adminImportRDB is `slotraft admin import-rdb [--replace] FILE`.
func adminImportRDB(ctx context.Context, conn adminConn, args []string, stdout, stderr io.Writer) error {
	var replace bool
	path, err := fileArg("import-rdb", args, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&replace, "replace", false, "replace keys that exist (else they are reported and kept)")
	})
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("import-rdb: %w", err)
	}
	rc := conn.cluster()
	defer rc.Close()
	if err := importRDB(ctx, rc, data, replace, stdout); err != nil {
		return fmt.Errorf("import-rdb: %w", err)
	}
	return nil
}

// importRDB RESTOREs the keys and loads the function libraries of an RDB
// file's data into the cluster.
func importRDB(ctx context.Context, rc *redis.ClusterClient, data []byte, replace bool, stdout io.Writer) error {
	im := &rdbImport{ctx: ctx, rc: rc, replace: replace, now: time.Now().UnixMilli()}
	im.count = startRDBCounter(stdout, "imported", 0)
	file, err := fsm.ReadRDB(data, im.add)
	if err == nil {
		err = im.flush()
	}
	if err == nil && file != nil {
		err = im.functions(file.Functions)
	}
	im.count.finish(stdout, fmt.Sprintf(" (%d expired skipped, %d existing kept, %d in other databases skipped)", im.expired, len(im.busy), im.otherDB))
	if err == nil && len(im.busy) > 0 {
		err = fmt.Errorf("%d keys or function libraries exist already and were kept (--replace replaces them), e.g. %q", len(im.busy), im.busy[0])
	}
	return err
}

// rdbImport RESTOREs the keys of a file in pipelined batches.
type rdbImport struct {
	ctx     context.Context
	rc      *redis.ClusterClient
	replace bool
	now     int64
	batch   []fsm.RDBRecord
	count   *rdbCounter
	expired int
	otherDB int
	busy    []string
}

// add takes a key of the file: one already expired is skipped (as Redis
// skips them when a master loads a file), one of another database too
// (a cluster has database 0 only).
func (im *rdbImport) add(rec fsm.RDBRecord) error {
	switch {
	case rec.DB != 0:
		im.otherDB++
		return nil
	case rec.ExpireAt > 0 && rec.ExpireAt <= im.now:
		im.expired++
		return nil
	}
	im.batch = append(im.batch, rec)
	if len(im.batch) >= rdbBatch {
		return im.flush()
	}
	return nil
}

// rdbRetryFor bounds how long a batch is sent again while the cluster
// answers CLUSTERDOWN or TRYAGAIN (a leader election, a slot moving): the
// command was not run, so sending it again is safe.
const rdbRetryFor = 30 * time.Second

// retryable reports whether err says the command was not run for now.
func retryable(err error) bool {
	return err != nil && (strings.HasPrefix(err.Error(), "CLUSTERDOWN") || strings.HasPrefix(err.Error(), "TRYAGAIN"))
}

// flush RESTOREs the batch (ABSTTL keeps the file's deadlines), again for
// the keys the cluster could not take for now.
func (im *rdbImport) flush() error {
	deadline := time.Now().Add(rdbRetryFor)
	for len(im.batch) > 0 {
		again, err := im.send()
		if err != nil {
			return err
		}
		if len(again) > 0 && time.Now().After(deadline) {
			return fmt.Errorf("RESTORE %q: the cluster did not take it within %v", again[0].Key, rdbRetryFor)
		}
		if len(again) > 0 {
			time.Sleep(100 * time.Millisecond) // a pause before sending again, not a wait for a condition
		}
		im.batch = again
	}
	return nil
}

// send RESTOREs the batch once and returns the records to send again.
func (im *rdbImport) send() ([]fsm.RDBRecord, error) {
	pipe := im.rc.Pipeline()
	cmds := make([]*redis.StatusCmd, len(im.batch))
	for i, rec := range im.batch {
		args := []any{"RESTORE", string(rec.Key), rec.ExpireAt, string(rec.Payload), "ABSTTL"}
		if im.replace {
			args = append(args, "REPLACE")
		}
		cmd := redis.NewStatusCmd(im.ctx, args...)
		_ = pipe.Process(im.ctx, cmd)
		cmds[i] = cmd
	}
	_, _ = pipe.Exec(im.ctx)
	var again []fsm.RDBRecord
	for i, cmd := range cmds {
		err := cmd.Err()
		switch {
		case err == nil:
			im.count.n.Add(1)
		case strings.HasPrefix(err.Error(), "BUSYKEY"):
			im.busy = append(im.busy, string(im.batch[i].Key))
		case retryable(err):
			again = append(again, im.batch[i])
		default:
			return nil, fmt.Errorf("RESTORE %q: %w", im.batch[i].Key, err)
		}
	}
	return again, nil
}

// functions loads the file's function libraries (FUNCTION LOAD, REPLACE
// with --replace).
func (im *rdbImport) functions(libs [][]byte) error {
	for _, code := range libs {
		args := []any{"FUNCTION", "LOAD"}
		if im.replace {
			args = append(args, "REPLACE")
		}
		err := im.rc.Do(im.ctx, append(args, string(code))...).Err()
		switch {
		case err == nil:
		case !im.replace && strings.Contains(err.Error(), "already exists"):
			im.busy = append(im.busy, "function library: "+err.Error())
		default:
			return fmt.Errorf("FUNCTION LOAD: %w", err)
		}
	}
	return nil
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/cluster/server"
	"github.com/slotraft/slotraft/fsm"
)

// `slotraft admin backup FILE` copies every slot group through SLOTRAFT
// BACKUP: for each group, its leader takes a point-in-time cut (the
// group's state at one applied index, which every replica reaches) and
// hands it out key by key while writes go on. The file is an RDB file (so
// redis-server loads it too) whose aux field "slotraft-backup" records the
// cut of each group. `slotraft admin restore FILE` loads such a file into
// a cluster that holds no keys.

// backupAux is the "slotraft-backup" aux field: what was cut, and when.
type backupAux struct {
	Taken  time.Time        `json:"taken"`
	Groups []backupGroupCut `json:"groups"`
}

type backupGroupCut struct {
	ID     uint32   `json:"id"`
	Slots  []string `json:"slots"`
	Leader string   `json:"leader"`
	Index  int64    `json:"index"` // the group's applied index right after the cut (an upper bound)
	Keys   int64    `json:"keys"`
}

// backupPerm: backups and exports hold every key in clear (docs/security.md).
const backupPerm = 0o600

// backupBatch is how many keys one SLOTRAFT BACKUP NEXT asks for.
const backupBatch = 512

// adminBackup is `slotraft admin backup FILE`.
func adminBackup(conn adminConn, args []string, stdout, stderr io.Writer) error {
	path, err := fileArg("backup", args, stderr, nil)
	if err != nil {
		return err
	}
	rdb := conn.client(conn.addr)
	defer rdb.Close()
	clients := map[string]*redis.Client{}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	var st cluster.ClusterStatus
	client := func(id string) (*redis.Client, error) {
		for _, n := range st.Nodes {
			if n.ID == id {
				if clients[id] == nil {
					clients[id] = conn.client(n.ClientAddr)
				}
				return clients[id], nil
			}
		}
		return nil, fmt.Errorf("no node %q in the status", id)
	}
	// A leadership that moves between the status and START (an election,
	// leader spreading) makes the cuts be taken again, on the new leaders.
	deadline := time.Now().Add(rdbRetryFor)
	for {
		if st, err = fetchStatus(context.Background(), rdb, conn.timeout); err != nil {
			return fmt.Errorf("backup: %w", err)
		}
		err = writeBackup(path, st, client, stdout)
		if !errors.Is(err, errCutMoved) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond) // a pause before asking again, not a wait for a condition
	}
}

// errCutMoved: a group's leader in the status no longer led it at START.
var errCutMoved = errors.New("a slot group's leadership moved")

// writeBackup cuts every group and writes the file atomically.
func writeBackup(path string, st cluster.ClusterStatus, client func(string) (*redis.Client, error), stdout io.Writer) error {
	ctx := context.Background()
	aux := backupAux{Taken: time.Now().UTC()}
	cuts := make([]int64, len(st.Groups))
	total := int64(0)
	for i, g := range st.Groups {
		if g.Leader == "" {
			return fmt.Errorf("backup: slot group %d has no leader", g.ID)
		}
		c, err := client(g.Leader)
		if err != nil {
			return fmt.Errorf("backup: %w", err)
		}
		r, err := c.Do(ctx, "SLOTRAFT", "BACKUP", "START", g.ID).Int64Slice()
		if err != nil && (strings.Contains(err.Error(), "does not lead") || retryable(err)) {
			return fmt.Errorf("backup: group %d: %w (%v)", g.ID, errCutMoved, err)
		}
		if err != nil || len(r) != 3 {
			return fmt.Errorf("backup: group %d: START on %s: %v", g.ID, g.Leader, err)
		}
		cuts[i] = r[0]
		aux.Groups = append(aux.Groups, backupGroupCut{ID: g.ID, Slots: g.Slots, Leader: g.Leader, Index: r[2], Keys: r[1]})
		total += r[1]
	}
	first, err := client(st.Groups[0].Leader)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	codes, err := functionCodes(ctx, first) // replicated to every group alike
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	meta, _ := json.Marshal(aux)
	return cluster.WriteFileAtomicFrom(path, backupPerm, func(w io.Writer) error {
		rw := fsm.NewRDBWriter(w, map[string]string{"redis-ver": server.Version, "redis-bits": "64",
			"ctime": strconv.FormatInt(aux.Taken.Unix(), 10), "slotraft-ver": buildVersion(), "slotraft-backup": string(meta)},
			[]string{"redis-ver", "redis-bits", "ctime", "slotraft-ver", "slotraft-backup"})
		if err := writeFunctions(rw, codes); err != nil {
			return err
		}
		count := startRDBCounter(stdout, "backed up", total)
		var err error
		for i, g := range st.Groups {
			c, _ := client(g.Leader)
			if err = copyCut(ctx, c, cuts[i], rw, count); err != nil {
				err = fmt.Errorf("group %d: %w", g.ID, err)
				break
			}
		}
		count.finish(stdout, fmt.Sprintf(" of %d slot groups", len(st.Groups)))
		if err != nil {
			return err
		}
		return rw.Close()
	})
}

// copyCut reads one cut to its end into rw, then ends it.
func copyCut(ctx context.Context, c *redis.Client, id int64, rw *fsm.RDBWriter, count *rdbCounter) error {
	defer c.Do(ctx, "SLOTRAFT", "BACKUP", "END", id)
	for {
		r, err := c.Do(ctx, "SLOTRAFT", "BACKUP", "NEXT", id, backupBatch).Slice()
		if err != nil || len(r) != 2 {
			return fmt.Errorf("NEXT: %v", err)
		}
		keys, _ := r[1].([]any)
		for _, k := range keys {
			kv, _ := k.([]any)
			if len(kv) != 3 {
				return errors.New("NEXT: a malformed key")
			}
			key, _ := kv[0].(string)
			expireAt, _ := kv[1].(int64)
			payload, _ := kv[2].(string)
			if err := rw.Key([]byte(key), expireAt, []byte(payload)); err != nil {
				return err
			}
			count.n.Add(1)
		}
		if more, _ := r[0].(int64); more == 0 {
			return nil
		}
	}
}

// adminRestore is `slotraft admin restore FILE`: a backup into a cluster
// with no keys.
func adminRestore(ctx context.Context, conn adminConn, args []string, stdout, stderr io.Writer) error {
	path, err := fileArg("restore", args, stderr, nil)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	file, err := fsm.ReadRDB(data, func(fsm.RDBRecord) error { return nil }) // checks it whole first
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if file.Aux["slotraft-backup"] == "" {
		return errors.New("restore: not a slotraft backup (an RDB file from redis-server: use import-rdb)")
	}
	rc := conn.cluster()
	defer rc.Close()
	var keys atomic.Int64
	err = rc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		size, err := n.DBSize(ctx).Result()
		keys.Add(size)
		return err
	})
	if err != nil || keys.Load() != 0 {
		return fmt.Errorf("restore: the cluster must hold no keys (it holds %d; import-rdb merges into a cluster that does): %v", keys.Load(), err)
	}
	var aux backupAux
	if err := json.Unmarshal([]byte(file.Aux["slotraft-backup"]), &aux); err != nil {
		return fmt.Errorf("restore: the backup's description: %w", err)
	}
	fmt.Fprintf(stdout, "restoring the backup of %d slot groups taken %s\n", len(aux.Groups), aux.Taken.Format(time.RFC3339))
	if err := importRDB(ctx, rc, data, false, stdout); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return nil
}

package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
)

// SLOTRAFT BACKUP: a consistent copy of one slot group, read by `slotraft
// admin backup`. START, on the group's leader, confirms the leadership
// through the log (a linearizable read) and takes a point-in-time cut of
// the group's keys: the state at one applied index, which every replica
// of the group reaches too. NEXT hands out the cut's keys in batches as
// DUMP payloads with their deadlines while the group goes on; END drops
// it. A cut no one reads for backupIdle is dropped.

// backupIdle is how long a cut is kept without a NEXT.
const backupIdle = time.Minute

// maxBackupBatch bounds the keys one NEXT returns.
const maxBackupBatch = 10000

type backupSessions struct {
	mu   sync.Mutex
	next uint64
	cuts map[uint64]*backupCut
}

type backupCut struct {
	mu   sync.Mutex // one NEXT at a time walks the cut
	cut  *fsm.Cut
	used time.Time
}

func backupCommand(flags resp.Flag, acl []string) *command {
	return &command{meta: subMeta("slotraft", "backup", -4, flags, acl, "slotraft",
		"Reads a point-in-time copy of a slot group led here: START group, NEXT id count, END id.",
		"O(N) where N is the number of keys returned"), node: cmdSlotraftBackup}
}

func cmdSlotraftBackup(s *Server, _ *client, args [][]byte) resp.Value {
	s.backups.sweep(time.Now())
	switch strings.ToLower(string(args[2])) {
	case "start":
		if len(args) != 4 {
			return resp.Err(resp.ErrWrongArgs("slotraft|backup"))
		}
		return s.backupStart(string(args[3]))
	case "next":
		if len(args) != 5 {
			return resp.Err(resp.ErrWrongArgs("slotraft|backup"))
		}
		return s.backupNext(string(args[3]), string(args[4]))
	case "end":
		if len(args) != 4 {
			return resp.Err(resp.ErrWrongArgs("slotraft|backup"))
		}
		id, _ := strconv.ParseUint(string(args[3]), 10, 64)
		s.backups.mu.Lock()
		delete(s.backups.cuts, id)
		s.backups.mu.Unlock()
		return resp.OK()
	}
	return resp.Err(resp.NewError("ERR unknown SLOTRAFT BACKUP action, expected START, NEXT or END"))
}

// backupStart takes the cut of group gid and answers [id, keys, index].
func (s *Server) backupStart(gid string) resp.Value {
	id64, err := strconv.ParseUint(gid, 10, 32)
	g, ok := s.n.Group(uint32(id64))
	if err != nil || !ok {
		return resp.Err(resp.NewError("ERR no slot group " + gid))
	}
	ctx, cancel := context.WithTimeout(s.ctx, requestTimeout)
	defer cancel()
	var cut *fsm.Cut
	if err := g.Read(ctx, func(st fsm.Reader) { cut = st.Cut() }); err != nil {
		if errors.Is(err, cluster.ErrNotLeader) {
			return resp.Err(resp.NewError(fmt.Sprintf("ERR this node does not lead slot group %s", gid)))
		}
		return nodeError(err)
	}
	index := g.AppliedIndex() // at or after the cut's: an upper bound
	b := &s.backups
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cuts == nil {
		b.cuts = map[uint64]*backupCut{}
	}
	b.next++
	b.cuts[b.next] = &backupCut{cut: cut, used: time.Now()}
	return resp.Array(resp.Int(int64(b.next)), resp.Int(int64(cut.Len())), resp.Int(int64(index)))
}

// backupNext answers [more, [key, expireAt, payload]...] for up to count
// keys of the cut.
func (s *Server) backupNext(idArg, countArg string) resp.Value {
	id, err1 := strconv.ParseUint(idArg, 10, 64)
	count, err2 := strconv.Atoi(countArg)
	if err1 != nil || err2 != nil || count < 1 || count > maxBackupBatch {
		return resp.Err(resp.NewError("ERR invalid backup id or count"))
	}
	b := &s.backups
	b.mu.Lock()
	bc, ok := b.cuts[id]
	if ok {
		bc.used = time.Now()
	}
	b.mu.Unlock()
	if !ok {
		return resp.Err(resp.NewError("ERR no such backup (ended, or idle for more than a minute)"))
	}
	bc.mu.Lock()
	defer bc.mu.Unlock()
	var keys []resp.Value
	more, err := bc.cut.Next(count, time.Now().UnixMilli(), func(key []byte, expireAt int64, payload []byte) error {
		keys = append(keys, resp.Array(resp.Bulk(key), resp.Int(expireAt), resp.Bulk(payload)))
		return nil
	})
	if err != nil {
		return nodeError(err)
	}
	m := int64(0)
	if more {
		m = 1
	}
	return resp.Array(resp.Int(m), resp.Array(keys...))
}

// sweep drops the cuts idle for backupIdle.
func (b *backupSessions) sweep(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, bc := range b.cuts {
		if now.Sub(bc.used) > backupIdle {
			delete(b.cuts, id)
		}
	}
}

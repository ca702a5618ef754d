package chaos

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// shard is one slot group of CLUSTER SHARDS, known by its first slot
// range (the run moves no slots, so a group's ranges never change).
type shard struct {
	start, end int
	leader     int   // node index of the master, -1 when unknown
	replicas   []int // node indexes of every replica, the master included
}

// topology asks the nodes who leads what.
type topology struct {
	nodes []*node
	index map[string]int // client address → node index

	mu      sync.Mutex
	clients map[int]*redis.Client
}

func newTopology(nodes []*node) *topology {
	t := &topology{nodes: nodes, index: map[string]int{}, clients: map[int]*redis.Client{}}
	for _, n := range nodes {
		t.index[n.client] = n.idx
	}
	return t
}

func (t *topology) client(i int) *redis.Client {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.clients[i]
	if c == nil {
		c = redis.NewClient(&redis.Options{
			Addr: t.nodes[i].client, DialTimeout: 300 * time.Millisecond,
			ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1, PoolSize: 2,
		})
		t.clients[i] = c
	}
	return c
}

func (t *topology) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.clients {
		_ = c.Close()
	}
	clear(t.clients)
}

// shards asks every running node for CLUSTER SHARDS. A node that names
// itself master of a group is believed over what others say of it (they
// may not have heard of an election yet); a group no node names a master
// of has leader -1. Groups come sorted by their first slot.
func (t *topology) shards(ctx context.Context) ([]shard, error) {
	byStart := map[int]*shard{}
	var lastErr error
	for _, n := range t.nodes {
		if !n.running() {
			continue // a stopped node would make us wait for nothing
		}
		c, cancel := context.WithTimeout(ctx, time.Second)
		reply, err := t.client(n.idx).ClusterShards(c).Result()
		cancel()
		if err != nil {
			lastErr = err
			continue
		}
		for _, s := range reply {
			t.merge(byStart, s, n.idx)
		}
	}
	if len(byStart) == 0 {
		return nil, fmt.Errorf("no node answered CLUSTER SHARDS: %w", lastErr)
	}
	out := make([]shard, 0, len(byStart))
	for _, s := range byStart {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b shard) int { return a.start - b.start })
	return out, nil
}

// merge adds what node asker says of one group. The run moves no slots, so
// a group is known by its first range.
func (t *topology) merge(byStart map[int]*shard, s redis.ClusterShard, asker int) {
	if len(s.Slots) == 0 {
		return
	}
	sh := byStart[int(s.Slots[0].Start)]
	if sh == nil {
		sh = &shard{start: int(s.Slots[0].Start), end: int(s.Slots[0].End), leader: -1}
		byStart[sh.start] = sh
	}
	for _, n := range s.Nodes {
		idx, ok := t.index[net.JoinHostPort(n.Endpoint, strconv.FormatInt(n.Port, 10))]
		if !ok {
			continue
		}
		if !slices.Contains(sh.replicas, idx) {
			sh.replicas = append(sh.replicas, idx)
		}
		if n.Role == "master" && (sh.leader < 0 || idx == asker) {
			sh.leader = idx
		}
	}
}

// leaderOf is the node leading the pick-th group (mod the number of
// groups), or -1 when no leader is known.
func (t *topology) leaderOf(ctx context.Context, pick uint64) (int, shard) {
	sh, err := t.shards(ctx)
	if err != nil || len(sh) == 0 {
		return -1, shard{leader: -1}
	}
	s := sh[pick%uint64(len(sh))]
	return s.leader, s
}

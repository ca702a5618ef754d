package chaos

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/slots"
)

// statusWait bounds one SLOTRAFT STATUS call: the asked node asks each of
// its peers for up to cluster.StatusTimeout, in parallel.
const statusWait = 3 * time.Second

// shard is one slot group, known by its id: slots move between groups
// (the migrate fault), so a group's ranges are only what they are now.
type shard struct {
	id       uint32
	ranges   []slots.Range
	leader   int   // node index of the leader, -1 when unknown
	replicas []int // node indexes of the map's replicas, the leader included
}

// rangesText renders the group's ranges, for descriptions.
func (s shard) rangesText() string {
	if len(s.ranges) == 0 {
		return "no slots"
	}
	txt := s.ranges[0].String()
	if len(s.ranges) > 1 {
		txt += fmt.Sprintf(" (+%d ranges)", len(s.ranges)-1)
	}
	return txt
}

// topology asks the nodes who leads what.
type topology struct {
	nodes []*node        // every planned node, spares included
	byID  map[string]int // node id → node index

	mu      sync.Mutex
	clients map[int]*redis.Client
}

func newTopology(nodes []*node) *topology {
	t := &topology{nodes: nodes, byID: map[string]int{}, clients: map[int]*redis.Client{}}
	for _, n := range nodes {
		t.byID[n.id] = n.idx
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
			ReadTimeout: statusWait, WriteTimeout: time.Second, MaxRetries: -1, PoolSize: 2,
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

// slotraftJSON sends SLOTRAFT <sub> to node i and decodes its JSON reply.
func (t *topology) slotraftJSON(ctx context.Context, i int, sub string, v any) error {
	c, cancel := context.WithTimeout(ctx, statusWait)
	defer cancel()
	raw, err := t.client(i).Do(c, "SLOTRAFT", sub).Text()
	if err == nil {
		err = json.Unmarshal([]byte(raw), v)
	}
	if err != nil {
		return fmt.Errorf("SLOTRAFT %s on %s: %w", sub, t.nodes[i].id, err)
	}
	return nil
}

// status asks every running member for SLOTRAFT STATUS, in parallel.
func (t *topology) status(ctx context.Context) ([]cluster.ClusterStatus, error) {
	var live []*node
	for _, n := range t.nodes {
		if n.running() {
			live = append(live, n) // a stopped node would make us wait for nothing
		}
	}
	sts := make([]cluster.ClusterStatus, len(live))
	errs := make([]error, len(live))
	var wg sync.WaitGroup
	for i, n := range live {
		wg.Go(func() { errs[i] = t.slotraftJSON(ctx, n.idx, "STATUS", &sts[i]) })
	}
	wg.Wait()
	var out []cluster.ClusterStatus
	for i := range live {
		if errs[i] == nil {
			out = append(out, sts[i])
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no node answered SLOTRAFT STATUS: %w", errors.Join(errs...))
	}
	return out, nil
}

// shards is every slot group as the running nodes see them, sorted by id.
func (t *topology) shards(ctx context.Context) ([]shard, error) {
	sts, err := t.status(ctx)
	if err != nil {
		return nil, err
	}
	return mergeStatus(sts, t.byID), nil
}

// mergeStatus joins what several nodes say. Slots and replicas come from
// the answer with the newest map (highest epoch); a group's leader is the
// replica that says it leads with the highest term in any answer (each
// answer carries the replicas' own reports, and a node that cannot reach
// the leader does not know it). Node ids not in byID are left out.
func mergeStatus(sts []cluster.ClusterStatus, byID map[string]int) []shard {
	newest := slices.MaxFunc(sts, func(a, b cluster.ClusterStatus) int { return cmp.Compare(a.Epoch, b.Epoch) })
	out := make([]shard, 0, len(newest.Groups))
	for _, g := range newest.Groups {
		s := shard{id: g.ID, leader: -1}
		for _, txt := range g.Slots {
			if r, err := slots.ParseRange(txt); err == nil {
				s.ranges = append(s.ranges, r)
			}
		}
		for _, r := range g.Replicas {
			if i, ok := byID[r.Node]; ok {
				s.replicas = append(s.replicas, i)
			}
		}
		s.leader = leaderIn(sts, g.ID, byID)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b shard) int { return cmp.Compare(a.id, b.id) })
	return out
}

// leaderIn is the node index of group id's leader with the highest term
// among the answers, -1 if none names one.
func leaderIn(sts []cluster.ClusterStatus, id uint32, byID map[string]int) int {
	leader, term := -1, uint64(0)
	for _, st := range sts {
		for _, g := range st.Groups {
			if g.ID != id || g.Leader == "" {
				continue
			}
			for _, r := range g.Replicas {
				i, ok := byID[r.Node]
				if ok && r.Node == g.Leader && (leader < 0 || r.Term > term) {
					leader, term = i, r.Term
				}
			}
		}
	}
	return leader
}

// leaderOf is the node leading the pick-th group (mod the number of
// groups, by id), or -1 when no leader is known.
func (t *topology) leaderOf(ctx context.Context, pick uint64) (int, shard) {
	sh, err := t.shards(ctx)
	if err != nil || len(sh) == 0 {
		return -1, shard{leader: -1}
	}
	s := sh[pick%uint64(len(sh))]
	return s.leader, s
}

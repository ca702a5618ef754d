package testcluster_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster/testcluster"
)

// nodeClient is a plain (non-cluster) client of node i.
func nodeClient(t *testing.T, c *testcluster.Cluster, i, protocol int) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: c.Addrs()[i], Protocol: protocol, ReadTimeout: 10 * time.Second})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// receiveSub waits for the next subscription confirmation (or error) on ps.
func receiveSub(ctx context.Context, ps *redis.PubSub) (*redis.Subscription, error) {
	for {
		msg, err := ps.ReceiveTimeout(ctx, 10*time.Second)
		if err != nil {
			return nil, err
		}
		if s, ok := msg.(*redis.Subscription); ok {
			return s, nil
		}
	}
}

// TestPubSubAcrossNodes: a subscriber on every node (RESP2 and RESP3, by
// channel and by pattern) receives every message published on any node,
// each publisher's messages in the order it published them.
func TestPubSubAcrossNodes(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitReady(20 * time.Second)
	ctx := context.Background()
	const perPublisher = 50

	type got struct {
		mu       sync.Mutex
		byName   map[string][]string // "message" or the pattern -> payloads
		complete chan struct{}
	}
	var subs []*got
	for i := range c.Len() {
		rdb := nodeClient(t, c, i, 2+i%2)
		ps := rdb.Subscribe(ctx, "news")
		t.Cleanup(func() { ps.Close() })
		if err := ps.PSubscribe(ctx, "ne*"); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := receiveSub(ctx, ps); err != nil {
				t.Fatalf("node %d: subscribe: %v", i, err)
			}
		}
		g := &got{byName: map[string][]string{}, complete: make(chan struct{})}
		subs = append(subs, g)
		go func() {
			for {
				msg, err := ps.ReceiveMessage(ctx)
				if err != nil {
					return // closed at the end of the test
				}
				g.mu.Lock()
				key := "message"
				if msg.Pattern != "" {
					key = msg.Pattern
				}
				g.byName[key] = append(g.byName[key], msg.Payload)
				if len(g.byName["message"]) == 3*perPublisher && len(g.byName["ne*"]) == 3*perPublisher {
					close(g.complete)
				}
				g.mu.Unlock()
			}
		}()
	}

	for i := range c.Len() {
		rdb := nodeClient(t, c, i, 2)
		// PUBSUB NUMSUB and PUBLISH's count are node-local, as in Redis Cluster.
		if n, err := rdb.PubSubNumSub(ctx, "news").Result(); err != nil || n["news"] != 1 {
			t.Fatalf("node %d: PUBSUB NUMSUB news = %v, %v", i, n, err)
		}
		if n, err := rdb.PubSubNumPat(ctx).Result(); err != nil || n != 1 {
			t.Fatalf("node %d: PUBSUB NUMPAT = %v, %v", i, n, err)
		}
	}
	var wg sync.WaitGroup
	for i := range c.Len() {
		rdb := nodeClient(t, c, i, 2)
		wg.Go(func() {
			for seq := range perPublisher {
				n, err := rdb.Publish(ctx, "news", fmt.Sprintf("%d:%d", i, seq)).Result()
				if err != nil || n != 2 {
					t.Errorf("publish on node %d: %d receivers here, %v; want 2 (channel + pattern)", i, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for i, g := range subs {
		select {
		case <-g.complete:
		case <-time.After(20 * time.Second):
			g.mu.Lock()
			t.Fatalf("subscriber on node %d got %d messages and %d pattern messages of %d", i,
				len(g.byName["message"]), len(g.byName["ne*"]), 3*perPublisher)
		}
		g.mu.Lock()
		for name, payloads := range g.byName {
			if err := inPublisherOrder(payloads); err != nil {
				t.Errorf("subscriber on node %d, %s: %v", i, name, err)
			}
		}
		g.mu.Unlock()
	}
}

// inPublisherOrder checks that the "publisher:seq" payloads of each
// publisher come in sequence, each exactly once.
func inPublisherOrder(payloads []string) error {
	next := map[string]int{}
	for _, p := range payloads {
		pub, seqText, _ := strings.Cut(p, ":")
		seq, err := strconv.Atoi(seqText)
		if err != nil {
			return fmt.Errorf("payload %q", p)
		}
		if seq != next[pub] {
			return fmt.Errorf("publisher %s: got %d, want %d", pub, seq, next[pub])
		}
		next[pub]++
	}
	return nil
}

// TestShardedPubSubLeaderChange: an SSUBSCRIBE client of a shard channel
// gets an sunsubscribe push when the slot's leader moves, the old leader
// redirects a new SSUBSCRIBE, and the client subscribing again through
// go-redis lands on the new leader and receives SPUBLISH there.
func TestShardedPubSubLeaderChange(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitReady(20 * time.Second)
	ctx := context.Background()
	rdb := clusterClient(c, 3)
	defer rdb.Close()
	ch, _ := keyInGroup(t, c, 0, "shard:")

	ps := rdb.SSubscribe(ctx, ch)
	defer ps.Close()
	if s, err := receiveSub(ctx, ps); err != nil || s.Kind != "ssubscribe" || s.Channel != ch || s.Count != 1 {
		t.Fatalf("ssubscribe: %v, %v", s, err)
	}
	publishUntilReceived(t, rdb, ps, ch, "before")

	old := c.LeaderIndex(0)
	hctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	// HandOff moves the node's leaderships away for good, so none comes
	// back under the test.
	if err := c.Node(old).HandOff(hctx); err != nil {
		t.Fatalf("hand off node %d: %v", old, err)
	}
	if s, err := receiveSub(ctx, ps); err != nil || s.Kind != "sunsubscribe" || s.Channel != ch || s.Count != 0 {
		t.Fatalf("after the leader moved: %v, %v; want sunsubscribe %s 0", s, err, ch)
	}

	// The old leader redirects SSUBSCRIBE (MOVED, or CLUSTERDOWN while it
	// learns the new leader).
	direct := nodeClient(t, c, old, 2).SSubscribe(ctx, ch)
	defer direct.Close()
	if _, err := direct.ReceiveTimeout(ctx, 10*time.Second); err == nil ||
		!(strings.HasPrefix(err.Error(), "MOVED ") || strings.HasPrefix(err.Error(), "CLUSTERDOWN")) {
		t.Fatalf("SSUBSCRIBE on the old leader: %v", err)
	}

	// Subscribe again as a go-redis application does on sunsubscribe.
	deadline := time.Now().Add(30 * time.Second)
	var again *redis.PubSub
	for again == nil {
		p := rdb.SSubscribe(ctx, ch)
		s, err := receiveSub(ctx, p)
		if err == nil && s.Kind == "ssubscribe" {
			again = p
			break
		}
		p.Close()
		if time.Now().After(deadline) {
			t.Fatalf("resubscribing: %v, %v", s, err)
		}
		rdb.ReloadState(ctx) // a MOVED reply: learn the new map
		time.Sleep(100 * time.Millisecond)
	}
	defer again.Close()
	publishUntilReceived(t, rdb, again, ch, "after")
	if li := c.LeaderIndex(0); li == old {
		t.Fatalf("group 0 is led by node %d again", li)
	}
}

// publishUntilReceived SPUBLISHes numbered messages until ps receives one
// (a publish can race a leadership move and reach nobody).
func publishUntilReceived(t *testing.T, rdb *redis.ClusterClient, ps *redis.PubSub, ch, prefix string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; ; i++ {
		if err := rdb.SPublish(ctx, ch, prefix+strconv.Itoa(i)).Err(); err != nil && time.Now().After(deadline) {
			t.Fatalf("spublish: %v", err)
		}
		msg, err := ps.ReceiveTimeout(ctx, time.Second)
		if m, ok := msg.(*redis.Message); ok && err == nil {
			if m.Channel != ch || !strings.HasPrefix(m.Payload, prefix) {
				t.Fatalf("got %v", m)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s message received: %v, %v", prefix, msg, err)
		}
	}
}

// TestPubSubSubscriberNodeKilled: go-redis subscribers whose node dies
// reconnect to another node, subscribe again, and receive what is
// published after.
func TestPubSubSubscriberNodeKilled(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitReady(20 * time.Second)
	ctx := context.Background()
	sub := namedClient(c, "victim-sub")
	defer sub.Close()
	pub := clusterClient(c, 2)
	defer pub.Close()

	ps := sub.Subscribe(ctx, "alerts")
	defer ps.Close()
	if s, err := receiveSub(ctx, ps); err != nil || s.Kind != "subscribe" {
		t.Fatalf("subscribe: %v, %v", s, err)
	}
	msgs := ps.Channel()
	victim := nodeOfClient(t, c, "victim-sub")
	awaitPayload(t, pub, msgs, "alerts", "before")

	c.StopNode(victim)
	awaitPayload(t, pub, msgs, "alerts", "after")
}

// nodeOfClient finds the node serving the subscribed connection named name.
func nodeOfClient(t *testing.T, c *testcluster.Cluster, name string) int {
	t.Helper()
	for i := range c.Len() {
		list, err := nodeClient(t, c, i, 2).ClientList(context.Background()).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(list, "\n") {
			if strings.Contains(line, " name="+name+" ") && strings.Contains(line, " flags=P ") {
				return i
			}
		}
	}
	t.Fatalf("no node serves a subscribed connection named %s", name)
	return -1
}

// awaitPayload publishes numbered messages every 100 ms until one arrives
// on msgs; the publisher retries through go-redis while nodes come and go.
func awaitPayload(t *testing.T, pub *redis.ClusterClient, msgs <-chan *redis.Message, ch, prefix string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		pctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_ = pub.Publish(pctx, ch, prefix+strconv.Itoa(i)).Err()
		cancel()
		select {
		case m := <-msgs:
			if strings.HasPrefix(m.Payload, prefix) {
				return
			}
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q message within 30 s", prefix)
		}
	}
}

// TestPubSubSlowSubscriber: a subscriber that never reads is disconnected
// once its pending output passes the pubsub hard limit, while the
// publisher (on another node) and the subscribers that read go on and
// receive every message.
func TestPubSubSlowSubscriber(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitReady(20 * time.Second)
	ctx := context.Background()
	const hard = 256 << 10
	for i := range c.Len() {
		if err := nodeClient(t, c, i, 2).ConfigSet(ctx, "client-output-buffer-limit", "pubsub 256kb 64kb 60").Err(); err != nil {
			t.Fatalf("CONFIG SET on node %d: %v", i, err)
		}
	}
	slow := dialSlow(t, c.Addrs()[0], "firehose")
	slowID := slow.id

	// Readers on the slow subscriber's node and on another node.
	type reader struct {
		ps   *redis.PubSub
		seen chan int
	}
	var readers []reader
	for _, i := range []int{0, 1} {
		ps := nodeClient(t, c, i, 2).Subscribe(ctx, "firehose")
		t.Cleanup(func() { ps.Close() })
		if _, err := receiveSub(ctx, ps); err != nil {
			t.Fatal(err)
		}
		r := reader{ps: ps, seen: make(chan int, 1)}
		readers = append(readers, r)
		go func() {
			for {
				m, err := ps.ReceiveMessage(ctx)
				if err != nil {
					return
				}
				n, _ := strconv.Atoi(strings.TrimRight(m.Payload[:16], " "))
				r.seen <- n
			}
		}()
	}

	pub := nodeClient(t, c, 2, 2)
	node0 := nodeClient(t, c, 0, 2)
	body := strings.Repeat("x", 32<<10)
	gone := false
	published := 0
	// Lockstep: each message is published once the readers got the last,
	// so only the slow subscriber's output grows. 1000 x 32 KB is far
	// beyond the limit plus what the kernel's socket buffers hold.
	for seq := 0; seq < 1000 && !(gone && seq > published+20); seq++ {
		if err := pub.Publish(ctx, "firehose", fmt.Sprintf("%-16d", seq)+body).Err(); err != nil {
			t.Fatalf("publish %d: %v", seq, err)
		}
		for i, r := range readers {
			select {
			case n := <-r.seen:
				if n != seq {
					t.Fatalf("reader %d got message %d, want %d", i, n, seq)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("reader %d did not get message %d", i, seq)
			}
		}
		if !gone && seq%8 == 0 {
			list, err := node0.ClientList(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(list, "id="+slowID+" ") {
				gone, published = true, seq
				t.Logf("slow subscriber disconnected after %d messages (%d KB)", seq+1, (seq+1)*32)
			}
		}
	}
	if !gone {
		t.Fatalf("the slow subscriber is still connected after 1000 messages of 32 KB (limit %d)", hard)
	}
	info, err := node0.Info(ctx, "stats").Result()
	if err != nil || !strings.Contains(info, "client_output_buffer_limit_disconnections:1\r\n") {
		t.Fatalf("INFO stats: %v\n%s", err, info)
	}
	// The slow client reads what reached its socket, then the end.
	if err := slow.drainToEOF(); err != nil {
		t.Fatalf("slow subscriber's connection: %v", err)
	}
}

// slowConn is a raw subscriber that stops reading after its subscribe
// confirmation. (Its receive buffer keeps the default size: a tiny one
// would make reading the backlog at the end crawl, with window updates
// smaller than loopback's MSS.)
type slowConn struct {
	c  net.Conn
	rd *bufio.Reader
	id string
}

func dialSlow(t *testing.T, addr, channel string) *slowConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	s := &slowConn{c: nc, rd: bufio.NewReader(nc)}
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(nc, "*2\r\n$6\r\nCLIENT\r\n$2\r\nID\r\n*2\r\n$9\r\nSUBSCRIBE\r\n$%d\r\n%s\r\n", len(channel), channel)
	line, err := s.rd.ReadString('\n')
	if err != nil || line[0] != ':' {
		t.Fatalf("CLIENT ID: %q, %v", line, err)
	}
	s.id = strings.TrimSpace(line[1:])
	want := fmt.Sprintf("*3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:1\r\n", len(channel), channel)
	buf := make([]byte, len(want))
	if _, err := io.ReadFull(s.rd, buf); err != nil || string(buf) != want {
		t.Fatalf("subscribe: %q, %v", buf, err)
	}
	_ = nc.SetDeadline(time.Time{})
	return s
}

// drainToEOF reads until the server's close shows (EOF or reset).
func (s *slowConn) drainToEOF() error {
	_ = s.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	buf := make([]byte, 64<<10)
	for {
		if _, err := s.rd.Read(buf); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return fmt.Errorf("still open: %w", err)
			}
			return nil
		}
	}
}

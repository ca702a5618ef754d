package server

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
)

// eventsUntil reads a pattern subscriber's messages until every wanted
// "channel message" was seen (a want ending in "*": a message with that
// prefix), and returns them all.
func eventsUntil(t *testing.T, sub *rvConn, want ...string) []string {
	t.Helper()
	missing := map[string]bool{}
	for _, w := range want {
		missing[w] = true
	}
	return eventsWhile(t, sub, func(ev string) bool {
		for w := range missing {
			if w == ev || strings.HasSuffix(w, "*") && strings.HasPrefix(ev, strings.TrimSuffix(w, "*")) {
				delete(missing, w)
			}
		}
		return len(missing) > 0
	}, func() []string { return keys(missing) })
}

// eventsWhile reads events while more(event) says so, within
// cluster.TestWait; what is still awaited goes in the failure.
func eventsWhile(t *testing.T, sub *rvConn, more func(ev string) bool, awaited func() []string) []string {
	t.Helper()
	var got []string
	deadline := time.Now().Add(cluster.TestWait)
	for len(awaited()) > 0 {
		_ = sub.c.SetReadDeadline(deadline)
		m, err := readRV(sub.rd)
		if err != nil {
			t.Fatalf("events: missing %q; got %q (%v)", awaited(), got, err)
		}
		if len(m.elems) != 4 || m.elems[0].str != "pmessage" {
			t.Fatalf("not a pmessage: %s", m.flat())
		}
		ev := m.elems[2].str + " " + m.elems[3].str
		got = append(got, ev)
		if !more(ev) {
			break
		}
	}
	return got
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestSentinelDownEvents: a replica's node stops, then the master's, so
// the group has no quorum: the facade left alone publishes +sdown for the
// stopped replica and facade, +sdown for the master (no leader), +odown
// once gossip agrees its node is gone; CKQUORUM fails, IS-MASTER-DOWN says
// so, MASTER shows it; the master keeps its address, as Sentinel's. Once
// both are back, -odown and -sdown.
func TestSentinelDownEvents(t *testing.T) {
	c, fns := sentinelCluster(t)
	c.LeadersSpread() // no leadership transfer under the test
	leader := c.Leader(1)
	other, alone := (leader+1)%3, (leader+2)%3
	sub := dialRV(t, fns[alone].facade)
	if got := sub.do("PSUBSCRIBE", "*").flat(); got != "[psubscribe * :1]" {
		t.Fatalf("PSUBSCRIBE = %q", got)
	}
	maddr := c.Peers[leader].ClientAddr
	master := "master mymaster " + strings.Replace(maddr, ":", " ", 1)
	oaddr := c.Peers[other].ClientAddr
	// The replica first: the master keeps its quorum; then the master:
	// the node left alone cannot elect another.
	for _, i := range []int{other, leader} {
		fns[i].f.Close()
		fns[i].srv.Close()
		c.Stop(i)
	}
	at := " @ mymaster " + strings.Replace(maddr, ":", " ", 1)
	_, ofport, _ := net.SplitHostPort(fns[other].facade)
	eventsUntil(t, sub,
		"+sdown "+master,
		"+odown "+master+" #quorum *",
		"+sdown slave "+oaddr+" "+strings.Replace(oaddr, ":", " ", 1)+at,
		"+sdown sentinel "+NodeID(c.Peers[other].ID)+" 127.0.0.1 "+ofport+at)
	r := dialRV(t, fns[alone].facade)
	if got := r.do("SENTINEL", "CKQUORUM", "mymaster").flat(); got != "-NOQUORUM 1 usable Sentinels. Not enough available Sentinels to reach the specified quorum for this master. Not enough available Sentinels to reach the majority and authorize a failover" {
		t.Errorf("CKQUORUM = %q", got)
	}
	h, p, _ := net.SplitHostPort(maddr)
	if got := r.do("SENTINEL", "IS-MASTER-DOWN-BY-ADDR", h, p, "0", "*").flat(); got != "[:1 * :0]" {
		t.Errorf("IS-MASTER-DOWN-BY-ADDR = %q", got)
	}
	if got := r.do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster").flat(); got != "["+h+" "+p+"]" {
		t.Errorf("GET-MASTER-ADDR-BY-NAME of a master that is down = %q, want its address", got)
	}
	keys, vals := r.do("SENTINEL", "MASTER", "mymaster").fields()
	if vals["flags"] != "s_down,o_down,master,disconnected" || !strings.Contains(strings.Join(keys, ","), "last-ping-reply,s-down-time,o-down-time,down-after-milliseconds") {
		t.Errorf("MASTER of a master that is down: %q %v", keys, vals)
	}
	if info := r.do("INFO", "sentinel").str; !strings.Contains(info, "status=odown") {
		t.Errorf("INFO sentinel = %q", info)
	}
	c.Restart(leader)
	c.Restart(other)
	// -odown, and the master up again (-sdown) or another node leading
	// (+switch-master away from it), in either order (one refresh may
	// publish both).
	odownCleared, back := false, false
	eventsWhile(t, sub, func(ev string) bool {
		odownCleared = odownCleared || ev == "-odown "+master
		back = back || ev == "-sdown "+master || strings.HasPrefix(ev, "+switch-master mymaster "+h+" "+p+" ")
		return !odownCleared || !back
	}, func() []string {
		var out []string
		if !odownCleared {
			out = append(out, "-odown "+master)
		}
		if !back {
			out = append(out, "-sdown "+master+" or +switch-master")
		}
		return out
	})
}

// TestSentinelProxyMaster: in a cluster of several groups the master is a
// node's proxy: none announced, the name has no address (an error that
// says so); once nodes announce proxies, each facade names its own node's
// (or the first live one), REPLICAS is empty, FAILOVER refuses; when the
// proxy's node stops, +switch-master to another.
func TestSentinelProxyMaster(t *testing.T) {
	c := cluster.NewTestCluster(t, 3, 3)
	var fns []facadeNode
	for _, n := range c.Nodes {
		fns = append(fns, serveFacade(t, n))
	}
	r := dialRV(t, fns[0].facade)
	if got := r.do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster").flat(); got != "-ERR master 'mymaster' has no address: the cluster has 3 slot groups and no node announces a proxy (--proxy-bind) that serves them all; see docs/sentinel.md" {
		t.Errorf("GET-MASTER-ADDR-BY-NAME without proxies = %q", got)
	}
	if got := r.do("SENTINEL", "MASTERS").flat(); got != "[]" {
		t.Errorf("MASTERS without proxies = %q", got)
	}
	if got := r.do("ROLE").flat(); got != "[sentinel [mymaster]]" {
		t.Errorf("ROLE = %q", got)
	}
	c.Nodes[1].SetProxyAddr("127.0.0.1:6402")
	c.Nodes[2].SetProxyAddr("127.0.0.1:6403")
	r3 := dialRV(t, fns[2].facade)
	cluster.PollUntil(t, "node 3's facade names its own proxy", func() bool {
		return r3.do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster").flat() == "[127.0.0.1 6403]"
	})
	// Gossip carries the proxies' addresses: the switch below needs node 1
	// to know both (an update may take a while to reach it on a loaded
	// machine, and without the other proxy there is nothing to switch to).
	cluster.PollUntil(t, "node 1 to hear of both proxies", func() bool {
		return c.Nodes[0].FrontEndsOf(c.Nodes[1].Self().ID).Proxy != "" && c.Nodes[0].FrontEndsOf(c.Nodes[2].Self().ID).Proxy != ""
	})
	// Node 1 has no proxy: its facade names the first live node's it
	// hears of, and keeps it while it is up.
	var named string
	cluster.PollUntil(t, "node 1's facade names a proxy", func() bool {
		named = r.do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster").flat()
		return named == "[127.0.0.1 6402]" || named == "[127.0.0.1 6403]"
	})
	if got := r.do("SENTINEL", "REPLICAS", "mymaster").flat(); got != "[]" {
		t.Errorf("REPLICAS of a proxy = %q", got)
	}
	if got := r.do("SENTINEL", "FAILOVER", "mymaster").flat(); !strings.HasPrefix(got, "-ERR slotraft's Sentinel facade: master 'mymaster' is a proxy of a cluster of 3 slot groups") {
		t.Errorf("FAILOVER of a proxy = %q", got)
	}
	sub := dialRV(t, fns[0].facade)
	sub.do("PSUBSCRIBE", "+switch-master")
	stop, next := 1, "6403"
	if named == "[127.0.0.1 6403]" {
		stop, next = 2, "6402"
	}
	fns[stop].f.Close()
	fns[stop].srv.Close()
	c.Stop(stop)
	eventsUntil(t, sub, "+switch-master mymaster 127.0.0.1 "+strings.Trim(named, "[]")[len("127.0.0.1 "):]+" 127.0.0.1 "+next)
}

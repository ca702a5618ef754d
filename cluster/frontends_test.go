package cluster

import (
	"fmt"
	"testing"
)

// TestFrontEndsGossip: front-end addresses reach every node by gossip,
// and after a burst of changes every node ends with the last one (each
// change announces itself in the background; an older announcement must
// never win).
func TestFrontEndsGossip(t *testing.T) {
	c := NewTestCluster(t, 3, 3)
	c.Nodes[1].SetProxyAddr("127.0.0.1:6402")
	for i := range 20 {
		c.Nodes[2].SetSentinelAddr(fmt.Sprintf("127.0.0.1:%d", 26100+i))
		c.Nodes[2].SetProxyAddr(fmt.Sprintf("127.0.0.1:%d", 6500+i))
	}
	want := FrontEnds{Sentinel: "127.0.0.1:26119", Proxy: "127.0.0.1:6519"}
	PollUntil(t, "every node to hear of the last addresses", func() bool {
		for _, n := range c.Nodes {
			if n.FrontEndsOf(c.Peers[1].ID).Proxy != "127.0.0.1:6402" || n.FrontEndsOf(c.Peers[2].ID) != want {
				return false
			}
		}
		return true
	})
}

package testports

import (
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"testing"
)

// The ports are drawn at random from Low to High-1: below Linux's
// ephemeral range (32768-60999), where the OS puts outgoing connections'
// ports and every ":0" listener, so no one else takes a port between the
// moment it is drawn and the moment its process binds it (an outgoing
// connection took a bus port drawn with ":0" in CI, TestBusTLSFromPKI),
// and above the fixed ranges of the `slotraft dev` tests.
const (
	Low  = 22100
	High = 32768
)

// handedOut are the ports Free ever returned in this test binary: a port
// given to a process that has not bound it yet is free for the OS, and
// would be handed to the next process too.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// Free returns n distinct loopback ports that are free now and that this
// test binary has not handed out before.
func Free(t testing.TB, n int) []int {
	t.Helper()
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	ports := make([]int, 0, n)
	handedOut.Lock()
	defer handedOut.Unlock()
	for tries := 0; len(ports) < n; tries++ {
		if tries == 10000 {
			t.Fatalf("free ports: only %d of %d free in %d-%d", len(ports), n, Low, High-1)
		}
		p := Low + rand.IntN(High-Low)
		if handedOut.ports[p] {
			continue // given to a process earlier, which may not have bound it yet
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue // in use
		}
		lns = append(lns, ln) // held open until all are drawn
		handedOut.ports[p] = true
		ports = append(ports, p)
	}
	return ports
}

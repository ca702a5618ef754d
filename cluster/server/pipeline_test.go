package server

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/slots"
)

// TestPipelinedRuns: a pipeline is answered in order whatever mix of
// reads, writes, errors and other groups' keys it holds, and a run of
// reads of one group shares one read-index round.
func TestPipelinedRuns(t *testing.T) {
	c := cluster.NewTestCluster(t, 3, 3)
	const gid = 1
	li, addr := serveLeader(t, c, gid)
	g := c.Nodes[li].Groups()[gid-1]
	k1, k2 := cluster.KeyIn(gid, 3, "p1"), cluster.KeyIn(gid, 3, "p2")
	other := cluster.KeyIn(2, 3, "p3")
	slot := int(slots.Of([]byte(other)))

	t.Run("mixed", func(t *testing.T) {
		bc := dialBlk(t, addr)
		steps := []struct {
			args []string
			want string // prefix of the flat reply
		}{
			{[]string{"SET", k1, "a"}, "+OK"},
			{[]string{"GET", k1}, "a"},
			{[]string{"GET", k2}, "nil"},
			{[]string{"SET", k2, "b"}, "+OK"},
			{[]string{"GET", k2}, "b"},
			{[]string{"MGET", k1}, "[a]"},
			{[]string{"GET", other}, "-MOVED " + strconv.Itoa(slot) + " "},
			{[]string{"GET", k1}, "a"},
			{[]string{"INCR", k1}, "-ERR value is not an integer or out of range"},
			{[]string{"STRLEN", k1}, ":1"},
			{[]string{"LPUSH", k1, "x"}, "-WRONGTYPE"},
			{[]string{"GET", k1}, "a"},
			{[]string{"PING"}, "+PONG"},
			{[]string{"EXISTS", k1, k1}, ":2"},
		}
		var all []string
		for _, st := range steps {
			all = append(all, encodeCmd(st.args...))
		}
		if _, err := bc.c.Write([]byte(strings.Join(all, ""))); err != nil {
			t.Fatal(err)
		}
		for i, st := range steps {
			if got := bc.read(5 * time.Second); !strings.HasPrefix(got, st.want) {
				t.Fatalf("reply %d to %q = %q, want %q…", i, st.args, got, st.want)
			}
		}
	})

	t.Run("reads share a round", func(t *testing.T) {
		bc := dialBlk(t, addr)
		const reads = 200
		var all strings.Builder
		for i := range reads {
			key := k1
			if i%2 == 1 {
				key = k2
			}
			all.WriteString(encodeCmd("GET", key))
		}
		before := g.ReadRounds()
		if _, err := bc.c.Write([]byte(all.String())); err != nil {
			t.Fatal(err)
		}
		for i := range reads {
			want := "a"
			if i%2 == 1 {
				want = "b"
			}
			if got := bc.read(5 * time.Second); got != want {
				t.Fatalf("GET %d = %q, want %q", i, got, want)
			}
		}
		// One pipeline read in one go takes one round; a pipeline that
		// arrives in a few pieces takes a few. One round per GET (200)
		// is what this guards against.
		if rounds := g.ReadRounds() - before; rounds < 1 || rounds > 5 {
			t.Fatalf("%d pipelined GETs took %d read-index rounds, want 1 (a few at most)", reads, rounds)
		}
	})
}

func encodeCmd(args ...string) string {
	s := fmt.Sprintf("*%d\r\n", len(args))
	for _, a := range args {
		s += fmt.Sprintf("$%d\r\n%s\r\n", len(a), a)
	}
	return s
}

package difftest

import (
	"bufio"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
)

// Client-side caching against redis-server: every error of CLIENT
// TRACKING and CLIENT CACHING, the replies of GETREDIR and TRACKINGINFO,
// and, byte for byte, the invalidations a tracking client (RESP3) and a
// redirection (RESP2 and RESP3) receive.

// TestTrackingErrorsDifferential runs the same CLIENT TRACKING, CACHING,
// GETREDIR and TRACKINGINFO commands on both servers, in RESP2 and RESP3.
// %ME is the connection's own client ID.
func TestTrackingErrorsDifferential(t *testing.T) {
	redisAddr, slotraftAddr := startRedis(t), startSlotraft(t)
	cmds := []string{
		"CLIENT GETREDIR", "CLIENT TRACKINGINFO", "CLIENT CACHING yes", "CLIENT CACHING no", "CLIENT CACHING maybe",
		"CLIENT TRACKING", "CLIENT TRACKING maybe", "CLIENT TRACKING on FOO", "CLIENT TRACKING on REDIRECT",
		"CLIENT TRACKING on REDIRECT x", "CLIENT TRACKING on REDIRECT -1", "CLIENT TRACKING on REDIRECT 0",
		"CLIENT TRACKING on REDIRECT 987654", "CLIENT TRACKING off REDIRECT 987654",
		"CLIENT TRACKING on REDIRECT %ME REDIRECT %ME", "CLIENT TRACKING on PREFIX a",
		"CLIENT TRACKING on OPTIN OPTOUT", "CLIENT TRACKING on BCAST OPTIN", "CLIENT TRACKING on BCAST OPTOUT",
		"CLIENT TRACKING on BCAST PREFIX FOOBAR PREFIX FOO", "CLIENT TRACKING on BCAST PREFIX FOO PREFIX FOOBAR",
		"CLIENT TRACKING on BCAST PREFIX FOO PREFIX BAR", "CLIENT TRACKINGINFO", "CLIENT GETREDIR",
		"CLIENT TRACKING on BCAST PREFIX FO", "CLIENT TRACKING on BCAST PREFIX BARB", "CLIENT TRACKING on BCAST PREFIX x",
		"CLIENT TRACKING on", "CLIENT TRACKING on OPTIN", "CLIENT CACHING yes", "CLIENT TRACKINGINFO",
		"CLIENT TRACKING off", "CLIENT TRACKINGINFO", "CLIENT TRACKING on BCAST", "CLIENT TRACKINGINFO",
		"CLIENT TRACKING off", "CLIENT TRACKING on OPTIN NOLOOP REDIRECT %ME", "CLIENT GETREDIR", "CLIENT TRACKINGINFO",
		"CLIENT TRACKING on OPTOUT", "CLIENT CACHING no", "CLIENT CACHING yes", "CLIENT TRACKINGINFO",
		"CLIENT TRACKING off", "CLIENT TRACKING on OPTOUT", "CLIENT CACHING yes", "CLIENT CACHING no",
		"CLIENT TRACKINGINFO", "CLIENT TRACKING off", "CLIENT CACHING no", "CLIENT GETREDIR x", "CLIENT TRACKINGINFO x",
	}
	for _, proto := range []string{"2", "3"} {
		rc, sc := connect(t, redisAddr, proto), connect(t, slotraftAddr, proto)
		rid, sid := idOf(t, rc), idOf(t, sc)
		for _, line := range cmds {
			want := mustDo(t, rc, strings.Fields(strings.ReplaceAll(line, "%ME", rid))...)
			got := mustDo(t, sc, strings.Fields(strings.ReplaceAll(line, "%ME", sid))...)
			w, g := meID(want.String(), rid), meID(got.String(), sid)
			if w != g {
				t.Errorf("RESP%s %s:\n  redis:    %s\n  slotraft: %s", proto, line, w, g)
			}
		}
	}
}

// rawConn reads replies as their exact bytes.
type rawConn struct {
	c  *client
	rd *bufio.Reader
}

func (r rawConn) next(t *testing.T) string {
	t.Helper()
	_ = r.c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	if err := rawReply(r.rd, &b); err != nil {
		t.Fatalf("read (got %q): %v", b.String(), err)
	}
	return b.String()
}

func rawReply(rd *bufio.Reader, b *strings.Builder) error {
	line, err := rd.ReadString('\n')
	if err != nil {
		return err
	}
	b.WriteString(line)
	n, _ := strconv.Atoi(strings.TrimRight(line[1:], "\r\n"))
	switch line[0] {
	case '$', '=', '!':
		if n >= 0 {
			buf := make([]byte, n+2)
			if _, err := io.ReadFull(rd, buf); err != nil {
				return err
			}
			b.Write(buf)
		}
	case '*', '~', '>', '%', '|':
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for range max(n, 0) {
			if err := rawReply(rd, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// trackStep is one command of a tracking script: who sends it, and how
// many replies and invalidations each connection then reads.
type trackStep struct {
	who   string // "r" (the tracking client), "w" (a writer), "d" (the RESP2 redirection), "d3" (a RESP3 one)
	cmd   string // %D, %D3: the redirections' IDs
	reads map[string]int
}

// trackingScript covers Redis's invalidation formats: RESP3 pushes on the
// tracking connection, messages on __redis__:invalidate for a RESP2
// redirection, pushes to a RESP3 redirection, BCAST with prefixes and
// NOLOOP, OPTIN, flushes (the null spelt in the tracking client's
// protocol, even in another client's message), and tracking-redir-broken.
var trackingScript = []trackStep{
	{"r", "HELLO 3", map[string]int{"r": 1}},
	{"r", "CLIENT TRACKING on", map[string]int{"r": 1}},
	{"w", "SET k1 1", map[string]int{"w": 1}},
	{"r", "GET k1", map[string]int{"r": 1}},
	{"w", "SET k1 2", map[string]int{"w": 1, "r": 1}},
	{"r", "MGET {t}k1 {t}k2", map[string]int{"r": 1}},
	{"w", "MSET {t}k1 3 {t}k2 3", map[string]int{"w": 1, "r": 2}},
	{"r", "HSET h f 1", map[string]int{"r": 1}},
	{"r", "HGET h f", map[string]int{"r": 1}},
	{"r", "HDEL h f", map[string]int{"r": 2}}, // the reply, then its own invalidation
	{"r", "GET {t}k1", map[string]int{"r": 1}},
	{"w", "FLUSHALL", map[string]int{"w": 1, "r": 1}},
	{"r", "CLIENT TRACKING off", map[string]int{"r": 1}},
	{"r", "CLIENT TRACKING on REDIRECT %D", map[string]int{"r": 1}},
	{"r", "GET k1", map[string]int{"r": 1}},
	{"w", "SET k1 4", map[string]int{"w": 1, "d": 1}},
	{"r", "GET k1", map[string]int{"r": 1}},
	{"w", "FLUSHDB", map[string]int{"w": 1, "d": 1}},
	{"r", "HELLO 2", map[string]int{"r": 1}},
	{"r", "GET k1", map[string]int{"r": 1}},
	{"w", "FLUSHALL", map[string]int{"w": 1, "d": 1}}, // the RESP2 tracking client's null
	{"r", "CLIENT TRACKING off", map[string]int{"r": 1}},
	{"r", "CLIENT TRACKING on REDIRECT %D3", map[string]int{"r": 1}},
	{"r", "GET k1", map[string]int{"r": 1}},
	{"w", "SET k1 5", map[string]int{"w": 1, "d3": 1}},
	{"r", "GET k1", map[string]int{"r": 1}},
	{"w", "FLUSHALL", map[string]int{"w": 1, "d3": 1}}, // RESP2's null in a RESP3 push
	{"r", "CLIENT TRACKING off", map[string]int{"r": 1}},
	{"r", "CLIENT TRACKING on BCAST REDIRECT %D PREFIX a: PREFIX b:", map[string]int{"r": 1}},
	{"w", "MULTI", map[string]int{"w": 1}},
	{"w", "INCR a:{t}1", map[string]int{"w": 1}},
	{"w", "INCR b:{t}2", map[string]int{"w": 1}},
	{"w", "INCR a:{t}2", map[string]int{"w": 1}},
	{"w", "INCR c:{t}1", map[string]int{"w": 1}},
	{"w", "EXEC", map[string]int{"w": 1, "d": 2}},
	{"r", "CLIENT TRACKING on BCAST REDIRECT %D PREFIX c: NOLOOP", map[string]int{"r": 1}},
	{"r", "SET c:own 1", map[string]int{"r": 1}},
	{"w", "SET c:other 1", map[string]int{"w": 1, "d": 1}},
	{"r", "CLIENT TRACKING off", map[string]int{"r": 1}},
	{"r", "CLIENT TRACKING on OPTIN REDIRECT %D", map[string]int{"r": 1}},
	{"r", "GET {o}1", map[string]int{"r": 1}},
	{"r", "CLIENT CACHING yes", map[string]int{"r": 1}},
	{"r", "GET {o}2", map[string]int{"r": 1}},
	{"w", "MSET {o}1 1 {o}2 1", map[string]int{"w": 1, "d": 1}},
	{"r", "CLIENT LIST ID %R", map[string]int{"r": 1}},
	{"r", "CLIENT TRACKING off", map[string]int{"r": 1}},
	{"r", "HELLO 3", map[string]int{"r": 1}},
	{"r", "CLIENT TRACKING on REDIRECT %D3", map[string]int{"r": 1}},
	{"r", "GET k9", map[string]int{"r": 1}},
	{"d3", "QUIT", map[string]int{"d3": 1}},
	{"w", "SET k9 1", map[string]int{"w": 1, "r": 1}},
	{"r", "CLIENT TRACKINGINFO", map[string]int{"r": 1}},
	{"r", "CLIENT LIST ID %R", map[string]int{"r": 1}},
}

// TestTrackingInvalidationsDifferential runs trackingScript on both servers
// and compares every byte each connection receives.
func TestTrackingInvalidationsDifferential(t *testing.T) {
	run := func(addr string) []string {
		conns := map[string]rawConn{}
		for _, name := range []string{"r", "w", "d", "d3"} {
			c, err := dial(addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.close)
			conns[name] = rawConn{c: c, rd: c.r}
		}
		ids := map[string]string{}
		for name, tag := range map[string]string{"d": "%D", "d3": "%D3", "r": "%R"} {
			ids[tag] = idOf(t, conns[name].c)
		}
		mustDo(t, conns["d3"].c, "HELLO", "3")
		mustDo(t, conns["d"].c, "SUBSCRIBE", "__redis__:invalidate")
		var out []string
		for _, st := range trackingScript {
			cmd := st.cmd
			for _, tag := range []string{"%D3", "%D", "%R"} {
				cmd = strings.ReplaceAll(cmd, tag, ids[tag])
			}
			c := conns[st.who].c
			c.send(strings.Fields(cmd)...)
			if err := c.w.Flush(); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"r", "w", "d", "d3"} {
				for range st.reads[name] {
					got := conns[name].next(t)
					for tag, id := range ids {
						got = strings.ReplaceAll(got, "redir="+id+" ", "redir="+tag+" ")
						if strings.Contains(got, "redir") { // TRACKINGINFO, tracking-redir-broken
							got = strings.ReplaceAll(got, ":"+id+"\r\n", ":"+tag+"\r\n")
						}
					}
					switch {
					case strings.Contains(got, " addr="): // a CLIENT LIST line: the flags and redir only
						got = "flags=" + field(got, "flags") + " redir=" + field(got, "redir")
					case strings.HasPrefix(st.cmd, "HELLO") && name == st.who:
						got = "(the server's HELLO)"
					}
					out = append(out, st.who+" "+st.cmd+" -> "+name+": "+got)
				}
			}
			if st.cmd == "QUIT" { // until the server has let the connection go
				cluster.PollUntil(t, "the client that quit gone from CLIENT LIST", func() bool {
					return !strings.Contains(mustDo(t, conns["w"].c, "CLIENT", "LIST", "ID", ids["%D3"]).str, "id=")
				})
			}
		}
		// Nothing else came: a PING's reply is next on each connection.
		for _, name := range []string{"r", "w", "d"} {
			c := conns[name].c
			c.send("PING")
			if err := c.w.Flush(); err != nil {
				t.Fatal(err)
			}
			out = append(out, "PING -> "+name+": "+conns[name].next(t))
		}
		return out
	}
	want, got := run(startRedis(t)), run(startSlotraft(t))
	for i := range max(len(want), len(got)) {
		if w, g := lineAt(want, i), lineAt(got, i); w != g {
			t.Errorf("step %d:\n  redis:    %q\n  slotraft: %q", i, w, g)
		}
	}
}

// lineAt is lines[i], "" past its end.
func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return ""
}

// field is the value of name= in a CLIENT LIST line.
func field(line, name string) string {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, name+"="); ok {
			return v
		}
	}
	return ""
}

// meID replaces the integer id in a rendered reply by %ME.
func meID(s, id string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, ":"+id)
		if i < 0 {
			return b.String() + s
		}
		end := i + 1 + len(id)
		if end == len(s) || s[end] == ' ' || s[end] == ']' {
			b.WriteString(s[:i] + ":%ME")
		} else {
			b.WriteString(s[:end])
		}
		s = s[end:]
	}
}

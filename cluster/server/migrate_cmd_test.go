package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/redcon"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
)

func TestMigrateParse(t *testing.T) {
	tests := []struct {
		args    string
		want    migrateArgs
		wantErr string
	}{
		{"migrate h 1 k 0 5000", migrateArgs{host: "h", port: "1", timeout: 5 * time.Second, keys: cluster.Argv("k")}, ""},
		{"migrate h 1 k 2 0 copy REPLACE", migrateArgs{host: "h", port: "1", db: 2, timeout: time.Second, copy: true, replace: true, keys: cluster.Argv("k")}, ""},
		{"migrate h 1 k 0 -5 auth pw", migrateArgs{host: "h", port: "1", timeout: time.Second, auth: true, password: []byte("pw"), keys: cluster.Argv("k")}, ""},
		{"migrate h 1 k 0 10 auth2 u pw", migrateArgs{host: "h", port: "1", timeout: 10 * time.Millisecond, auth: true, user: []byte("u"), password: []byte("pw"), keys: cluster.Argv("k")}, ""},
		{`migrate h 1 "" 0 10 keys a b`, migrateArgs{host: "h", port: "1", timeout: 10 * time.Millisecond, keys: cluster.Argv("a", "b")}, ""},
		{"migrate h 1 k 0 9223372036854775807", migrateArgs{host: "h", port: "1", keys: cluster.Argv("k"),
			timeout: time.Duration(math.MaxInt64/int64(time.Millisecond)) * time.Millisecond}, ""},
		// Everything after KEYS is a key, option names included.
		{`migrate h 1 "" 0 10 keys copy auth`, migrateArgs{host: "h", port: "1", timeout: 10 * time.Millisecond, keys: cluster.Argv("copy", "auth")}, ""},
		{`migrate h 1 "" 0 10 keys`, migrateArgs{host: "h", port: "1", timeout: 10 * time.Millisecond, keys: cluster.Argv()}, ""},
		{"migrate h 1 k 0 10 keys a", migrateArgs{}, "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string"},
		{"migrate h 1 k 0 10 auth", migrateArgs{}, "ERR syntax error"},
		{"migrate h 1 k 0 10 auth2 u", migrateArgs{}, "ERR syntax error"},
		{"migrate h 1 k 0 10 bogus", migrateArgs{}, "ERR syntax error"},
		// Options are checked before the numbers, timeout before db.
		{"migrate h 1 k x y bogus", migrateArgs{}, "ERR syntax error"},
		{"migrate h 1 k x y", migrateArgs{}, "ERR value is not an integer or out of range"},
		{"migrate h 1 k 0 1.5", migrateArgs{}, "ERR value is not an integer or out of range"},
	}
	for _, tt := range tests {
		got, err := parseMigrate(words(tt.args))
		if errText(err) != tt.wantErr {
			t.Errorf("%s: error %q, want %q", tt.args, errText(err), tt.wantErr)
			continue
		}
		if err == nil && !sameMigrateArgs(got, tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.args, got, tt.want)
		}
	}
}

// words splits a command line on spaces; "" stands for an empty argument.
func words(line string) [][]byte {
	args := cluster.Argv(strings.Fields(line)...)
	for i, a := range args {
		if string(a) == `""` {
			args[i] = []byte{}
		}
	}
	return args
}

func sameMigrateArgs(a, b migrateArgs) bool {
	return a.host == b.host && a.port == b.port && a.db == b.db && a.timeout == b.timeout &&
		a.copy == b.copy && a.replace == b.replace && a.auth == b.auth &&
		bytes.Equal(a.user, b.user) && bytes.Equal(a.password, b.password) &&
		slices.EqualFunc(a.keys, b.keys, bytes.Equal)
}

func TestMigrateKeys(t *testing.T) {
	tests := []struct {
		args string
		want []int
	}{
		{"migrate h 1 k 0 10", []int{3}},
		{"migrate h 1 k 0 10 copy replace", []int{3}},
		{`migrate h 1 "" 0 10 keys a b`, []int{7, 8}},
		{`migrate h 1 "" 0 10 replace auth keys keys a`, []int{10}},
		{`migrate h 1 "" 0 10 auth2 keys keys keys a`, []int{10}},
		{"migrate h 1 k 0 10 keys a", nil},
		{`migrate h 1 "" 0 10 keys`, []int{}},
	}
	for _, tt := range tests {
		if got := migrateKeys(words(tt.args)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.args, got, tt.want)
		}
	}
}

func TestMigrateItemOf(t *testing.T) {
	w := fsm.Watch{Key: []byte("k"), Present: true, Seq: 7}
	payload := resp.Bulk([]byte("p"))
	tests := []struct {
		name           string
		payload, pttl  resp.Value
		wantTTL        int64
		wantOK         bool
		wantErr        string
		wantPayloadOut string
	}{
		{"no expiry", payload, resp.Int(-1), 0, true, "", "p"},
		{"expiry", payload, resp.Int(1500), 1500, true, "", "p"},
		{"about to expire", payload, resp.Int(0), 1, true, "", "p"},
		{"gone meanwhile", resp.Null(), resp.Int(-2), 0, false, "", ""},
		{"expired between the two reads", payload, resp.Int(-2), 0, false, "", ""},
		{"not serialisable", resp.Err(errors.New("DUMP of a stream value is not supported")), resp.Int(-1), 0, false,
			"ERR cannot MIGRATE key 'k': DUMP of a stream value is not supported", ""},
	}
	for _, tt := range tests {
		got, ok, err := migrateItemOf(w, tt.payload, tt.pttl)
		if errText(err) != tt.wantErr || ok != tt.wantOK {
			t.Errorf("%s: ok %v, error %q; want %v, %q", tt.name, ok, errText(err), tt.wantOK, tt.wantErr)
			continue
		}
		if ok && (got.ttl != tt.wantTTL || string(got.payload) != tt.wantPayloadOut || got.watch.Seq != w.Seq || string(got.key) != "k") {
			t.Errorf("%s: %+v", tt.name, got)
		}
	}
}

func TestMigrateWritePipeline(t *testing.T) {
	items := []migrateItem{{key: []byte("a"), ttl: 0, payload: []byte("P1")}, {key: []byte("b"), ttl: 42, payload: []byte("P2")}}
	a := migrateArgs{auth: true, user: []byte("u"), password: []byte("pw"), db: 3, selectDB: true, replace: true}
	var b bytes.Buffer
	if err := writeMigrate(&b, a, items); err != nil {
		t.Fatal(err)
	}
	want := "*3\r\n$4\r\nAUTH\r\n$1\r\nu\r\n$2\r\npw\r\n" +
		"*2\r\n$6\r\nSELECT\r\n$1\r\n3\r\n" +
		"*5\r\n$14\r\nRESTORE-ASKING\r\n$1\r\na\r\n$1\r\n0\r\n$2\r\nP1\r\n$7\r\nREPLACE\r\n" +
		"*5\r\n$14\r\nRESTORE-ASKING\r\n$1\r\nb\r\n$2\r\n42\r\n$2\r\nP2\r\n$7\r\nREPLACE\r\n"
	if b.String() != want {
		t.Errorf("pipeline\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	if err := writeMigrate(&b, migrateArgs{}, items[:1]); err != nil {
		t.Fatal(err)
	}
	if want := "*4\r\n$14\r\nRESTORE-ASKING\r\n$1\r\na\r\n$1\r\n0\r\n$2\r\nP1\r\n"; b.String() != want {
		t.Errorf("db 0, no auth: %q, want %q", b.String(), want)
	}
}

func TestMigrateReadReplies(t *testing.T) {
	long := "-ERR " + strings.Repeat("x", migrateMaxLine) + "\r\n"
	tests := []struct {
		name      string
		in        string
		auth      bool
		db        int64
		n         int
		restored  []int
		targetErr string
		ioErr     error
	}{
		{"all restored", "+OK\r\n+OK\r\n", false, 0, 2, []int{0, 1}, "", nil},
		{"first error is reported, others restored",
			"+OK\r\n-BUSYKEY Target key name already exists.\r\n+OK\r\n-ERR Bad data format\r\n", false, 0, 4,
			[]int{0, 2}, "BUSYKEY Target key name already exists.", nil},
		{"auth error fails every key", "-WRONGPASS invalid username-password pair or user is disabled.\r\n+OK\r\n+OK\r\n", true, 0, 2,
			nil, "WRONGPASS invalid username-password pair or user is disabled.", nil},
		{"select error fails every key", "+OK\r\n-ERR DB index is out of range\r\n-ERR x\r\n", true, 9, 1,
			nil, "ERR DB index is out of range", nil},
		{"connection closed midway", "+OK\r\n", false, 0, 2, []int{0}, "", errMigrateRead},
		{"no select reply", "", false, 1, 1, nil, "", errMigrateRead},
		{"bare LF line ends", "+OK\n", false, 0, 1, []int{0}, "", nil},
		{"unexpected reply", "$2\r\nOK\r\n", false, 0, 1, nil, "", errMigrateRead},
		{"reply too long", long, false, 0, 1, nil, "", errMigrateRead},
	}
	for _, tt := range tests {
		r := bufio.NewReaderSize(strings.NewReader(tt.in), migrateMaxLine)
		got := readMigrate(r, migrateArgs{auth: tt.auth, db: tt.db, selectDB: tt.db != 0}, tt.n)
		if !slices.Equal(got.restored, tt.restored) || got.targetErr != tt.targetErr || got.ioErr != tt.ioErr {
			t.Errorf("%s: %+v, want restored %v, error %q, io %v", tt.name, got, tt.restored, tt.targetErr, tt.ioErr)
		}
	}
}

func TestMigrateSameHostPort(t *testing.T) {
	tests := []struct {
		addr, host, port string
		want             bool
	}{
		{"127.0.0.1:7000", "127.0.0.1", "7000", true},
		{"Node-1.svc:7000", "node-1.svc", "7000", true},
		{"[::1]:7000", "::1", "7000", true},
		{"127.0.0.1:7000", "127.0.0.1", "07000", true},
		{"127.0.0.1:7000", "127.0.0.1", "7001", false},
		{"127.0.0.1:7000", "127.0.0.2", "7000", false},
		{"", "127.0.0.1", "7000", false},
		{"127.0.0.1:7000", "127.0.0.1", "x", false},
	}
	for _, tt := range tests {
		if got := sameHostPort(tt.addr, tt.host, tt.port); got != tt.want {
			t.Errorf("%s vs %s %s: %v", tt.addr, tt.host, tt.port, got)
		}
	}
}

// TestRestoreAskingAndMigrateMetadata: COMMAND INFO as Redis 7.2 shows them.
func TestRestoreAskingAndMigrateMetadata(t *testing.T) {
	tests := []struct {
		name, group string
		arity       int
		flags       []string
	}{
		{"restore-asking", "server", -4, []string{"write", "denyoom", "asking"}},
		{"restore", "generic", -4, []string{"write", "denyoom"}},
		{"migrate", "generic", -6, []string{"write", "movablekeys"}},
		{"cluster|setslot", "cluster", -4, []string{"admin", "stale"}},
	}
	for _, tt := range tests {
		m := commandMeta(t, tt.name)
		var flags []string
		for _, f := range m.Info().Elems[2].Elems {
			flags = append(flags, string(f.Str))
		}
		if m.Group != tt.group || m.Arity != tt.arity || !slices.Equal(flags, tt.flags) {
			t.Errorf("%s: group %s arity %d flags %v", tt.name, m.Group, m.Arity, flags)
		}
	}
}

// commandMeta finds a command or "container|sub" in the full table.
func commandMeta(t *testing.T, name string) *resp.Command {
	t.Helper()
	top, sub, _ := strings.Cut(name, "|")
	c := commands().lookup([]byte(top))
	if c == nil {
		t.Fatalf("%s unknown", top)
	}
	if sub == "" {
		return c.meta
	}
	i := slices.IndexFunc(c.meta.Subcommands, func(sc *resp.Command) bool { return sc.Name == name })
	if i < 0 {
		t.Fatalf("%s unknown", name)
	}
	return c.meta.Subcommands[i]
}

// fakeTarget stands in for MIGRATE's target: it records the commands it
// receives and answers each with answer's raw RESP ("" answers nothing).
type fakeTarget struct {
	ln      net.Listener
	answer  func(args []string) string
	mu      sync.Mutex
	cmds    [][]string
	accepts int        // connections accepted
	conns   []net.Conn // open ones, closed by the cleanup
	wg      sync.WaitGroup
}

func startFakeTarget(t *testing.T, answer func(args []string) string) *fakeTarget {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeTarget{ln: ln, answer: answer}
	f.wg.Add(1)
	go f.serve()
	t.Cleanup(func() { // a target going away: MIGRATE's cached connection is not waited for
		ln.Close()
		f.mu.Lock()
		for _, c := range f.conns {
			c.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	return f
}

func (f *fakeTarget) serve() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.accepts++
		f.conns = append(f.conns, c)
		f.mu.Unlock()
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer c.Close()
			rd := redcon.NewReader(c)
			for {
				cmd, err := rd.ReadCommand()
				if err != nil {
					return
				}
				args := make([]string, len(cmd.Args))
				for i, a := range cmd.Args {
					args[i] = string(a)
				}
				f.mu.Lock()
				f.cmds = append(f.cmds, args)
				f.mu.Unlock()
				if _, err := c.Write([]byte(f.answer(args))); err != nil {
					return
				}
			}
		}()
	}
}

func (f *fakeTarget) received() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.cmds)
}

func (f *fakeTarget) hostPort() (string, string) {
	h, p, _ := net.SplitHostPort(f.ln.Addr().String())
	return h, p
}

func answerOK([]string) string { return "+OK\r\n" }

// TestMigrateToAnotherInstance drives the real MIGRATE path against a
// fake target, on a one-node cluster.
func TestMigrateToAnotherInstance(t *testing.T) {
	c := cluster.NewTestCluster(t, 1, 1)
	for gid := uint32(1); gid <= 3; gid++ {
		c.Leader(gid)
	}
	_, addr := serveNode(t, c.Nodes[0])
	cl := dialBlk(t, addr)
	do := func(args ...string) string {
		t.Helper()
		cl.send(args...)
		return cl.read(10 * time.Second)
	}
	exists := func(key string) string { return do("EXISTS", key) }

	t.Run("moves a key with its TTL", func(t *testing.T) {
		f := startFakeTarget(t, answerOK)
		h, p := f.hostPort()
		do("SET", "mk1", "v", "PX", "100000")
		dump := do("DUMP", "mk1")
		if got := do("MIGRATE", h, p, "mk1", "0", "5000"); got != "+OK" {
			t.Fatalf("MIGRATE = %s", got)
		}
		if got := exists("mk1"); got != ":0" {
			t.Fatalf("EXISTS after MIGRATE = %s", got)
		}
		got := f.received()
		if len(got) != 1 || got[0][0] != "RESTORE-ASKING" || got[0][1] != "mk1" || got[0][3] != dump || len(got[0]) != 4 {
			t.Fatalf("target received %q", got)
		}
		if ttl, _ := strconv.Atoi(got[0][2]); ttl <= 0 || ttl > 100000 {
			t.Fatalf("TTL sent %s", got[0][2])
		}
	})

	t.Run("COPY keeps the key, options reach the target", func(t *testing.T) {
		f := startFakeTarget(t, answerOK)
		h, p := f.hostPort()
		do("SET", "{mk2}a", "1")
		do("SET", "{mk2}b", "2")
		if got := do("MIGRATE", h, p, "", "3", "5000", "COPY", "REPLACE", "AUTH2", "u", "pw", "KEYS", "{mk2}a", "{mk2}nope", "{mk2}b"); got != "+OK" {
			t.Fatalf("MIGRATE = %s", got)
		}
		if got := exists("{mk2}a"); got != ":1" {
			t.Fatalf("EXISTS after COPY = %s", got)
		}
		var names []string
		for _, cmd := range f.received() {
			names = append(names, strings.Join(cmd[:2], " ")+" "+cmd[len(cmd)-1])
		}
		want := []string{"AUTH u pw", "SELECT 3 3", "RESTORE-ASKING {mk2}a REPLACE", "RESTORE-ASKING {mk2}b REPLACE"}
		if !slices.Equal(names, want) {
			t.Fatalf("target received %q, want %q", names, want)
		}
	})

	t.Run("one connection per target, SELECT only to change database", func(t *testing.T) {
		f := startFakeTarget(t, answerOK)
		h, p := f.hostPort()
		for i, db := range []string{"3", "3", "0"} {
			k := "{mk5}" + strconv.Itoa(i)
			do("SET", k, "v")
			if got := do("MIGRATE", h, p, k, db, "5000"); got != "+OK" {
				t.Fatalf("MIGRATE to db %s = %s", db, got)
			}
		}
		var names []string
		for _, cmd := range f.received() {
			names = append(names, strings.Join(cmd[:2], " "))
		}
		want := []string{"SELECT 3", "RESTORE-ASKING {mk5}0", "RESTORE-ASKING {mk5}1", "SELECT 0", "RESTORE-ASKING {mk5}2"}
		f.mu.Lock()
		accepts := f.accepts
		f.mu.Unlock()
		if !slices.Equal(names, want) || accepts != 1 {
			t.Fatalf("target received %q on %d connections, want %q on 1", names, accepts, want)
		}
	})

	t.Run("target errors pass through, restored keys are deleted", func(t *testing.T) {
		f := startFakeTarget(t, func(args []string) string {
			if args[1] == "{mk3}busy" {
				return "-BUSYKEY Target key name already exists.\r\n"
			}
			return "+OK\r\n"
		})
		h, p := f.hostPort()
		do("SET", "{mk3}busy", "1")
		do("SET", "{mk3}ok", "2")
		if got := do("MIGRATE", h, p, "", "0", "5000", "KEYS", "{mk3}busy", "{mk3}ok"); got != "-ERR Target instance replied with error: BUSYKEY Target key name already exists." {
			t.Fatalf("MIGRATE = %s", got)
		}
		if a, b := exists("{mk3}busy"), exists("{mk3}ok"); a != ":1" || b != ":0" {
			t.Fatalf("EXISTS busy %s, ok %s", a, b)
		}
	})

	t.Run("a key changed meanwhile keeps the source", func(t *testing.T) {
		var once sync.Once
		f := startFakeTarget(t, func([]string) string {
			// Between the DUMP and the deletion, as another client would.
			once.Do(func() { _ = setDirect(c.Nodes[0], "mk4", "changed") })
			return "+OK\r\n"
		})
		h, p := f.hostPort()
		do("SET", "mk4", "first")
		if got := do("MIGRATE", h, p, "mk4", "0", "5000"); got != "-"+errMigrateChanged.Error() {
			t.Fatalf("MIGRATE = %s", got)
		}
		if got := do("GET", "mk4"); got != "changed" {
			t.Fatalf("GET after MIGRATE = %s", got)
		}
	})

	t.Run("NOKEY, CROSSSLOT and argument errors", func(t *testing.T) {
		f := startFakeTarget(t, answerOK)
		h, p := f.hostPort()
		tests := []struct {
			args []string
			want string
		}{
			{[]string{"MIGRATE", h, p, "missing", "0", "100"}, "+NOKEY"},
			{[]string{"MIGRATE", h, p, "", "0", "100", "KEYS", "a", "b"}, "-CROSSSLOT Keys in request don't hash to the same slot"},
			{[]string{"MIGRATE", h, p, "", "0", "100", "KEYS"}, "+NOKEY"},
			{[]string{"MIGRATE", h, p, "k", "0", "100", "KEYS", "k"}, "-ERR When using MIGRATE KEYS option, the key argument must be set to the empty string"},
			{[]string{"MIGRATE", h, p, "k", "0", "x"}, "-ERR value is not an integer or out of range"},
			{[]string{"MIGRATE", h, p, "k", "0"}, "-ERR wrong number of arguments for 'migrate' command"},
		}
		for _, tt := range tests {
			if got := do(tt.args...); got != tt.want {
				t.Errorf("%q = %s, want %s", tt.args, got, tt.want)
			}
		}
		if got := f.received(); len(got) != 0 {
			t.Errorf("target received %q", got)
		}
	})

	t.Run("IOERR when the target is unreachable or silent", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		h, p, _ := net.SplitHostPort(ln.Addr().String())
		ln.Close()
		do("SET", "mk5", "v")
		if got := do("MIGRATE", h, p, "mk5", "0", "1000"); got != "-"+errMigrateConnect.Error() {
			t.Errorf("MIGRATE to a closed port = %s", got)
		}
		silent := startFakeTarget(t, func([]string) string { return "" })
		h, p = silent.hostPort()
		if got := do("MIGRATE", h, p, "mk5", "0", "200"); got != "-"+errMigrateRead.Error() {
			t.Errorf("MIGRATE to a silent target = %s", got)
		}
		if got := exists("mk5"); got != ":1" {
			t.Errorf("EXISTS after failed MIGRATEs = %s", got)
		}
	})

	t.Run("a stream is migrated in its DUMP form", func(t *testing.T) {
		f := startFakeTarget(t, answerOK)
		h, p := f.hostPort()
		do("XADD", "mk6", "*", "f", "v")
		dump := do("DUMP", "mk6")
		if got := do("MIGRATE", h, p, "mk6", "0", "1000"); got != "+OK" {
			t.Errorf("MIGRATE of a stream = %s", got)
		}
		if got := f.received(); len(got) != 1 || got[0][0] != "RESTORE-ASKING" || got[0][3] != dump {
			t.Errorf("target received %q", got)
		}
	})
}

// setDirect proposes SET key value to the group of key's slot on n, which
// leads it (safe to call from any goroutine).
func setDirect(n *cluster.Node, key, value string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := n.GroupOf(cluster.KeySlot(key)).Propose(ctx, [][][]byte{cluster.Argv("SET", key, value)})
	return err
}

// TestMigrateConnsIdle: a kept connection is closed after
// migrateConnIdle unused, and a second one for the same target or one
// over the cache's size is closed at once.
func TestMigrateConnsIdle(t *testing.T) {
	var m migrateConns
	now := time.Now()
	pipe := func() *migrateConn {
		a, b := net.Pipe()
		t.Cleanup(func() { b.Close() })
		return &migrateConn{nc: a}
	}
	first, second := pipe(), pipe()
	m.put("t:1", first, now)
	m.put("t:1", second, now)
	if m.cached() != 1 {
		t.Fatalf("%d kept, want 1", m.cached())
	}
	if _, err := second.nc.Write([]byte("x")); err == nil {
		t.Fatal("the second connection to the same target was kept open")
	}
	m.closeIdle(now.Add(migrateConnIdle - time.Millisecond))
	if m.cached() != 1 {
		t.Fatal("closed before its idle time")
	}
	m.closeIdle(now.Add(migrateConnIdle))
	if m.cached() != 0 {
		t.Fatal("kept after its idle time")
	}
	for i := range migrateMaxConns + 1 {
		m.put("t:"+strconv.Itoa(i), pipe(), now)
	}
	if m.cached() != migrateMaxConns {
		t.Fatalf("%d kept, want at most %d", m.cached(), migrateMaxConns)
	}
	m.closeAll()
	m.put("t:late", pipe(), now)
	if m.cached() != 0 {
		t.Fatal("a connection was kept after closeAll")
	}
}

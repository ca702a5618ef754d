package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

func TestHCLogAdapter(t *testing.T) {
	var buf bytes.Buffer
	base := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slogTrace}))
	l := newHCLog(base, "raft", slog.LevelDebug)
	tests := []struct {
		log  func()
		want string // "" = nothing logged
	}{
		{func() { l.Trace("t") }, ""},
		{func() { l.Debug("d", "k", 1) }, `level=DEBUG msg=d logger=raft k=1`},
		{func() { l.Info("i") }, `level=INFO msg=i logger=raft`},
		{func() { l.Warn("w", "odd") }, `level=WARN msg=w logger=raft EXTRA_VALUE_AT_END=odd`},
		{func() { l.Error("e", 7, "v") }, `level=ERROR msg=e logger=raft 7=v`},
		{func() { l.Named("net").With("peer", "b").Info("x") }, `msg=x logger=raft.net peer=b`},
		{func() { l.StandardLogger(nil).Print("[WARN] std") }, `level=WARN msg=std logger=raft`},
		{func() { l.Named("memberlist").StandardLogger(nil).Print("[ERR] memberlist: Failed to x") }, `level=ERROR msg="Failed to x" logger=raft.memberlist`},
		{func() { l.StandardLogger(nil).Print("[ERR] accept: use of closed network connection") }, `level=DEBUG`},
		{func() { l.StandardLogger(nil).Print("[ERR] memberlist: Failed to send UDP ping: transport: closed") }, `level=DEBUG`},
		{func() { l.Info("f", "servers", hclog.Fmt("%+v", []int{1, 2})) }, `servers="[1 2]"`},
		{func() { l.Info("d", "backoff time", 10*time.Millisecond) }, `"backoff time"=10ms`},
		{func() { l.Info("s", "peer", struct{ ID, Address string }{"n2", "a:1"}) }, `peer="{ID:n2 Address:a:1}"`},
		{func() { l.Info("q", "v", hclog.Quote("a b"), "h", hclog.Hex(255)) }, `v="\"a b\"" h=0xff`},
		{func() { l.Info("st", "state", stringer("Leader")) }, `state=Leader`},
		{func() { l.Error("failed to heartbeat to", "peer", "b") }, `level=WARN msg="failed to heartbeat to"`},
		{func() { l.Error("peer has newer term, stopping replication") }, `level=INFO`},
		{func() { l.Error("failed to append to logs", "error", errors.New("disk")) }, `level=ERROR`},
		{func() { l.Error("failed to decode incoming command", "error", fmt.Errorf("read: %w", net.ErrClosed)) }, `level=DEBUG`},
	}
	for _, tc := range tests {
		buf.Reset()
		tc.log()
		got := buf.String()
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) || strings.Count(got, "\n") > 1 {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
	if l.IsTrace() || !l.IsDebug() || l.GetLevel() != hclog.Debug {
		t.Fatalf("levels: trace %v debug %v level %v", l.IsTrace(), l.IsDebug(), l.GetLevel())
	}
	l.SetLevel(hclog.Error)
	buf.Reset()
	l.Warn("hidden")
	if buf.Len() != 0 || l.GetLevel() != hclog.Error {
		t.Fatalf("SetLevel(Error) still logs warnings: %q", buf.String())
	}
}

type stringer string

func (s stringer) String() string { return string(s) }

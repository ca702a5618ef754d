package cluster

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

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
		{func() { l.StandardLogger(nil).Print("[WARN] std") }, `level=WARN msg="[WARN] std"`},
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

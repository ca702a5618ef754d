package cluster

import (
	"context"
	"errors"
	"testing"
)

func TestReportRoundTrip(t *testing.T) {
	for _, r := range []NodeReport{{}, {RunID: "abc", Info: "# Server\r\nrun_id:abc\r\n"}, {Info: "\x00\xff"}} {
		got, err := decodeReport(encodeReport(r))
		if err != nil || got != r {
			t.Errorf("%+v: %+v, %v", r, got, err)
		}
	}
	for _, bad := range []string{"", "\x02\x00\x00", "\x01", "\x01\x00", "\x01\x05ab\x00", "\x01\x00\x00!", "\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"} {
		if _, err := decodeReport([]byte(bad)); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

// TestReportOverTheBus: a node asks another for its report; a node whose
// front end makes none answers ErrNoReport.
func TestReportOverTheBus(t *testing.T) {
	c := NewTestCluster(t, 2, 2)
	c.Nodes[1].HandleReports(func() NodeReport { return NodeReport{RunID: "r2", Info: "info of n2"} })
	got, err := c.Nodes[0].ReportOf(context.Background(), c.Peers[1].ID)
	if err != nil || got.RunID != "r2" || got.Info != "info of n2" {
		t.Fatalf("report of n2 = %+v, %v", got, err)
	}
	if _, err := c.Nodes[0].ReportOf(context.Background(), c.Peers[0].ID); !errors.Is(err, ErrNoReport) {
		t.Fatalf("own report without a handler: %v, want ErrNoReport", err)
	}
	if _, err := c.Nodes[1].ReportOf(context.Background(), c.Peers[0].ID); err == nil {
		t.Fatal("report of a node without a handler: no error")
	}
}

func FuzzDecodeReport(f *testing.F) {
	f.Add(encodeReport(NodeReport{RunID: "x", Info: "y"}))
	f.Add([]byte("\x01\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeReport(b)
		if err != nil {
			return
		}
		if again, err := decodeReport(encodeReport(r)); err != nil || again != r {
			t.Fatalf("%q: re-encoded report %+v, %v", b, again, err)
		}
	})
}

package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
)

// Node reports: what a node's front end says about itself when another
// node asks (svcReport). The Sentinel facade refreshes each instance of
// a master from them, as Sentinel refreshes its masters and replicas with
// INFO: their run id and their INFO text (SENTINEL INFO-CACHE, MASTER's
// runid).

// NodeReport is one node's report on itself.
type NodeReport struct {
	RunID string // the front end's run id (INFO run_id)
	Info  string // its INFO text, default sections
}

// reportHandler makes this node's report (HandleReports).
type reportHandler struct {
	fn atomic.Pointer[func() NodeReport]
}

// ErrNoReport: the node asked has no front end that reports (none yet, or
// a release without svcReport).
var ErrNoReport = errors.New("cluster: the node makes no report")

// HandleReports sets fn to make this node's report, for this node's own
// callers and for other nodes asking over the bus.
func (n *Node) HandleReports(fn func() NodeReport) { n.reports.fn.Store(&fn) }

// ReportOf asks node id for its report (this node answers itself).
func (n *Node) ReportOf(ctx context.Context, id string) (NodeReport, error) {
	if id == n.self.ID {
		return n.ownReport()
	}
	b, err := n.call(ctx, id, svcReport, nil)
	if err != nil {
		return NodeReport{}, fmt.Errorf("report of %s: %w", id, err)
	}
	return decodeReport(b)
}

func (n *Node) ownReport() (NodeReport, error) {
	fn := n.reports.fn.Load()
	if fn == nil {
		return NodeReport{}, ErrNoReport
	}
	return (*fn)(), nil
}

// serveReport answers a peer's svcReport call with this node's report.
func (n *Node) serveReport(context.Context, string, []byte) ([]byte, error) {
	r, err := n.ownReport()
	if err != nil {
		return nil, err
	}
	return encodeReport(r), nil
}

// The svcReport answer, version 1: a version byte, then the run id and
// the INFO text, each a uvarint length and its bytes. A newer version is
// refused, never misread.
const reportVersion byte = 1

var errReportPayload = errors.New("cluster: malformed node report")

func encodeReport(r NodeReport) []byte {
	b := make([]byte, 0, 1+2*binary.MaxVarintLen64+len(r.RunID)+len(r.Info))
	b = append(b, reportVersion)
	for _, s := range []string{r.RunID, r.Info} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

func decodeReport(b []byte) (NodeReport, error) {
	if len(b) == 0 || b[0] != reportVersion {
		return NodeReport{}, errReportPayload
	}
	b = b[1:]
	var fields [2]string
	for i := range fields {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return NodeReport{}, errReportPayload
		}
		fields[i] = string(b[k : k+int(n)])
		b = b[k+int(n):]
	}
	if len(b) != 0 {
		return NodeReport{}, errReportPayload
	}
	return NodeReport{RunID: fields[0], Info: fields[1]}, nil
}

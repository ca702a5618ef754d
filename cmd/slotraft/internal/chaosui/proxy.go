package chaosui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/slotraft/slotraft/cluster/server"
)

// The supervisor's page shows the cluster as a node sees it: the
// supervisor fetches /ui/api/cluster from a running node's --http,
// the one that answered last first, and tries the next on failure, so
// killing the node the view came from costs one fetch, not the page.

const (
	// viewTimeout bounds one fetch of a node's view (the node itself
	// gathers the others' within about a second).
	viewTimeout = 2500 * time.Millisecond
	// maxViewBody bounds a node's view read (16384 slot ranges at most,
	// a few hundred events).
	maxViewBody = 8 << 20
)

// viewClient fetches nodes' views.
var viewClient = server.NewUIClient(viewTimeout)

// viewSource fetches the cluster's view from the nodes.
type viewSource struct {
	nodes func() []Proc
	mu    sync.Mutex
	last  string // the HTTP address that answered last
}

// get is the view of the first running node that answers.
func (v *viewSource) get(ctx context.Context) (*server.UICluster, error) {
	v.mu.Lock()
	last := v.last
	v.mu.Unlock()
	var addrs []string
	for _, p := range v.nodes() {
		if p.HTTP != "" && p.Process == ProcRunning {
			addrs = append(addrs, p.HTTP)
		}
	}
	if i := slices.Index(addrs, last); i > 0 {
		addrs[0], addrs[i] = addrs[i], addrs[0]
	}
	if len(addrs) == 0 {
		return nil, errors.New("no node is running with an HTTP port to show the cluster")
	}
	var errs []error
	for _, a := range addrs {
		view, err := fetchView(ctx, a)
		if err == nil {
			v.mu.Lock()
			v.last = a
			v.mu.Unlock()
			return view, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("no node answers: %w", errors.Join(errs...))
}

// fetchView gets http://addr/ui/api/cluster.
func fetchView(ctx context.Context, addr string) (*server.UICluster, error) {
	return server.FetchUIJSON[server.UICluster](ctx, viewClient, addr, "/ui/api/cluster", maxViewBody)
}

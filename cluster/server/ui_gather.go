package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// The serving node gathers the other nodes' figures itself: it fetches
// each one's /ui/api/node from the HTTP address the node announced in
// gossip, so the browser talks to one origin only (no CORS, one port to
// forward) and a node that is down shows as such at once (its fetch is
// refused) rather than after gossip's suspicion timeout. Only nodes of
// the cluster map are asked, at the address their gossip announced (the
// bus, which gossip runs on, is authenticated when a cluster secret or
// bus TLS is set), and each answer is read up to uiMaxNodeBody bytes into
// UINodeStats.

const (
	// uiFetchTimeout bounds one fetch: a paused process answers nothing.
	uiFetchTimeout = 800 * time.Millisecond
	// uiMaxNodeBody bounds a /ui/api/node answer read from a peer.
	uiMaxNodeBody = 1 << 20
)

// errNoHTTP: the node announced no operator HTTP address.
var errNoHTTP = errors.New("no --http address announced")

// uiClient fetches peers' figures.
var uiClient = NewUIClient(uiFetchTimeout)

// NewUIClient is an HTTP client for the dashboard's JSON between
// processes: no proxy from the environment, no redirect followed, the
// timeout given.
func NewUIClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: timeout}).DialContext,
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     30 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// nodeFetch is one node's figures or why there are none.
type nodeFetch struct {
	stats *UINodeStats
	err   error
}

// gatherStats fetches every node's figures in parallel; this node's are
// read directly. The result is keyed by node id.
func (u *uiState) gatherStats(ctx context.Context, ids []string) map[string]nodeFetch {
	out := make(map[string]nodeFetch, len(ids))
	var mu sync.Mutex
	var wg sync.WaitGroup
	self := u.s.n.Self().ID
	for _, id := range ids {
		if id == self {
			st := u.nodeStats(time.Now())
			out[id] = nodeFetch{stats: &st}
			continue
		}
		addr := u.s.n.HTTPAddr(id)
		wg.Go(func() {
			f := nodeFetch{err: errNoHTTP}
			if addr != "" {
				f.stats, f.err = fetchNodeStats(ctx, addr)
			}
			if f.stats != nil && f.stats.ID != id {
				f.stats, f.err = nil, fmt.Errorf("%s answers as %q", addr, f.stats.ID)
			}
			mu.Lock()
			out[id] = f
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// fetchNodeStats gets http://addr/ui/api/node.
func fetchNodeStats(ctx context.Context, addr string) (*UINodeStats, error) {
	st, err := FetchUIJSON[UINodeStats](ctx, uiClient, addr, "/ui/api/node", uiMaxNodeBody)
	if err != nil {
		return nil, err
	}
	if len(st.Events) > uiMaxNodeEvents {
		st.Events = st.Events[len(st.Events)-uiMaxNodeEvents:]
	}
	return st, nil
}

// FetchUIJSON gets http://addr+path with c and decodes its JSON answer,
// read up to limit bytes, into a T.
func FetchUIJSON[T any](ctx context.Context, c *http.Client, addr, path string, limit int64) (*T, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch %s: %s", addr, resp.Status)
	}
	return DecodeUIJSON[T](io.LimitReader(resp.Body, limit))
}

// DecodeUIJSON reads one JSON value of the dashboard's into a T.
func DecodeUIJSON[T any](r io.Reader) (*T, error) {
	var v T
	if err := json.NewDecoder(r).Decode(&v); err != nil {
		return nil, fmt.Errorf("dashboard JSON: %w", err)
	}
	return &v, nil
}

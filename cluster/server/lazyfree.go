package server

import "github.com/slotraft/slotraft/cluster"

// lazyfree-lazy-user-del, -user-flush, -expire and -eviction reach the
// node, which counts with them what Redis would free in the background
// (INFO's lazyfreed_objects, cluster/lazyfree.go). lazyfree-lazy-server-del
// is stored only: a value a write replaces is not counted.

// lazyFreeParam is a boolean lazyfree-lazy-* parameter whose value set
// is the node's setting (the others keep theirs).
func lazyFreeParam(name string, set func(c *cluster.LazyFree, on bool)) *configParam {
	return boolParam(name, noAlias, mutable, false).onApply(func(s *Server, v configValue) error {
		s.lazyMu.Lock()
		defer s.lazyMu.Unlock()
		set(&s.lazyCfg, v.num != 0)
		s.n.SetLazyFree(s.lazyCfg)
		return nil
	})
}

//go:build !plantbug

package cluster

// plantSkipReadIndex is false in every normal build: reads follow the
// read-index recipe (readindex.go). readindex_plantbug.go sets it.
const plantSkipReadIndex = false

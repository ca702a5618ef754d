package store

import "os"

// millionN is the size of the large-collection tests (TestListMillion,
// TestHashMillion…): a million elements in `make test-long`
// (SLOTRAFT_TEST_LONG=1), 200,000 in `make test`, whose race detector
// makes a million cost most of a minute per test. Both are deep trees.
func millionN() int {
	if os.Getenv("SLOTRAFT_TEST_LONG") == "1" {
		return 1_000_000
	}
	return 200_000
}

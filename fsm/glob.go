package fsm

import "github.com/slotraft/slotraft/resp"

// Match is resp.Match, Redis's stringmatchlen: the glob matching of KEYS,
// SCAN MATCH and PSUBSCRIBE lives in resp so that the acl package (which
// sits beside store and cannot import fsm) matches key and channel
// patterns with the same code.
func Match(pattern, s []byte) bool { return resp.Match(pattern, s) }

// MatchFuzzTest is resp.MatchFuzzTest (DEBUG STRINGMATCH-TEST).
func MatchFuzzTest(n int) { resp.MatchFuzzTest(n) }

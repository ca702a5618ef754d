//go:build plantbug

package cluster

// plantSkipReadIndex plants a bug for the chaos playground to catch
// (`go build -tags plantbug`, docs/chaos.md): a node that believes it leads
// a group answers reads from its local state at once, with no Barrier after
// its election and no VerifyLeader round, so a new leader that has not yet
// applied its predecessor's last entries, or a deposed leader that has not
// yet noticed, serves stale reads. Never build a release with this tag.
const plantSkipReadIndex = true

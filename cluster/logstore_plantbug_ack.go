//go:build plantbug_ack

package cluster

// plantAckBeforeDurable plants a bug for the chaos playground to catch
// (`go build -tags plantbug_ack`, docs/chaos.md): every Raft log store
// reports an append done as soon as the entries are held in memory and
// writes them to disk in the background every writeBackInterval, the
// classic mistake of a hand-made group commit. Raft counts a replica's
// append as durable, so a leader acknowledges writes that exist only in
// the memory of its replicas; when every process dies at once the last
// interval of acknowledged writes is gone. Never build a release with this
// tag.
const plantAckBeforeDurable = true

//go:build !plantbug_ack

package cluster

// plantAckBeforeDurable is false in every normal build: a log append
// returns once the log store has written and synced it.
// logstore_plantbug_ack.go sets it.
const plantAckBeforeDurable = false

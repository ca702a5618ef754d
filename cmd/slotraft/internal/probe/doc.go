// Package probe asks running slotraft nodes about their cluster with a few
// bytes of RESP and no client library: CLUSTER INFO's fields, and a wait
// until every node reports cluster_state:ok. `slotraft dev`, the end-to-end
// tests and the chaos playground share it.
package probe

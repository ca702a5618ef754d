// Package chaosui serves the dashboard with chaos controls from the
// process that supervises the nodes: `slotraft dev --chaos-ui` and
// `slotraft chaos run --ui`. A node cannot signal another node's process,
// so the buttons (kill -9, pause, resume, restart, partition, heal) are
// carried out by the supervisor, through a Controller it implements.
//
// The supervisor serves the whole page itself, on a loopback port of its
// own (the same embedded files as a node's /ui/, server.UIFiles): the
// cluster's view is fetched from a node that answers (proxy.go), trying
// the next one when it is down, so the page outlives any node it kills,
// and in a chaos run it outlives the cluster and shows the final verdict.
// Nodes never learn of the supervisor; a node's own /ui/ has no chaos
// controls. Actions are POSTs with a JSON body and a custom header (so a
// page of another origin cannot send one without a CORS preflight, which
// is never granted), to a Host that is a loopback address (no DNS
// rebinding). docs/chaos.md and docs/dashboard.md.
package chaosui

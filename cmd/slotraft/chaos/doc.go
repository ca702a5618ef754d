// Package chaos is `slotraft chaos run`: the chaos playground. It starts a
// cluster of real `slotraft server` processes, each on its own loopback
// address, drives workloads through a real cluster client (go-redis),
// injects faults on a seeded schedule (SIGKILL, SIGSTOP/SIGCONT, nftables
// partitions between node addresses, killing every node at once), records
// every operation's invocation and completion, and checks the history:
// registers for linearizability with porcupine, counters and sets for lost
// and phantom writes. It stops everything it started, removes its packet
// filter table, writes a JSON summary and an HTML report, and exits
// non-zero on any anomaly. While the run goes on, the checks that hold on
// a prefix of the history run every few seconds on the history so far
// (live.go): the live verdict, on the dashboard and in the summary.
//
// Faults and workloads are interfaces (Fault, Workload) kept in registries
// (faultKinds, workloadKinds), so new kinds slot in; kinds the issue names
// but that are not built yet are refused by name. With --ui the run also
// serves the dashboard with buttons and its live progress (ui.go, through
// cmd/slotraft/internal/chaosui). docs/chaos.md describes the tool, its
// checkers and what they can and cannot detect.
package chaos

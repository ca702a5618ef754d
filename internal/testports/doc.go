// Package testports hands tests loopback ports for processes they start
// themselves (slotraft nodes, redis-server, Sentinels), which bind a port
// by number after the test has chosen it. It is for tests only and imports
// nothing of slotraft's.
package testports

// Package slots is Redis Cluster's keyspace arithmetic: the 16384 hash
// slots, CRC16 with {hash tags} to map a key to its slot, inclusive slot
// ranges, an even split of all slots into groups, and a slot-set bitmap.
// It imports nothing of ours.
package slots

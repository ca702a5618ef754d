// Package meta is the meta group's state machine: the cluster map (Map: the
// nodes, the slot groups, their slot ranges and replicas, the slot
// migrations in flight), the commands that change it (Init, AddNode,
// RemoveNode, DrainNode, SetReplicas, AddGroup, StartMigration,
// FinishMigration, SetRebalance), their log-entry codec (Encode, Decode)
// and the raft.FSM that applies them (FSM).
//
// Beside the map, the FSM holds the ACL users (ACLState: acl.Users built
// from the front end's command table, given by SetACLCommands), changed
// by ACLSetUser, ACLDelUsers and ACLLoad entries and carried in the same
// snapshot (acl.go, aclstate.go).
//
// Every node follows the meta group, so every node holds the same map. To
// keep it the same, Apply is deterministic: no clock, no randomness, no map
// iteration; a command that fails fails the same way on every replica and
// changes nothing. A Map handed out is never modified: a change builds a new
// one with the next Epoch, so readers share maps without locks.
//
// The package knows nothing of networks or of the rest of the cluster.
package meta

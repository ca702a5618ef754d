// Package acl is Redis 7.2's ACL engine without I/O: users (flags,
// SHA-256 password hashes, a root selector and extra selectors of allowed
// commands, key patterns and channel patterns), ACL SETUSER's rule parser
// with its all-or-nothing semantics and error texts, ACL LIST and ACL
// GETUSER descriptions, the permission check behind -NOPERM and ACL
// DRYRUN, ACL GENPASS, the ACL LOG model, the aclfile format of ACL
// LOAD/SAVE and a deterministic serialised form of the whole user set (its
// ACL LIST lines) for replication through Raft.
//
// Rules apply to a command table given to the engine (Commands), so that
// +@read expands over the table's commands as Redis expands over its own.
// Nothing here reads the clock, the network or the disk: times are
// arguments, file contents are bytes. The types are not safe for
// concurrent use; the server guards them.
//
// Where it differs from Redis 7.2, on purpose: a '%' key rule that grants
// no access ("%", "%~x") is a syntax error (Redis accepts it, then aborts
// describing the user); a first argument with whitespace ("+select|a b")
// is a syntax error (Redis accepts it and cannot read its ACL LIST back);
// categories expand, and ACL CAT lists, in table order where Redis
// follows its hash table. Marshal is not the aclfile: it keeps each rule
// apart, so patterns that Redis's own format cannot carry inside a
// selector (with ')' or quotes) replicate exactly.
//
// It sits beside store in the layering and imports only resp.
package acl

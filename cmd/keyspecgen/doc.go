// Command keyspecgen writes resp/keyspecs_gen.go: every Redis command's
// key specifications, the name of its getkeys function and whether it has
// no mandatory keys, read from the JSON command files of a Redis source
// tree (src/commands/*.json of Redis 7.2). COMMAND INFO, COMMAND GETKEYS
// and COMMAND GETKEYSANDFLAGS read the table (resp/keyspecs.go).
//
//	go run ./cmd/keyspecgen -src /path/to/redis/src/commands -out resp/keyspecs_gen.go
//
// resp/keyspecs.go's go:generate line runs it with REDIS_COMMANDS_DIR.
package main

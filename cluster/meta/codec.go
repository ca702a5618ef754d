package meta

import (
	"encoding/json"
	"errors"
	"fmt"
)

// EntryType says which command a log entry holds.
type EntryType uint8

// IgnoreUnknown marks an entry type that an older node which does not know
// it may skip; an unknown type without it stops the node.
const IgnoreUnknown EntryType = 0x80

// Entry types. None may be skipped: a node that skipped one would hold
// another map than its peers.
const (
	typeInit        EntryType = 1
	typeAddNode     EntryType = 2
	typeRemoveNode  EntryType = 3
	typeSetReplicas EntryType = 4
	// Slot migration and scale-out (issue #4). Each changes routing or
	// placement, so none may be skipped either.
	typeStartMigration   EntryType = 5
	typeFinishMigration  EntryType = 6
	typeAddGroup         EntryType = 7
	typeSetRebalance     EntryType = 8
	typeDrainNode        EntryType = 9
	typeReleaseMigration EntryType = 10
	typeStartMigrations  EntryType = 11
	typeFinishMigrations EntryType = 12
	// Clusters placed by hand (CLUSTER MEET, ADDSLOTS, REPLICATE).
	typeMeet       EntryType = 13
	typeClaimSlots EntryType = 14
	typeReplicate  EntryType = 15
	// The ACL user set (acl.go): a node of the previous release skips
	// them, as it checks no users.
	typeACLSetUser  = IgnoreUnknown | 16
	typeACLDelUsers = IgnoreUnknown | 17
	typeACLLoad     = IgnoreUnknown | 18
	// A member's data directory id (identity.go): an older node may skip
	// it, as it never reads the ids.
	typeSetUID = IgnoreUnknown | 19
)

// entryVersion is the first byte of every encoded entry.
const entryVersion = 1

// headerLen: version, type.
const headerLen = 2

// Decode's errors, compared with errors.Is.
var (
	// ErrIgnored: an entry type this binary does not know but may skip.
	ErrIgnored = errors.New("meta: unknown entry type, ignored")
	// ErrUnknownType: an entry type this binary does not know and may not
	// skip.
	ErrUnknownType = errors.New("meta: unknown entry type")
	// ErrBadEntry: an entry that does not parse.
	ErrBadEntry = errors.New("meta: bad log entry")
)

// Encode renders cmd as a log entry: version byte, type byte, then the
// command as JSON. It panics on a command this package does not know, which
// can only be a nil one.
func Encode(cmd Command) []byte {
	t, v := typeOf(cmd)
	body, err := json.Marshal(v)
	if err != nil {
		// the commands hold only strings, integers and booleans
		panic(fmt.Sprintf("meta: encode %T: %v", cmd, err))
	}
	return append([]byte{entryVersion, byte(t)}, body...)
}

// typeOf is cmd's entry type and its value (pointers dereferenced).
func typeOf(cmd Command) (EntryType, Command) {
	switch c := cmd.(type) {
	case Init:
		return typeInit, c
	case *Init:
		return typeInit, *c
	case AddNode:
		return typeAddNode, c
	case *AddNode:
		return typeAddNode, *c
	case RemoveNode:
		return typeRemoveNode, c
	case *RemoveNode:
		return typeRemoveNode, *c
	case SetReplicas:
		return typeSetReplicas, c
	case *SetReplicas:
		return typeSetReplicas, *c
	case StartMigration:
		return typeStartMigration, c
	case *StartMigration:
		return typeStartMigration, *c
	case FinishMigration:
		return typeFinishMigration, c
	case *FinishMigration:
		return typeFinishMigration, *c
	case AddGroup:
		return typeAddGroup, c
	case *AddGroup:
		return typeAddGroup, *c
	case SetRebalance:
		return typeSetRebalance, c
	case *SetRebalance:
		return typeSetRebalance, *c
	case DrainNode:
		return typeDrainNode, c
	case *DrainNode:
		return typeDrainNode, *c
	case ReleaseMigration:
		return typeReleaseMigration, c
	case *ReleaseMigration:
		return typeReleaseMigration, *c
	case StartMigrations:
		return typeStartMigrations, c
	case *StartMigrations:
		return typeStartMigrations, *c
	case FinishMigrations:
		return typeFinishMigrations, c
	case *FinishMigrations:
		return typeFinishMigrations, *c
	case SetUID:
		return typeSetUID, c
	case *SetUID:
		return typeSetUID, *c
	case Meet:
		return typeMeet, c
	case *Meet:
		return typeMeet, *c
	case ClaimSlots:
		return typeClaimSlots, c
	case *ClaimSlots:
		return typeClaimSlots, *c
	case Replicate:
		return typeReplicate, c
	case *Replicate:
		return typeReplicate, *c
	case ACLSetUser:
		return typeACLSetUser, c
	case ACLDelUsers:
		return typeACLDelUsers, c
	case ACLLoad:
		return typeACLLoad, c
	}
	panic(fmt.Sprintf("meta: encode of unknown command %T", cmd))
}

// Decode parses an entry into a command value (Init, AddNode, RemoveNode,
// SetReplicas, StartMigration, FinishMigration, AddGroup, SetRebalance,
// DrainNode, ReleaseMigration, StartMigrations, FinishMigrations, Meet,
// ClaimSlots, Replicate, ACLSetUser, ACLDelUsers or ACLLoad; never a
// pointer). An unknown type gives ErrIgnored if it
// carries IgnoreUnknown, else ErrUnknownType; anything else that does not
// parse gives ErrBadEntry.
func Decode(b []byte) (Command, error) {
	if len(b) < headerLen {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrBadEntry, len(b), headerLen)
	}
	if b[0] != entryVersion {
		return nil, fmt.Errorf("%w: format version %d, want %d", ErrBadEntry, b[0], entryVersion)
	}
	t, body := EntryType(b[1]), b[headerLen:]
	switch t {
	case typeInit:
		return decodeAs[Init](t, body)
	case typeAddNode:
		return decodeAs[AddNode](t, body)
	case typeRemoveNode:
		return decodeAs[RemoveNode](t, body)
	case typeSetReplicas:
		return decodeAs[SetReplicas](t, body)
	case typeStartMigration:
		return decodeAs[StartMigration](t, body)
	case typeFinishMigration:
		return decodeAs[FinishMigration](t, body)
	case typeAddGroup:
		return decodeAs[AddGroup](t, body)
	case typeSetRebalance:
		return decodeAs[SetRebalance](t, body)
	case typeDrainNode:
		return decodeAs[DrainNode](t, body)
	case typeReleaseMigration:
		return decodeAs[ReleaseMigration](t, body)
	case typeStartMigrations:
		return decodeAs[StartMigrations](t, body)
	case typeFinishMigrations:
		return decodeAs[FinishMigrations](t, body)
	case typeSetUID:
		return decodeAs[SetUID](t, body)
	case typeMeet:
		return decodeAs[Meet](t, body)
	case typeClaimSlots:
		return decodeAs[ClaimSlots](t, body)
	case typeReplicate:
		return decodeAs[Replicate](t, body)
	case typeACLSetUser:
		return decodeAs[ACLSetUser](t, body)
	case typeACLDelUsers:
		return decodeAs[ACLDelUsers](t, body)
	case typeACLLoad:
		return decodeAs[ACLLoad](t, body)
	}
	if t&IgnoreUnknown != 0 {
		return nil, fmt.Errorf("%w: type %#02x", ErrIgnored, byte(t))
	}
	return nil, fmt.Errorf("%w: type %#02x", ErrUnknownType, byte(t))
}

func decodeAs[T Command](t EntryType, body []byte) (Command, error) {
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("%w: type %#02x: %v", ErrBadEntry, byte(t), err)
	}
	return v, nil
}

package meta

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/slotraft/slotraft/slots"
)

// commands has one command of each type, with every field set.
func commands() []Command {
	return []Command{
		initCmd(),
		Init{Nodes: []Node{{ID: "a", Client: "c", Bus: "b", State: Removed, Incarnation: 3}},
			Groups: []Group{{ID: 1, Ranges: []slots.Range{{Start: 0, End: 16383}}, Replicas: []string{"a"}, Boot: []string{"a"}, Changes: 2}}},
		AddNode{Node: Node{ID: "n9", Client: "h:6379", Bus: "h:16379", State: Active, Incarnation: 2}},
		RemoveNode{ID: "n1"},
		SetReplicas{Group: 7, Replicas: []string{"n1", "n2"}, Expect: []string{"n2", "n1"}},
		SetReplicas{Group: 7, Replicas: []string{}},
		Init{},
		StartMigration{Slot: 16383, From: 1, To: 4},
		StartMigration{Slot: 5, From: 1, To: 4, Hold: true},
		ReleaseMigration{Slot: 5},
		StartMigrations{List: []Migration{{Slot: 1, From: 1, To: 2}, {Slot: 2, From: 1, To: 3}}},
		FinishMigrations{List: []Migration{{Slot: 1, From: 1, To: 2}}},
		FinishMigration{Slot: 5460, From: 2, To: 3},
		AddGroup{Group: Group{ID: 4, Ranges: []slots.Range{{Start: 1, End: 2}}, Replicas: []string{"n1", "n2"}, Boot: []string{"x"}, Changes: 1}},
		SetRebalance{On: true},
		SetRebalance{},
		DrainNode{ID: "n2"},
		Init{Manual: true, Nodes: []Node{{ID: "a", Bus: "b", ReplicaOf: "c"}}},
		Meet{Node: Node{ID: "n9", Client: "h:6379", Bus: "h:16379"}, Ranges: []slots.Range{{Start: 0, End: 5460}}},
		Meet{Node: Node{ID: "n9", Bus: "h:16379"}},
		ClaimSlots{Node: "n9", Ranges: []slots.Range{{Start: 7, End: 7}, {Start: 9, End: 100}}},
		ClaimSlots{Node: "n9"},
		Replicate{Node: "n9", Master: "n1", Want: 3},
		ACLSetUser{Name: []byte("u\xff"), Rules: [][]byte{[]byte("on"), []byte(">p\x00w")}, AllChannels: true},
		ACLSetUser{Name: []byte("default"), Rules: RequirePassRules([]byte("pw")), RequirePass: &[]byte{'p', 'w'}},
		ACLDelUsers{Names: [][]byte{[]byte("a"), []byte("b")}},
		ACLLoad{Data: []byte("user x on nopass\n"), File: "/etc/users.acl", AllChannels: true, IfDefault: true},
		SetUID{ID: "n2", UID: "3f2a"},
		AddNode{Node: Node{ID: "n5", Bus: "b:1", UID: "9c"}},
	}
}

func TestCodecRoundTrip(t *testing.T) {
	for _, cmd := range commands() {
		b := Encode(cmd)
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(Encode(%+v)): %v", cmd, err)
		}
		if !reflect.DeepEqual(got, cmd) {
			t.Fatalf("round trip of %+v gave %+v", cmd, got)
		}
	}
}

func TestEncodeTypes(t *testing.T) {
	tests := []struct {
		cmd, ptr Command
		want     EntryType
	}{
		{Init{}, &Init{}, typeInit},
		{AddNode{}, &AddNode{}, typeAddNode},
		{RemoveNode{}, &RemoveNode{}, typeRemoveNode},
		{SetReplicas{}, &SetReplicas{}, typeSetReplicas},
		{StartMigration{Slot: 1}, &StartMigration{Slot: 1}, typeStartMigration},
		{FinishMigration{To: 2}, &FinishMigration{To: 2}, typeFinishMigration},
		{AddGroup{}, &AddGroup{}, typeAddGroup},
		{SetRebalance{On: true}, &SetRebalance{On: true}, typeSetRebalance},
		{DrainNode{ID: "a"}, &DrainNode{ID: "a"}, typeDrainNode},
	}
	for _, tt := range tests {
		b := Encode(tt.cmd)
		if b[0] != entryVersion || EntryType(b[1]) != tt.want {
			t.Errorf("Encode(%T) header %x, want version %d type %d", tt.cmd, b[:2], entryVersion, tt.want)
		}
		// None may be skipped by a node that does not know it.
		if EntryType(b[1])&IgnoreUnknown != 0 {
			t.Errorf("%T carries IgnoreUnknown", tt.cmd)
		}
		if p := Encode(tt.ptr); !bytes.Equal(p, b) {
			t.Errorf("Encode(%T) = %q, by value %q", tt.ptr, p, b)
		}
	}
}

// The type bytes are in logs on disk: they never change.
func TestEntryTypeNumbers(t *testing.T) {
	got := []EntryType{typeInit, typeAddNode, typeRemoveNode, typeSetReplicas,
		typeStartMigration, typeFinishMigration, typeAddGroup, typeSetRebalance, typeDrainNode}
	for i, typ := range got {
		if int(typ) != i+1 {
			t.Errorf("entry type #%d is %d, want %d", i, typ, i+1)
		}
	}
}

func TestEncodeNilPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Encode(nil) did not panic")
		}
	}()
	Encode(nil)
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"nil", nil, ErrBadEntry},
		{"version only", []byte{1}, ErrBadEntry},
		{"version 0", []byte("\x00\x03{}"), ErrBadEntry},
		{"version 2", []byte("\x02\x03{}"), ErrBadEntry},
		{"type 0", []byte("\x01\x00{}"), ErrUnknownType},
		{"unknown type", []byte("\x01\x3f{}"), ErrUnknownType},
		{"first type after the known ones", []byte("\x01\x10{}"), ErrUnknownType},
		{"unknown type, empty body", []byte("\x01\x7f"), ErrUnknownType},
		{"unknown type, may skip", []byte("\x01\x85{}"), ErrIgnored},
		{"unknown type, may skip, garbage body", []byte("\x01\xff\x00\x01"), ErrIgnored},
		{"known type with the skip bit", []byte("\x01\x81{}"), ErrIgnored},
		{"no body", []byte("\x01\x03"), ErrBadEntry},
		{"truncated", Encode(initCmd())[:20], ErrBadEntry},
		{"garbage", []byte("\x01\x02\xff\xfe"), ErrBadEntry},
		{"trailing bytes", append(Encode(RemoveNode{ID: "a"}), 'x'), ErrBadEntry},
		{"wrong field type", []byte("\x01\x03" + `{"id":5}`), ErrBadEntry},
		{"group id overflow", []byte("\x01\x04" + `{"group":4294967296}`), ErrBadEntry},
		{"negative group id", []byte("\x01\x04" + `{"group":-1}`), ErrBadEntry},
		{"array body", []byte("\x01\x03[]"), ErrBadEntry},
		{"slot overflow", []byte("\x01\x05" + `{"slot":65536,"from":1,"to":2}`), ErrBadEntry},
		{"negative slot", []byte("\x01\x06" + `{"slot":-1,"from":1,"to":2}`), ErrBadEntry},
		{"group of AddGroup not an object", []byte("\x01\x07" + `{"group":7}`), ErrBadEntry},
		{"rebalance not a bool", []byte("\x01\x08" + `{"on":"yes"}`), ErrBadEntry},
		{"drain without a body", []byte("\x01\x09"), ErrBadEntry},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, err := Decode(tt.in)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Decode = %+v, %v; want %v", cmd, err, tt.want)
			}
			if cmd != nil {
				t.Fatalf("Decode returned %+v with an error", cmd)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	for _, cmd := range commands() {
		f.Add(Encode(cmd))
	}
	f.Add([]byte("\x01\x85{}"))
	f.Add([]byte("\x01\x04{\"group\":1,\"replicas\":[\"\\ud800\"]}"))
	f.Add([]byte{1})
	f.Add(Encode(FinishMigration{Slot: 8191, From: 1, To: 3}))
	f.Add(Encode(StartMigration{Slot: 0, From: 1, To: 3}))
	f.Add(Encode(AddGroup{Group: Group{ID: 9, Replicas: []string{"n4", "n1"}}}))
	f.Add(Encode(DrainNode{ID: "n3"}))
	f.Add([]byte("\x01\x05{\"slot\":16384,\"from\":1,\"to\":3}"))
	maps := []*Map{nil, fixture(f), migrating(f)}
	f.Fuzz(func(t *testing.T, b []byte) {
		cmd, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrBadEntry) && !errors.Is(err, ErrUnknownType) && !errors.Is(err, ErrIgnored) {
				t.Fatalf("Decode error %v wraps none of the sentinels", err)
			}
			return
		}
		b2 := Encode(cmd)
		cmd2, err := Decode(b2)
		if err != nil {
			t.Fatalf("Decode(Encode(%+v)): %v", cmd, err)
		}
		if !reflect.DeepEqual(cmd, cmd2) {
			t.Fatalf("re-decoded %+v, first decoded %+v", cmd2, cmd)
		}
		if b3 := Encode(cmd2); !bytes.Equal(b2, b3) {
			t.Fatalf("encoding not stable: %q then %q", b2, b3)
		}
		// Any decoded command applies without a panic, to a valid map.
		for _, m := range maps {
			if got, err := Apply(m, cmd); err == nil {
				if err := checkMap(got); err != nil {
					t.Fatalf("Apply(%+v) made a bad map: %v", cmd, err)
				}
			}
		}
	})
}

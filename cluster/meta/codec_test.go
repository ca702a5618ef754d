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
		{"unknown type", []byte("\x01\x05{}"), ErrUnknownType},
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
	fix := fixture(f)
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
		for _, m := range []*Map{nil, fix} {
			if got, err := Apply(m, cmd); err == nil {
				if err := checkMap(got); err != nil {
					t.Fatalf("Apply(%+v) made a bad map: %v", cmd, err)
				}
			}
		}
	})
}

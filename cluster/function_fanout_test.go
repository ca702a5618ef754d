package cluster

import (
	"bytes"
	"testing"

	"github.com/slotraft/slotraft/resp"
)

func TestFunctionRPCRoundTrip(t *testing.T) {
	reqs := []functionRequest{
		{groups: []uint32{1, 2, 300000}, op: [][]byte{[]byte("load"), []byte("REPLACE"), []byte("#!lua name=x\n")}},
		{groups: nil, op: [][]byte{[]byte("dump")}},
		{groups: []uint32{1<<32 - 1}, op: [][]byte{[]byte("restore"), {0, 1, 2, 255}, []byte("")}},
	}
	for _, r := range reqs {
		got, err := decodeFunctionRequest(encodeFunctionRequest(r))
		if err != nil || len(got.groups) != len(r.groups) || len(got.op) != len(r.op) {
			t.Fatalf("request %+v: got %+v, %v", r, got, err)
		}
		for i := range r.groups {
			if got.groups[i] != r.groups[i] {
				t.Errorf("group %d: %d, want %d", i, got.groups[i], r.groups[i])
			}
		}
		for i := range r.op {
			if !bytes.Equal(got.op[i], r.op[i]) {
				t.Errorf("arg %d: %q, want %q", i, got.op[i], r.op[i])
			}
		}
	}
	rs := []GroupAnswer{
		{Group: 1, Reply: resp.Status("OK"), Reached: true},
		{Group: 2, Reply: resp.BulkString("lib"), Reached: true},
		{Group: 3, Reply: resp.Err(resp.NewError("ERR Library 'lib' already exists")), Reached: true, Applied: true},
		{Group: 4, Reply: resp.Err(resp.NewError("ERR Function f already exists")), Reached: true},
		{Group: 5, Reply: resp.Err(ErrNotLeader)},
	}
	got, err := decodeFunctionResponse(encodeFunctionResponse(rs))
	if err != nil || len(got) != len(rs) {
		t.Fatalf("response: %+v, %v", got, err)
	}
	for i, r := range rs {
		g := got[i]
		if g.Group != r.Group || g.Reached != r.Reached || g.Applied != r.Applied || g.Reply.Kind != r.Reply.Kind ||
			string(g.Reply.Str) != string(r.Reply.Str) {
			t.Errorf("result %d: %+v, want %+v", i, g, r)
		}
	}
}

func TestFunctionRPCDecodeErrors(t *testing.T) {
	good := encodeFunctionRequest(functionRequest{groups: []uint32{1}, op: [][]byte{[]byte("flush")}})
	cases := map[string][]byte{
		"empty":            nil,
		"version":          append([]byte{9}, good[1:]...),
		"truncated":        good[:len(good)-1],
		"trailing":         append(append([]byte{}, good...), 0),
		"no arguments":     {functionRPCVersion, 0, 0},
		"huge count":       {functionRPCVersion, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"group id too big": {functionRPCVersion, 1, 0x80, 0x80, 0x80, 0x80, 0x10, 1, 1, 'x'},
	}
	for name, b := range cases {
		if _, err := decodeFunctionRequest(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	if _, err := decodeFunctionResponse([]byte{functionRPCVersion, 1, 1, 9, 0}); err == nil {
		t.Error("response with an unknown kind decoded")
	}
}

func FuzzFunctionRPC(f *testing.F) {
	f.Add(encodeFunctionRequest(functionRequest{groups: []uint32{1, 2}, op: [][]byte{[]byte("load"), []byte("x")}}))
	f.Add(encodeFunctionResponse([]GroupAnswer{{Group: 1, Reply: resp.BulkString("x"), Reached: true}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := decodeFunctionRequest(b); err == nil {
			if !bytes.Equal(encodeFunctionRequest(r), b) {
				// Non-minimal varints decode too; they must mean the same.
				again, err := decodeFunctionRequest(encodeFunctionRequest(r))
				if err != nil || len(again.op) != len(r.op) || len(again.groups) != len(r.groups) {
					t.Fatalf("request does not survive a round trip: %+v", r)
				}
			}
		}
		if rs, err := decodeFunctionResponse(b); err == nil {
			again, err := decodeFunctionResponse(encodeFunctionResponse(rs))
			if err != nil || len(again) != len(rs) {
				t.Fatalf("response does not survive a round trip: %+v", rs)
			}
		}
	})
}

// TestFanOutUnsure: a group that already has the library after a try whose
// outcome was unknown counts that try as its success.
func TestFanOutUnsure(t *testing.T) {
	op := [][]byte{[]byte("load"), []byte("#!lua name=lib\nredis.register_function('f', function() end)")}
	f := &fanOut{op: op, results: map[uint32]GroupAnswer{}, why: map[uint32]string{}, unsure: map[uint32]bool{}}
	exists := resp.Err(resp.NewError("ERR Library 'lib' already exists"))
	f.fail(1, resp.ErrOutcomeUnknown.Error(), true)
	f.fail(2, ErrNotLeader.Error(), false)
	f.add(GroupAnswer{Group: 1, Reply: exists, Reached: true, Applied: true})
	f.add(GroupAnswer{Group: 2, Reply: exists, Reached: true, Applied: true})
	if r := f.results[1]; r.Reply.Kind != resp.KindBulk || string(r.Reply.Str) != "lib" || r.Applied {
		t.Errorf("group 1 (unsure, then applied): %+v, want the LOAD's success", r)
	}
	if r := f.results[2]; !r.Reply.IsError() || !r.Applied {
		t.Errorf("group 2 (never proposed, then applied): %+v, want the error", r)
	}
}

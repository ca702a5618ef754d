package cluster

import (
	"bytes"
	"testing"
)

func TestPublishPayloadRoundTrip(t *testing.T) {
	for _, msgs := range [][]fwdMsg{
		nil,
		{{channel: []byte("a"), message: []byte("b")}},
		{{channel: []byte{}, message: []byte{}}, {channel: bytes.Repeat([]byte("c"), 300), message: []byte("\x00\r\n")}},
	} {
		got, err := decodePublish(encodePublish(msgs))
		if err != nil || len(got) != len(msgs) {
			t.Fatalf("%v: %v, %v", msgs, got, err)
		}
		for i := range msgs {
			if !bytes.Equal(got[i].channel, msgs[i].channel) || !bytes.Equal(got[i].message, msgs[i].message) {
				t.Errorf("message %d: %q, want %q", i, got[i], msgs[i])
			}
		}
	}
	for _, bad := range []string{"", "\x02\x00", "\x01", "\x01\x05\x00", "\x01\x01\x01\x01a\x01b", "\x01\x01\x00\x05a\x01b", "\x01\x01\x00\x01a\x01b!", "\x01\xff\xff\xff\xff\x0f"} {
		if _, err := decodePublish([]byte(bad)); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

func FuzzDecodePublish(f *testing.F) {
	f.Add(encodePublish([]fwdMsg{{channel: []byte("ch"), message: []byte("msg")}}))
	f.Add([]byte("\x01\x02\x00\x00\x00\x00\x01x\x01y"))
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, err := decodePublish(b)
		if err != nil {
			return
		}
		// What decodes re-encodes to a payload that decodes the same
		// (lengths may have been sent as non-minimal varints).
		again, err := decodePublish(encodePublish(msgs))
		if err != nil || len(again) != len(msgs) {
			t.Fatalf("%q: re-encoded payload: %v, %d messages", b, err, len(again))
		}
		for i := range msgs {
			if !bytes.Equal(again[i].channel, msgs[i].channel) || !bytes.Equal(again[i].message, msgs[i].message) {
				t.Fatalf("%q: message %d changed", b, i)
			}
		}
	})
}

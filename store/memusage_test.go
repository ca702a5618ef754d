package store

import (
	"bytes"
	"fmt"
	"testing"
)

func TestMemoryUsage(t *testing.T) {
	s := New()
	usage := func(key string, samples int) int64 {
		t.Helper()
		n, ok := s.MemoryUsage([]byte(key), 50, samples)
		if !ok {
			t.Fatalf("%s: no usage", key)
		}
		return n
	}
	s.Put([]byte("a"), str("v", 0))
	s.Put([]byte("b"), str(string(bytes.Repeat([]byte("v"), 200)), 0))
	s.Put([]byte("big"), &Object{Type: TypeString, Str: bytes.Repeat([]byte("v"), 10000)})
	s.Put([]byte("gone"), str("v", 10))
	if _, ok := s.MemoryUsage([]byte("absent"), 50, 5); ok {
		t.Error("usage of an absent key")
	}
	if _, ok := s.MemoryUsage([]byte("gone"), 50, 5); ok {
		t.Error("usage of an expired key")
	}
	if a, b, big := usage("a", 5), usage("b", 5), usage("big", 5); a >= b || b-a < 199 || big < 10000 || big > 10500 {
		t.Errorf("strings: 1 byte %d, 200 bytes %d, 10000 bytes %d", a, b, big)
	}

	small, large := NewHash(nil), NewHash(nil)
	for i := range 1000 {
		f := []byte(fmt.Sprintf("field:%04d", i))
		if i < 10 {
			small.Set(f, []byte("value"))
		}
		large.Set(f, []byte("value"))
	}
	s.Put([]byte("h10"), &Object{Type: TypeHash, Coll: small})
	s.Put([]byte("h1000"), &Object{Type: TypeHash, Coll: large})
	h10, h1000 := usage("h10", 0), usage("h1000", 0)
	if per := (h1000 - h10) / 990; per < 15 || per > 200 {
		t.Errorf("a hash field of 15 bytes costs %d bytes", per)
	}
	if sampled := usage("h1000", 5); sampled != h1000 {
		t.Errorf("uniform fields: 5 samples give %d, all give %d", sampled, h1000)
	}
	l := NewList()
	for range 100 {
		l.PushBack([]byte("xxxxxxxxxx"))
	}
	s.Put([]byte("l"), &Object{Type: TypeList, Coll: l})
	if got := usage("l", 0); got < 100*10 {
		t.Errorf("a list of 100 10-byte elements: %d bytes", got)
	}
}

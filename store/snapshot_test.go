package store

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// contents renders a store's keys and objects in order, for comparisons.
func contents(s *Store) string {
	var b bytes.Buffer
	s.Ascend(func(k []byte, o *Object) bool {
		fmt.Fprintf(&b, "%q=%d:%q:%d:%d:%d\n", k, o.Type, o.Str, o.ExpireAt, o.Version, o.Touched)
		return true
	})
	return b.String()
}

func viewContents(t *testing.T, v *View) string {
	t.Helper()
	var buf bytes.Buffer
	if _, err := v.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	s := New()
	if err := s.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	return contents(s)
}

func TestSnapshotIsolation(t *testing.T) {
	s := New()
	for i := range 5000 {
		s.Put([]byte(fmt.Sprint(i)), str(fmt.Sprint(i), 0))
	}
	before := contents(s)
	v := s.Snapshot()
	mutations := []struct {
		name string
		fn   func()
	}{
		{"replace", func() {
			for i := 0; i < 5000; i += 3 {
				s.Put([]byte(fmt.Sprint(i)), str("changed", 99))
			}
		}},
		{"delete", func() {
			for i := 1; i < 5000; i += 3 {
				s.Delete([]byte(fmt.Sprint(i)))
			}
		}},
		{"insert", func() {
			for i := range 5000 {
				s.Put([]byte(fmt.Sprint("new", i)), str("x", 0))
			}
		}},
		{"flush", s.Flush},
	}
	for _, m := range mutations {
		m.fn()
		if v.Len() != 5000 {
			t.Fatalf("after %s: view Len = %d", m.name, v.Len())
		}
		if got := viewContents(t, v); got != before {
			t.Fatalf("after %s: view changed", m.name)
		}
	}
}

// TestSnapshotConcurrentWrite streams Views from other goroutines while the
// store keeps mutating and taking new snapshots; run with -race.
func TestSnapshotConcurrentWrite(t *testing.T) {
	s := New()
	for i := range 20000 {
		s.Put([]byte(fmt.Sprint(i)), str("v", 0))
	}
	type result struct {
		want string
		got  string
		err  error
	}
	results := make(chan result)
	started := 0
	for round := range 4 {
		want := contents(s)
		v := s.Snapshot()
		started++
		go func() {
			var buf bytes.Buffer
			_, err := v.WriteTo(&buf)
			r := result{want: want, err: err}
			if err == nil {
				st := New()
				r.err = st.Restore(&buf)
				r.got = contents(st)
			}
			results <- r
		}()
		for i := range 20000 { // mutate while the view is streamed
			k := []byte(fmt.Sprint(i))
			switch i % 3 {
			case 0:
				s.Put(k, str(fmt.Sprint("r", round), int64(i)))
			case 1:
				s.Delete(k)
			default:
				s.Put([]byte(fmt.Sprint("n", round, i)), str("v", 0))
			}
		}
	}
	for range started {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.got != r.want {
			t.Fatal("a view streamed concurrently differs from the store at Snapshot time")
		}
	}
}

func TestViewWriteToError(t *testing.T) {
	s := New()
	for i := range 20000 {
		s.Put([]byte(fmt.Sprint(i)), str("value", 0))
	}
	w := &failWriter{left: 100 << 10}
	if _, err := s.Snapshot().WriteTo(w); err == nil {
		t.Fatal("WriteTo ignored a write error")
	}
	s.Put([]byte("list"), &Object{Type: TypeList})
	if _, err := s.Snapshot().WriteTo(io.Discard); err == nil {
		t.Fatal("WriteTo encoded a type it has no encoding for")
	}
}

type failWriter struct{ left int }

func (f *failWriter) Write(p []byte) (int, error) {
	if len(p) > f.left {
		return 0, io.ErrShortWrite
	}
	f.left -= len(p)
	return len(p), nil
}

// TestViewIter: a View walked in batches gives each of its keys once, in
// order, with their values as they were when it was taken, whatever the
// Store does meanwhile.
func TestViewIter(t *testing.T) {
	s := New()
	for i := range 100 {
		s.Put([]byte(fmt.Sprintf("k%03d", i)), &Object{Type: TypeString, Str: []byte(fmt.Sprint(i)), ExpireAt: int64(i % 3)})
	}
	v := s.Snapshot()
	s.Delete([]byte("k050"))
	s.Put([]byte("k001"), &Object{Type: TypeString, Str: []byte("changed")})
	s.Put([]byte("new"), &Object{Type: TypeString, Str: []byte("x")})
	it := v.Iter()
	seen := map[string]string{}
	var order []string
	for batch := 0; ; batch++ {
		more := it.Next(7, func(k []byte, o *Object) {
			seen[string(k)] = fmt.Sprintf("%s/%d", o.Str, o.ExpireAt)
			order = append(order, string(k))
		})
		if !more {
			break
		}
		if batch > 100 {
			t.Fatal("the walk does not end")
		}
	}
	if len(order) != 100 || len(seen) != 100 || seen["k001"] != "1/1" || seen["k050"] != "50/2" || seen["new"] != "" {
		t.Fatalf("%d keys (%d distinct); k001=%q k050=%q new=%q", len(order), len(seen), seen["k001"], seen["k050"], seen["new"])
	}
	if it.Next(7, func([]byte, *Object) { t.Error("a key after the end") }) {
		t.Error("more after the end")
	}
	var empty View
	empty.keys = New().keys
	if empty.Iter().Next(3, func([]byte, *Object) { t.Error("a key in an empty view") }) {
		t.Error("an empty view has more")
	}
}

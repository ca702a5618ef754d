package resp

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// oneByteReader hands out its bytes one at a time, so every frame is
// resumed many times.
type oneByteReader struct{ b []byte }

func (r *oneByteReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	p[0] = r.b[0]
	r.b = r.b[1:]
	return 1, nil
}

var replyFrames = []struct {
	name, frame string
}{
	{"status", "+OK\r\n"},
	{"error", "-ERR bad\r\n"},
	{"int", ":-42\r\n"},
	{"bulk", "$5\r\nhel\r\n\r\n"},
	{"empty bulk", "$0\r\n\r\n"},
	{"null bulk", "$-1\r\n"},
	{"null array", "*-1\r\n"},
	{"empty array", "*0\r\n"},
	{"nested", "*3\r\n:1\r\n*2\r\n$1\r\na\r\n*0\r\n+x\r\n"},
	{"resp3 null", "_\r\n"},
	{"double", ",1.5\r\n"},
	{"bool", "#t\r\n"},
	{"big number", "(123456789012345678901234567890\r\n"},
	{"blob error", "!8\r\nERR a\r\nb\r\n"},
	{"verbatim", "=7\r\ntxt:abc\r\n"},
	{"map", "%2\r\n+a\r\n:1\r\n+b\r\n*1\r\n_\r\n"},
	{"set", "~2\r\n+a\r\n+b\r\n"},
	{"push", ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nm\r\n"},
	{"attribute", "|1\r\n+ttl\r\n:3\r\n$1\r\nv\r\n"},
	{"empty map", "%0\r\n"},
}

func TestReplyReaderFrames(t *testing.T) {
	var all bytes.Buffer
	for _, f := range replyFrames {
		all.WriteString(f.frame)
	}
	for _, rd := range []struct {
		name string
		r    io.Reader
	}{{"whole", bytes.NewReader(all.Bytes())}, {"byte by byte", &oneByteReader{all.Bytes()}}} {
		t.Run(rd.name, func(t *testing.T) {
			rr := NewReplyReader(rd.r, 0)
			for _, f := range replyFrames {
				got, err := rr.Next()
				if err != nil {
					t.Fatalf("%s: %v", f.name, err)
				}
				if string(got) != f.frame {
					t.Fatalf("%s: got %q, want %q", f.name, got, f.frame)
				}
			}
			if _, err := rr.Next(); !errors.Is(err, io.EOF) {
				t.Fatalf("after the last frame: %v, want EOF", err)
			}
		})
	}
}

func TestReplyReaderBigBulk(t *testing.T) {
	body := strings.Repeat("x", 300_000)
	frame := "$300000\r\n" + body + "\r\n"
	rr := NewReplyReader(strings.NewReader(frame+":1\r\n"), 0)
	got, err := rr.Next()
	if err != nil || string(got) != frame {
		t.Fatalf("big bulk: %v (%d bytes)", err, len(got))
	}
	if got, err := rr.Next(); err != nil || string(got) != ":1\r\n" {
		t.Fatalf("after it: %q %v", got, err)
	}
}

func TestReplyReaderMalformed(t *testing.T) {
	for _, bad := range []string{
		"?x\r\n", "+ok\n", ":12a\r\n", "$-2\r\n", "$3\r\nabcd\r\n", "*-2\r\n", "~-1\r\n",
		"#x\r\n", "_x\r\n", "$99999999999999999999\r\n", "*1\r\n?\r\n", "\r\n",
	} {
		rr := NewReplyReader(strings.NewReader(bad), 0)
		if _, err := rr.Next(); !errors.Is(err, ErrBadReply) {
			t.Errorf("%q: err %v, want ErrBadReply", bad, err)
		}
	}
	rr := NewReplyReader(strings.NewReader("$100\r\n"+strings.Repeat("a", 200)), 64)
	if _, err := rr.Next(); !errors.Is(err, ErrBadReply) {
		t.Errorf("over the limit: %v, want ErrBadReply", err)
	}
}

func TestFrameHelpers(t *testing.T) {
	if s, ok := FrameError([]byte("-MOVED 1 a:1\r\n")); !ok || s != "MOVED 1 a:1" {
		t.Fatalf("FrameError: %q %v", s, ok)
	}
	if s, ok := FrameError([]byte("!5\r\nERR x\r\n")); !ok || s != "ERR x" {
		t.Fatalf("FrameError blob: %q %v", s, ok)
	}
	if _, ok := FrameError([]byte("+OK\r\n")); ok {
		t.Fatal("FrameError of a status")
	}
	if n, ok := FrameInt([]byte(":-7\r\n")); !ok || n != -7 {
		t.Fatalf("FrameInt: %d %v", n, ok)
	}
	for frame, want := range map[string]string{"+OK\r\n": "OK", "$2\r\nab\r\n": "ab", "=6\r\ntxt:ab\r\n": "ab"} {
		if s, ok := FrameString([]byte(frame)); !ok || string(s) != want {
			t.Fatalf("FrameString(%q) = %q %v", frame, s, ok)
		}
	}
	for _, null := range []string{"_\r\n", "$-1\r\n", "*-1\r\n"} {
		if !FrameIsNull([]byte(null)) {
			t.Fatalf("FrameIsNull(%q) false", null)
		}
	}
	elems, typ, ok := FrameElems([]byte("%2\r\n+a\r\n:1\r\n+b\r\n*1\r\n_\r\n"))
	if !ok || typ != '%' || len(elems) != 4 || string(elems[3]) != "*1\r\n_\r\n" {
		t.Fatalf("FrameElems(map) = %q %c %v", elems, typ, ok)
	}
	if _, _, ok := FrameElems([]byte("*-1\r\n")); ok {
		t.Fatal("FrameElems of a null array")
	}
}

func TestAppendRequest(t *testing.T) {
	got := AppendRequest(nil, [][]byte{[]byte("SET"), []byte("k"), {}})
	if string(got) != "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n" {
		t.Fatalf("AppendRequest = %q", got)
	}
	reqs, err := NewRequestReader(bytes.NewReader(got), Limits{}).Read()
	if err != nil || len(reqs) != 1 || len(reqs[0].Args) != 3 {
		t.Fatalf("read back: %v %v", reqs, err)
	}
}

// FuzzReplyReader: any bytes either read as frames that FrameLen measures
// the same and the helpers take apart without panicking, or fail with
// ErrBadReply; never a panic, never a frame longer than the input.
func FuzzReplyReader(f *testing.F) {
	for _, fr := range replyFrames {
		f.Add([]byte(fr.frame))
	}
	f.Add([]byte("*2\r\n$1\r\na\r\n"))
	f.Add([]byte("|1\r\n+a\r\n+b\r\n+c\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rr := NewReplyReader(&oneByteReader{data}, 1<<16)
		total := 0
		for {
			fr, err := rr.Next()
			if err != nil {
				if !errors.Is(err, ErrBadReply) && !errors.Is(err, io.EOF) {
					t.Fatalf("unexpected error %v", err)
				}
				break
			}
			total += len(fr)
			if total > len(data) {
				t.Fatalf("frames longer than the input")
			}
			if n, ok := FrameLen(fr); !ok || n != len(fr) {
				t.Fatalf("FrameLen(%q) = %d %v", fr, n, ok)
			}
			_, _ = FrameError(fr)
			_, _ = FrameInt(fr)
			_, _ = FrameString(fr)
			if elems, _, ok := FrameElems(fr); ok {
				for _, e := range elems {
					if n, ok := FrameLen(e); !ok || n != len(e) {
						t.Fatalf("element %q of %q", e, fr)
					}
				}
			}
		}
	})
}

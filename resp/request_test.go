package resp

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// chunkReader returns at most n bytes per Read.
type chunkReader struct {
	b []byte
	n int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), r.n)], r.b)
	r.b = r.b[k:]
	return k, nil
}

// readAll reads every request of in, delivered chunk bytes at a time, and
// returns their arguments (copied) and the error that ended the reading.
func readAll(l Limits, in []byte, chunk int) ([][]string, error) {
	rr := NewRequestReader(&chunkReader{b: in, n: chunk}, l)
	var out [][]string
	for {
		reqs, err := rr.Read()
		if err != nil {
			return out, err
		}
		for _, r := range reqs {
			args := make([]string, len(r.Args))
			for i, a := range r.Args {
				args[i] = string(a)
			}
			out = append(out, args)
		}
	}
}

func show(cmds [][]string) string {
	parts := make([]string, len(cmds))
	for i, c := range cmds {
		parts[i] = strings.Join(c, "|")
	}
	return strings.Join(parts, " / ")
}

var chunkSizes = []int{1, 2, 3, 7, 1 << 20}

func TestRequestReaderValid(t *testing.T) {
	tests := []struct {
		in   string
		want string // commands " / ", arguments "|"
	}{
		{"*1\r\n$4\r\nPING\r\n", "PING"},
		{"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n", "SET|k|"},
		{"*2\r\n$3\r\nGET\r\n$10\r\n\r\n*1\r\n$1\r\r\n\n", "GET|\r\n*1\r\n$1\r\r"}, // bodies may hold anything
		{"PING\r\n", "PING"},
		{"PING\n", "PING"},
		{"\r\n", ""},
		{"\n\n", ""},
		{"set k \"a b\"\r\n*1\r\n$4\r\nPING\r\n", "set|k|a b / PING"},
		{"$not multibulk, inline\r\n", "$not|multibulk,|inline"},
		{"*1\r\n$4\r\nPING\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$5\r\nhello\r\n", "PING / PING / ECHO|hello"},
		{"*0\r\n*-1\r\n*-10\r\n*1\r\n$4\r\nPING\r\n", "PING"}, // Redis skips empty multibulks
		{"ECHO \"a\\x41\\n\" 'it\\'s'\r\n", "ECHO|aA\n|it's"},
		{"  ECHO \t x  \r\n", "ECHO|x"},
		{"ECHO a\x00b c\r\n", "ECHO|a"}, // sdssplitargs stops at NUL
		{"*1\r\n$4\r\nPI", ""},          // incomplete: nothing yet
		{"*1\r\n$536870912\r\nabc", ""},
		{"*2\r\n$1\r\na\r\n$1\r\nbXY", "a|b"}, // the CRLF after a body is not checked, as in Redis
	}
	for _, tt := range tests {
		for _, chunk := range chunkSizes {
			got, err := readAll(Limits{}, []byte(tt.in), chunk)
			if !errors.Is(err, io.EOF) || show(got) != tt.want {
				t.Errorf("read(%q, chunk %d) = %q, %v; want %q, EOF", tt.in, chunk, show(got), err, tt.want)
			}
		}
	}
}

func TestRequestReaderViolations(t *testing.T) {
	big := strings.Repeat("x", DefaultMaxInlineLen+1)
	tests := []struct {
		in   string
		lim  Limits
		want string // the commands before the violation
		err  error
	}{
		{"*1\r\n$536870913\r\n", Limits{}, "", ErrProtoBulkLength},
		{"*1\r\n$9223372036854775807\r\n", Limits{}, "", ErrProtoBulkLength},
		{"*1\r\n$99999999999999999999\r\n", Limits{}, "", ErrProtoBulkLength},
		{"*1\r\n$-1\r\n", Limits{}, "", ErrProtoBulkLength},
		{"*1\r\n$+1\r\n", Limits{}, "", ErrProtoBulkLength},
		{"*1\r\n$01\r\n", Limits{}, "", ErrProtoBulkLength},
		{"*1\r\n$\r\n", Limits{}, "", ErrProtoBulkLength},
		{"*1\r\n$1\n", Limits{}, "", ErrProtoBulkLength},
		{"*1\r\n$1\rx\r\n", Limits{}, "", ErrProtoBulkLength},
		{"*1\r\n$11\r\n", Limits{MaxBulkLen: 10}, "", ErrProtoBulkLength},
		{"*2147483648\r\n", Limits{}, "", ErrProtoMultibulkLength},
		{"*3000000000\r\n", Limits{}, "", ErrProtoMultibulkLength},
		{"*1048577\r\n", Limits{MaxMultibulkLen: 1024 * 1024}, "", ErrProtoMultibulkLength},
		{"*abc\r\n", Limits{}, "", ErrProtoMultibulkLength},
		{"*\r\n", Limits{}, "", ErrProtoMultibulkLength},
		{"*1\n", Limits{}, "", ErrProtoMultibulkLength},
		{"*-0\r\n", Limits{}, "", ErrProtoMultibulkLength},
		{"PING\r\n*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", Limits{}, "PING", errExpectedDollar('f')},
		{"PING\r\n" + big, Limits{}, "PING", ErrProtoInlineTooBig},
		{"PING\r\n" + big + "\r\n", Limits{}, "PING", ErrProtoInlineTooBig},
		{"*1\r\n$4\r\nPING\r\n*" + big, Limits{}, "PING", ErrProtoMbulkCountBig},
		{"*1\r\n$" + big, Limits{}, "", ErrProtoBulkCountBig},
		{"ECHO \"a\r\nPING\r\n", Limits{}, "", ErrUnbalancedQuotes},
		{"PING\r\nECHO 'a'b\r\n", Limits{}, "PING", ErrUnbalancedQuotes},
		{"PING\r\n*1\r\n$100000\r\n", Limits{MaxQueryBuffer: 50000}, "PING", ErrQueryBufferLimit},
	}
	for _, tt := range tests {
		for _, chunk := range chunkSizes {
			got, err := readAll(tt.lim, []byte(tt.in), chunk)
			if errText(err) != errText(tt.err) || show(got) != tt.want {
				t.Errorf("read(%.40q, chunk %d) = %q, %v; want %q, %v", tt.in, chunk, show(got), err, tt.want, tt.err)
			}
		}
	}
}

// An inline line of exactly the limit is fine; Redis refuses only more.
func TestRequestReaderInlineAtLimit(t *testing.T) {
	in := "ECHO " + strings.Repeat("x", DefaultMaxInlineLen-5) + "\n"
	got, err := readAll(Limits{}, []byte(in), 4096)
	if !errors.Is(err, io.EOF) || len(got) != 1 || len(got[0][1]) != DefaultMaxInlineLen-5 {
		t.Fatalf("inline of %d bytes: %d commands, %v", DefaultMaxInlineLen, len(got), err)
	}
}

// A big argument arriving in small reads gets its room once, and the big
// buffer is let go after it.
func TestRequestReaderBigArgument(t *testing.T) {
	const size = 4 << 20
	in := encode([][]byte{[]byte("SET"), []byte("k"), bytes.Repeat([]byte("v"), size)})
	rr := NewRequestReader(io.MultiReader(&chunkReader{b: in, n: 4096}, strings.NewReader("PING\r\n")), Limits{})
	reqs, err := rr.Read()
	if err != nil || len(reqs) != 1 || len(reqs[0].Args[2]) != size || len(reqs[0].Raw) != len(in) {
		t.Fatalf("first read: %d requests, %v", len(reqs), err)
	}
	if len(rr.buf) > size+64*1024 {
		t.Errorf("buffer of %d bytes for a %d-byte command: grown by doubling, not to the known size", len(rr.buf), size)
	}
	if reqs, err = rr.Read(); err != nil || len(reqs) != 1 || string(reqs[0].Args[0]) != "PING" {
		t.Fatalf("second read: %v, %v", reqs, err)
	}
	if len(rr.buf) > bufKeep {
		t.Errorf("buffer still %d bytes after the big command", len(rr.buf))
	}
}

// encode renders args as a RESP multibulk request.
func encode(args [][]byte) []byte {
	b := appendHeader(nil, '*', int64(len(args)))
	for _, a := range args {
		b = appendBulk(b, '$', a)
	}
	return b
}

func FuzzRequestReaderValid(f *testing.F) {
	f.Add([]byte("SET"), []byte("k"), []byte("v\r\n*"), uint8(3))
	f.Add([]byte(""), []byte("$"), []byte("*1\r\n"), uint8(1))
	f.Fuzz(func(t *testing.T, a, b, c []byte, chunk uint8) {
		in := append(encode([][]byte{a, b, c}), encode([][]byte{c})...)
		want := [][]string{{string(a), string(b), string(c)}, {string(c)}}
		got, err := readAll(Limits{}, in, int(chunk)+1)
		if !errors.Is(err, io.EOF) || show(got) != show(want) {
			t.Fatalf("read(%q) = %q, %v; want %q", in, show(got), err, show(want))
		}
	})
}

// FuzzRequestReader: any input, any chunking, the same commands and the
// same error, and no panic.
func FuzzRequestReader(f *testing.F) {
	for _, s := range []string{"*1\r\n$4\r\nPING\r\n", "*-1\r\n", "$1\r\n", "*1\r\n$99999999999\r\n", "PING \"a\\n\" 'b'\n", "*2\r\n$1\r\na\r\n$1\r\nb\r\n"} {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		lim := Limits{MaxInlineLen: 100, MaxQueryBuffer: 1 << 20}
		whole, werr := readAll(lim, in, len(in)+1)
		parts, perr := readAll(lim, in, int(chunk)+1)
		if show(whole) != show(parts) || errText(werr) != errText(perr) {
			t.Fatalf("chunking changes the result: %q/%v vs %q/%v", show(whole), werr, show(parts), perr)
		}
	})
}

func errText(err error) string {
	var pe *ProtocolError
	if errors.As(err, &pe) {
		return pe.Text
	}
	if errors.Is(err, io.EOF) {
		return "EOF"
	}
	return err.Error()
}

// loopReader returns the same bytes again and again.
type loopReader struct {
	data []byte
	off  int
}

func (r *loopReader) Read(p []byte) (int, error) {
	n := copy(p, r.data[r.off:])
	r.off = (r.off + n) % len(r.data)
	return n, nil
}

// BenchmarkRequestReader parses pipelines of 16 small SETs; one op is one
// pipeline. (The redcon reader behind the former guard took about 6 µs
// and 37 allocations for the same, docs/benchmarks.md.)
func BenchmarkRequestReader(b *testing.B) {
	var data []byte
	for i := range 16 {
		data = append(data, encode([][]byte{[]byte("SET"), []byte("key:00000" + string(rune('a'+i))), []byte("xxx")})...)
	}
	rr := NewRequestReader(&loopReader{data: data}, Limits{})
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for got := 0; got < b.N*16; {
		reqs, err := rr.Read()
		if err != nil {
			b.Fatal(err)
		}
		got += len(reqs)
	}
}

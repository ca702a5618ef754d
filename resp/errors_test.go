package resp

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestErrUnknownCommand(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"foo", []string{"a", "b"}, "ERR unknown command 'foo', with args beginning with: 'a' 'b' "},
		{"foo", nil, "ERR unknown command 'foo', with args beginning with: "},
		{"FOO", []string{""}, "ERR unknown command 'FOO', with args beginning with: '' "},
	}
	for _, tt := range tests {
		var args [][]byte
		for _, a := range tt.args {
			args = append(args, []byte(a))
		}
		if got := ErrUnknownCommand([]byte(tt.name), args).Error(); got != tt.want {
			t.Errorf("ErrUnknownCommand(%q, %q) = %q, want %q", tt.name, tt.args, got, tt.want)
		}
	}
}

// Redis quotes arguments while the quoted text is under 128 bytes, each cut
// to what is left of the 128, and the name cut to 128.
func TestErrUnknownCommandTruncates(t *testing.T) {
	long := strings.Repeat("x", 200)
	got := ErrUnknownCommand([]byte(long), [][]byte{[]byte(long), []byte("next")}).Error()
	want := "ERR unknown command '" + long[:128] + "', with args beginning with: '" + long[:128] + "' "
	if got != want {
		t.Errorf("long: got %q", got)
	}
	args := [][]byte{[]byte(strings.Repeat("a", 100)), []byte(strings.Repeat("b", 100)), []byte("c")}
	got = ErrUnknownCommand([]byte("x"), args).Error()
	want = "ERR unknown command 'x', with args beginning with: '" + strings.Repeat("a", 100) + "' '" + strings.Repeat("b", 25) + "' "
	if got != want {
		t.Errorf("two args: got %q\nwant %q", got, want)
	}
}

func TestErrorTexts(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{ErrWrongArgs("GET"), "ERR wrong number of arguments for 'get' command"},
		{ErrUnknownSubcommand([]byte("config"), []byte("foo")), "ERR unknown subcommand 'foo'. Try CONFIG HELP."},
		{ErrMoved(3999, "127.0.0.1:6381"), "MOVED 3999 127.0.0.1:6381"},
		{ErrAsk(3999, "127.0.0.1:6381"), "ASK 3999 127.0.0.1:6381"},
		{fmt.Errorf("apply: %w", ErrWrongType), "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{errors.New("something broke"), "ERR something broke"},
	}
	for _, tt := range tests {
		if got := ErrorText(tt.err); got != tt.want {
			t.Errorf("ErrorText(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
	wrapped := fmt.Errorf("ctx: %w", ErrCrossSlot)
	if !errors.Is(wrapped, ErrCrossSlot) || ErrCrossSlot.Prefix() != "CROSSSLOT" || ErrMoved(1, "a:1").Prefix() != "MOVED" {
		t.Error("errors.Is or Prefix is wrong")
	}
}

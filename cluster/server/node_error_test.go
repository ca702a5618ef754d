package server

import (
	"errors"
	"fmt"
	"testing"

	"github.com/slotraft/slotraft/resp"
)

// TestNodeError: a node operation's error gets ERR once, keeps a code it
// has, and stays on one line.
func TestNodeError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errors.New("no slot group 9"), "ERR no slot group 9"},
		{errors.New("ERR forwarded from the meta leader"), "ERR forwarded from the meta leader"},
		{fmt.Errorf("moving: %w", resp.NewError("TRYAGAIN later")), "TRYAGAIN later"},
		{errors.New("two\r\nlines"), "ERR two  lines"},
	} {
		if got := string(nodeError(tc.err).Str); got != tc.want {
			t.Errorf("nodeError(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

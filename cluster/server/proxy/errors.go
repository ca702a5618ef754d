package proxy

import (
	"errors"
	"fmt"

	"github.com/slotraft/slotraft/resp"
)

// The proxy's own replies and errors. Redis's texts come from resp; these
// are the proxy's, for what only a proxy meets.

var (
	// errOutcomeUnknown answers a command that may have changed data when
	// the connection it was sent on broke before its reply came: it is
	// never sent again (docs/proxy.md, "Failover").
	errOutcomeUnknown = resp.NewError("ERR write outcome unknown: the connection to the slot's leader broke before the reply; the command may or may not have been applied")
	// errReordered answers a command that was not run (its node answered
	// MOVED or CLUSTERDOWN) while a later command of the same slot, already
	// sent, did run: sending it again would run it after that one.
	errReordered = resp.NewError("ERR not run: the slot's leader changed while later commands of the pipeline were already sent; nothing was done, send it again")
)

// errRefused is the reply to a command the proxy does not serve.
func errRefused(name, why string) *resp.Error {
	return resp.Errorf("ERR '%s' is not served through the slotraft proxy: %s", name, why)
}

// errInMulti is the reply to a command refused inside MULTI.
func errInMulti(name string) *resp.Error {
	return resp.Errorf("ERR '%s' inside MULTI is not served through the slotraft proxy", name)
}

// errNotSent: a call was never written to a connection (the dial failed,
// or the connection had broken before): it may be sent elsewhere.
var errNotSent = errors.New("proxy: not sent")

// notSent wraps a dial or write error that happened before anything of a
// call reached its node.
func notSent(err error) error { return fmt.Errorf("%w: %w", errNotSent, err) }

// errFrame renders an error as a reply frame.
func errFrame(e *resp.Error, proto int) []byte { return resp.Err(e).Append(nil, proto) }

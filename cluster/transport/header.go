package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// magic opens every bus connection (slotraft bus, version 1).
var magic = [4]byte{'S', 'R', 'B', '1'}

// ControlGroup is the reserved group id of the control protocol.
const ControlGroup uint32 = 0

// tlsHandshakeRecord is the first byte of a TLS connection (a handshake
// record; the second is the major version, 3).
const tlsHandshakeRecord = 0x16

// maxIDLen bounds the node id carried in a header.
const maxIDLen = 255

var errBadHeader = errors.New("transport: bad connection header")

// header is what a dialler sends before anything else.
type header struct {
	group uint32
	from  string // the dialling node's id
}

func (h header) encode() ([]byte, error) {
	if len(h.from) > maxIDLen {
		return nil, fmt.Errorf("transport: node id longer than %d bytes", maxIDLen)
	}
	b := make([]byte, 0, 9+len(h.from))
	b = append(b, magic[:]...)
	b = binary.BigEndian.AppendUint32(b, h.group)
	b = append(b, byte(len(h.from)))
	return append(b, h.from...), nil
}

// readHeader reads one header; it reads at most 9+255 bytes.
func readHeader(r io.Reader) (header, error) {
	var fixed [9]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return header{}, err
	}
	// A dialler with a secret or bus TLS, when this node has neither, is
	// named: both sides' operators should hear of it.
	switch m := [4]byte(fixed[:4]); {
	case m == authMagic:
		return header{}, ErrNoLocalSecret
	case m[0] == tlsHandshakeRecord && m[1] == 3:
		return header{}, ErrNoLocalTLS
	case m != magic:
		return header{}, errBadHeader
	}
	h := header{group: binary.BigEndian.Uint32(fixed[4:8])}
	if n := int(fixed[8]); n > 0 {
		id := make([]byte, n)
		if _, err := io.ReadFull(r, id); err != nil {
			return header{}, err
		}
		h.from = string(id)
	}
	return h, nil
}

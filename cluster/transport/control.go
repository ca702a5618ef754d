package transport

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// Status is a node's view of one group, as the control protocol reports it.
type Status struct {
	LeaderID     string // "" if unknown
	LeaderAddr   string
	Term         uint64
	LastIndex    uint64
	AppliedIndex uint64
}

// ControlFunc answers a control query about group; false if the node does
// not host it.
type ControlFunc func(group uint32) (Status, bool)

// ErrUnknownGroup is returned by Query when the peer does not host the group.
var ErrUnknownGroup = errors.New("transport: peer does not host the group")

const (
	ctlOK      byte = 0
	ctlUnknown byte = 1
	maxAddrLen      = 1024
	ctlTimeout      = 5 * time.Second
)

// serveControl answers control queries on c until it is closed or idle.
func (m *Mux) serveControl(c *conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		_ = c.SetReadDeadline(time.Now().Add(ctlTimeout))
		var req [4]byte
		if _, err := io.ReadFull(r, req[:]); err != nil {
			return
		}
		var st Status
		ok := false
		if m.cfg.Control != nil {
			st, ok = m.cfg.Control(binary.BigEndian.Uint32(req[:]))
		}
		_ = c.SetWriteDeadline(time.Now().Add(ctlTimeout))
		if _, err := c.Write(encodeStatus(st, ok)); err != nil {
			return
		}
	}
}

func encodeStatus(st Status, ok bool) []byte {
	if !ok {
		return []byte{ctlUnknown}
	}
	id, addr := st.LeaderID, st.LeaderAddr
	if len(id) > maxIDLen {
		id = ""
	}
	if len(addr) > maxAddrLen {
		addr = ""
	}
	b := []byte{ctlOK, byte(len(id))}
	b = append(b, id...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(addr)))
	b = append(b, addr...)
	b = binary.BigEndian.AppendUint64(b, st.Term)
	b = binary.BigEndian.AppendUint64(b, st.LastIndex)
	return binary.BigEndian.AppendUint64(b, st.AppliedIndex)
}

func decodeStatus(r io.Reader) (Status, error) {
	var st Status
	var b [1]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return st, err
	}
	switch b[0] {
	case ctlOK:
	case ctlUnknown:
		return st, ErrUnknownGroup
	default:
		return st, errors.New("transport: bad control reply")
	}
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return st, err
	}
	id := make([]byte, b[0])
	if _, err := io.ReadFull(r, id); err != nil {
		return st, err
	}
	var l [2]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return st, err
	}
	n := binary.BigEndian.Uint16(l[:])
	if n > maxAddrLen {
		return st, errors.New("transport: bad control reply")
	}
	addr := make([]byte, n)
	if _, err := io.ReadFull(r, addr); err != nil {
		return st, err
	}
	var nums [24]byte
	if _, err := io.ReadFull(r, nums[:]); err != nil {
		return st, err
	}
	st.LeaderID, st.LeaderAddr = string(id), string(addr)
	st.Term = binary.BigEndian.Uint64(nums[0:])
	st.LastIndex = binary.BigEndian.Uint64(nums[8:])
	st.AppliedIndex = binary.BigEndian.Uint64(nums[16:])
	return st, nil
}

// Query asks the node at bus address addr for its view of group.
func (m *Mux) Query(ctx context.Context, addr string, group uint32) (Status, error) {
	timeout := ctlTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return Status{}, context.DeadlineExceeded
		}
	}
	c, err := m.dial(addr, ControlGroup, timeout)
	if err != nil {
		return Status{}, fmt.Errorf("control query %s: %w", addr, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	_ = c.SetDeadline(time.Now().Add(timeout))
	var req [4]byte
	binary.BigEndian.PutUint32(req[:], group)
	if _, err := c.Write(req[:]); err != nil {
		return Status{}, fmt.Errorf("control query %s: %w", addr, err)
	}
	st, err := decodeStatus(bufio.NewReader(c))
	if err != nil {
		return Status{}, fmt.Errorf("control query %s: %w", addr, err)
	}
	return st, nil
}

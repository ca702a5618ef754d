package store

import (
	"fmt"
	"math"
)

// Stream snapshot record value:
//
//	flags        byte (0)
//	last-id, first-id, max-deleted-id   two uvarints each (ms, seq)
//	entries-added                        zigzag varint
//	entries      uvarint count, then per entry: id, uvarint number of
//	             strings (fields and values alternating), each uvarint
//	             length + bytes; ascending ID order
//	nodes        uvarint count, then per node: first id, last id, live,
//	             deleted, fixed bytes (uvarints), master fields (uvarint
//	             count + strings); ascending order
//	groups       uvarint count, then per group: name, last-delivered id,
//	             entries-read (zigzag), consumers (uvarint count; per
//	             consumer: name, seen-time, active-time as zigzag), PEL
//	             (uvarint count; per entry: id, consumer name, delivery
//	             time and count as zigzag); each consumer's own PEL is
//	             rebuilt from the group's
func init() {
	registerCodec(TypeStream, codec{encode: encodeStream, decode: decodeStream})
}

func (e *encoder) streamID(id StreamID) {
	e.uvarint(id.Ms)
	e.uvarint(id.Seq)
}

func encodeStream(e *encoder, c Collection) {
	s := c.(*Stream)
	e.tag(0)
	e.streamID(s.LastID)
	e.streamID(s.FirstID)
	e.streamID(s.MaxDeletedID)
	e.varint(s.EntriesAdded)
	e.uvarint(uint64(s.entries.Len()))
	s.entries.Scan(func(en StreamEntry) bool {
		e.streamID(en.ID)
		e.uvarint(uint64(len(en.Fields)))
		for _, f := range en.Fields {
			e.bytes(f)
		}
		return e.err == nil
	})
	e.uvarint(uint64(s.nodes.Len()))
	s.nodes.Scan(func(n streamNode) bool {
		e.streamID(n.first)
		e.streamID(n.last)
		e.uvarint(uint64(n.live))
		e.uvarint(uint64(n.deleted))
		e.uvarint(uint64(n.fixed))
		e.uvarint(uint64(len(n.master)))
		for _, f := range n.master {
			e.bytes(f)
		}
		return e.err == nil
	})
	e.uvarint(uint64(s.groups.Len()))
	s.groups.Scan(func(g *StreamGroup) bool {
		e.bytes([]byte(g.Name))
		e.streamID(g.LastID)
		e.varint(g.EntriesRead)
		e.uvarint(uint64(g.consumers.Len()))
		g.consumers.Scan(func(c *StreamConsumer) bool {
			e.bytes([]byte(c.Name))
			e.varint(c.SeenTime)
			e.varint(c.ActiveTime)
			return e.err == nil
		})
		e.uvarint(uint64(g.pel.Len()))
		g.pel.Scan(func(p PendingEntry) bool {
			e.streamID(p.ID)
			e.bytes([]byte(p.Consumer))
			e.varint(p.DeliveryTime)
			e.varint(p.DeliveryCount)
			return e.err == nil
		})
		return e.err == nil
	})
}

func (d *decoder) streamID(what string) (StreamID, error) {
	ms, err := d.uvarint()
	if err != nil {
		return StreamID{}, fmt.Errorf("%s: %w", what, err)
	}
	seq, err := d.uvarint()
	if err != nil {
		return StreamID{}, fmt.Errorf("%s: %w", what, err)
	}
	return StreamID{ms, seq}, nil
}

// count reads a count that cannot exceed maxLen.
func (d *decoder) count(what string) (uint64, error) {
	n, err := d.uvarint()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	if n > maxLen {
		return 0, fmt.Errorf("%w: %s %d too large", ErrCorrupt, what, n)
	}
	return n, nil
}

func decodeStream(d *decoder) (Collection, error) {
	flags, err := d.byte()
	if err != nil {
		return nil, fmt.Errorf("stream flags: %w", err)
	}
	if flags != 0 {
		return nil, fmt.Errorf("%w: stream flags %#x", ErrCorrupt, flags)
	}
	s := NewStream()
	if s.LastID, err = d.streamID("stream last id"); err != nil {
		return nil, err
	}
	if s.FirstID, err = d.streamID("stream first id"); err != nil {
		return nil, err
	}
	if s.MaxDeletedID, err = d.streamID("stream max deleted id"); err != nil {
		return nil, err
	}
	if s.EntriesAdded, err = d.svarint(); err != nil {
		return nil, fmt.Errorf("stream entries added: %w", err)
	}
	n, err := d.count("stream entries")
	if err != nil {
		return nil, err
	}
	var prev StreamID
	for i := uint64(0); i < n; i++ {
		id, err := d.streamID("stream entry id")
		if err != nil {
			return nil, err
		}
		if (i > 0 && !prev.Less(id)) || s.LastID.Less(id) {
			return nil, fmt.Errorf("%w: stream entry %v out of order", ErrCorrupt, id)
		}
		prev = id
		nf, err := d.count("stream entry fields")
		if err != nil {
			return nil, err
		}
		if nf == 0 || nf%2 != 0 {
			return nil, fmt.Errorf("%w: stream entry with %d strings", ErrCorrupt, nf)
		}
		fv := make([][]byte, 0, min(nf, 1024))
		for j := uint64(0); j < nf; j++ {
			b, err := d.bytes("stream field")
			if err != nil {
				return nil, err
			}
			fv = append(fv, b)
		}
		s.entries.Load(StreamEntry{ID: id, Fields: fv})
	}
	nn, err := d.count("stream nodes")
	if err != nil {
		return nil, err
	}
	var live int64
	for i := uint64(0); i < nn; i++ {
		var nd streamNode
		if nd.first, err = d.streamID("stream node first"); err != nil {
			return nil, err
		}
		if nd.last, err = d.streamID("stream node last"); err != nil {
			return nil, err
		}
		var vals [3]uint64
		for k := range vals {
			if vals[k], err = d.count("stream node counter"); err != nil {
				return nil, err
			}
		}
		nd.live, nd.deleted, nd.fixed = int64(vals[0]), int64(vals[1]), int(vals[2])
		nm, err := d.count("stream node fields")
		if err != nil {
			return nil, err
		}
		for j := uint64(0); j < nm; j++ {
			b, err := d.bytes("stream node field")
			if err != nil {
				return nil, err
			}
			nd.master = append(nd.master, b)
		}
		if nd.live <= 0 || nd.last.Less(nd.first) {
			return nil, fmt.Errorf("%w: bad stream node", ErrCorrupt)
		}
		live += nd.live
		s.nodes.Load(nd)
	}
	if live != int64(s.entries.Len()) {
		return nil, fmt.Errorf("%w: stream nodes hold %d entries, not %d", ErrCorrupt, live, s.entries.Len())
	}
	ng, err := d.count("stream groups")
	if err != nil {
		return nil, err
	}
	for i := uint64(0); i < ng; i++ {
		name, err := d.bytes("stream group name")
		if err != nil {
			return nil, err
		}
		last, err := d.streamID("stream group last id")
		if err != nil {
			return nil, err
		}
		er, err := d.svarint()
		if err != nil {
			return nil, fmt.Errorf("stream group entries read: %w", err)
		}
		if !s.CreateGroup(name, last, er) {
			return nil, fmt.Errorf("%w: duplicate stream group %q", ErrCorrupt, short(name))
		}
		g := s.MutGroup(name)
		nc, err := d.count("stream consumers")
		if err != nil {
			return nil, err
		}
		for j := uint64(0); j < nc; j++ {
			cn, err := d.bytes("stream consumer name")
			if err != nil {
				return nil, err
			}
			seen, err := d.svarint()
			if err != nil {
				return nil, fmt.Errorf("stream consumer seen time: %w", err)
			}
			active, err := d.svarint()
			if err != nil {
				return nil, fmt.Errorf("stream consumer active time: %w", err)
			}
			c, created := g.CreateConsumer(cn, seen)
			if !created {
				return nil, fmt.Errorf("%w: duplicate stream consumer %q", ErrCorrupt, short(cn))
			}
			c.ActiveTime = active
		}
		np, err := d.count("stream pending entries")
		if err != nil {
			return nil, err
		}
		for j := uint64(0); j < np; j++ {
			var p PendingEntry
			if p.ID, err = d.streamID("stream pending id"); err != nil {
				return nil, err
			}
			cn, err := d.bytes("stream pending consumer")
			if err != nil {
				return nil, err
			}
			p.Consumer = string(cn)
			if p.DeliveryTime, err = d.svarint(); err != nil {
				return nil, fmt.Errorf("stream pending time: %w", err)
			}
			if p.DeliveryCount, err = d.svarint(); err != nil {
				return nil, fmt.Errorf("stream pending count: %w", err)
			}
			if g.Consumer(cn) == nil {
				return nil, fmt.Errorf("%w: pending entry of unknown consumer %q", ErrCorrupt, short(cn))
			}
			if _, dup := g.PendingGet(p.ID); dup {
				return nil, fmt.Errorf("%w: duplicate pending entry %v", ErrCorrupt, p.ID)
			}
			g.SetPending(p)
		}
	}
	if s.EntriesAdded < int64(s.entries.Len()) || s.EntriesAdded == math.MinInt64 {
		return nil, fmt.Errorf("%w: stream entries added %d below length", ErrCorrupt, s.EntriesAdded)
	}
	return s, nil
}

package fsm

import (
	"encoding/binary"
	"slices"
	"strconv"

	"github.com/slotraft/slotraft/store"
)

// Streams in DUMP payloads. RESTORE reads the three formats Redis writes:
// RDB_TYPE_STREAM_LISTPACKS (Redis 5 and 6), _2 (7.0: first ID, max deleted
// ID, entries added, a group's entries read) and _3 (7.2: a consumer's
// active time). DUMP writes _2, labelled RDB version 10, the oldest that
// knows it, so that Redis 7.0 and 7.2 restore it with every field but the
// consumers' active time (which 7.2 then takes from their seen time).
//
// The entries travel in listpacks (Redis's t_stream.c layout), a radix
// tree node each, keyed by the node's master ID: a master entry (count of
// live entries, deleted ones, the master fields, 0), then per entry its
// flags, the ID's difference from the master ID, its fields (or only the
// values when they are the master's: SAMEFIELDS) and an lp-count.

const (
	rdbTypeStreamListpacks  = 15
	rdbTypeStreamListpacks2 = 19
	rdbTypeStreamListpacks3 = 21
	// rdbVersionStreamDump labels a stream's DUMP payload (see above).
	rdbVersionStreamDump = 10
	// streamDumpNodeEntries is how many entries DUMP puts in a listpack:
	// stream-node-max-entries' default.
	streamDumpNodeEntries = 100
	// Entry flags (t_stream.c).
	streamItemDeleted    = 1
	streamItemSameFields = 2
)

// --- writing -------------------------------------------------------------

// rdbAppendStream writes s as stream type t (DUMP: _2; tests write the
// others to read them back).
func rdbAppendStream(b []byte, s *store.Stream, t byte) []byte {
	b = append(b, t)
	var entries []store.StreamEntry
	s.Range(store.StreamID{}, store.MaxStreamID, false, func(e store.StreamEntry) bool {
		entries = append(entries, e)
		return true
	})
	nodes := (len(entries) + streamDumpNodeEntries - 1) / streamDumpNodeEntries
	b = rdbAppendLen(b, uint64(nodes))
	for i := 0; i < len(entries); i += streamDumpNodeEntries {
		chunk := entries[i:min(i+streamDumpNodeEntries, len(entries))]
		b = rdbAppendRaw(b, rawStreamID(chunk[0].ID))
		b = rdbAppendRaw(b, streamListpack(chunk))
	}
	b = rdbAppendLen(b, uint64(s.Length()))
	b = rdbAppendLen(rdbAppendLen(b, s.LastID.Ms), s.LastID.Seq)
	if t >= rdbTypeStreamListpacks2 {
		for _, id := range []store.StreamID{s.FirstID, s.MaxDeletedID} {
			b = rdbAppendLen(rdbAppendLen(b, id.Ms), id.Seq)
		}
		b = rdbAppendLen(b, uint64(s.EntriesAdded))
	}
	b = rdbAppendLen(b, uint64(s.NumGroups()))
	s.Groups(func(g *store.StreamGroup) bool {
		b = rdbAppendGroup(b, g, t)
		return true
	})
	return b
}

// rdbAppendGroup writes a consumer group: name, last delivered ID, entries
// read, its PEL with delivery times and counts, its consumers with their
// seen times and PELs.
func rdbAppendGroup(b []byte, g *store.StreamGroup, t byte) []byte {
	b = rdbAppendRaw(b, []byte(g.Name))
	b = rdbAppendLen(rdbAppendLen(b, g.LastID.Ms), g.LastID.Seq)
	if t >= rdbTypeStreamListpacks2 {
		b = rdbAppendLen(b, uint64(g.EntriesRead)) // -1 (unknown) as Redis writes it
	}
	b = rdbAppendLen(b, uint64(g.PendingLen()))
	g.Pending(store.StreamID{}, func(p store.PendingEntry) bool {
		b = append(b, rawStreamID(p.ID)...)
		b = binary.LittleEndian.AppendUint64(b, uint64(p.DeliveryTime))
		b = rdbAppendLen(b, uint64(p.DeliveryCount))
		return true
	})
	b = rdbAppendLen(b, uint64(g.NumConsumers()))
	g.Consumers(func(c *store.StreamConsumer) bool {
		b = rdbAppendRaw(b, []byte(c.Name))
		b = binary.LittleEndian.AppendUint64(b, uint64(c.SeenTime))
		if t >= rdbTypeStreamListpacks3 {
			b = binary.LittleEndian.AppendUint64(b, uint64(c.ActiveTime))
		}
		b = rdbAppendLen(b, uint64(c.PendingLen()))
		c.Pending(store.StreamID{}, func(id store.StreamID) bool {
			b = append(b, rawStreamID(id)...)
			return true
		})
		return true
	})
	return b
}

// rdbAppendRaw is rdbSaveRawString without integer encoding.
func rdbAppendRaw(b, s []byte) []byte { return append(rdbAppendLen(b, uint64(len(s))), s...) }

// rawStreamID is a stream ID as a radix tree key: ms and seq big-endian.
func rawStreamID(id store.StreamID) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(make([]byte, 0, 16), id.Ms), id.Seq)
}

// streamListpack lays out entries (the first is the master) as one
// stream listpack.
func streamListpack(entries []store.StreamEntry) []byte {
	var lp listpackWriter
	master := entries[0]
	lp.int(int64(len(entries)))
	lp.int(0) // deleted
	lp.int(int64(len(master.Fields) / 2))
	for i := 0; i < len(master.Fields); i += 2 {
		lp.str(master.Fields[i])
	}
	lp.int(0) // the master entry's terminator
	for _, e := range entries {
		same := sameFields(master.Fields, e.Fields)
		n := int64(len(e.Fields) / 2)
		flags := int64(0)
		if same {
			flags = streamItemSameFields
		}
		lp.int(flags)
		lp.int(int64(e.ID.Ms - master.ID.Ms))
		lp.int(int64(e.ID.Seq - master.ID.Seq))
		if !same {
			lp.int(n)
		}
		for i, f := range e.Fields {
			if i%2 == 0 && same {
				continue
			}
			lp.str(f)
		}
		count := n + 3
		if !same {
			count += n + 1
		}
		lp.int(count)
	}
	return lp.bytes()
}

// sameFields reports whether entry fields fv has the master's field names
// in the master's order.
func sameFields(master, fv [][]byte) bool {
	if len(master) != len(fv) {
		return false
	}
	for i := 0; i < len(fv); i += 2 {
		if string(master[i]) != string(fv[i]) {
			return false
		}
	}
	return true
}

// listpackWriter builds a listpack (listpack.c): elements with their
// encoding and back-length, then the header and the end byte.
type listpackWriter struct {
	body []byte
	n    int
}

// str appends s, as an integer when it is one (lpAppend does the same).
func (w *listpackWriter) str(s []byte) {
	if v, err := strconv.ParseInt(string(s), 10, 64); err == nil && len(s) <= 20 && strconv.FormatInt(v, 10) == string(s) {
		w.int(v)
		return
	}
	start := len(w.body)
	switch l := len(s); {
	case l < 64:
		w.body = append(w.body, 0x80|byte(l))
	case l < 4096:
		w.body = append(w.body, 0xE0|byte(l>>8), byte(l))
	default:
		w.body = binary.LittleEndian.AppendUint32(append(w.body, 0xF0), uint32(l))
	}
	w.body = append(w.body, s...)
	w.backlen(len(w.body) - start)
}

// int appends v in the smallest integer encoding.
func (w *listpackWriter) int(v int64) {
	start := len(w.body)
	switch {
	case v >= 0 && v <= 127:
		w.body = append(w.body, byte(v))
	case v >= -4096 && v <= 4095:
		u := uint64(v) & (1<<13 - 1)
		w.body = append(w.body, 0xC0|byte(u>>8), byte(u))
	case v >= -32768 && v <= 32767:
		w.body = binary.LittleEndian.AppendUint16(append(w.body, 0xF1), uint16(v))
	case v >= -8388608 && v <= 8388607:
		u := uint32(v)
		w.body = append(w.body, 0xF2, byte(u), byte(u>>8), byte(u>>16))
	case v >= -2147483648 && v <= 2147483647:
		w.body = binary.LittleEndian.AppendUint32(append(w.body, 0xF3), uint32(v))
	default:
		w.body = binary.LittleEndian.AppendUint64(append(w.body, 0xF4), uint64(v))
	}
	w.backlen(len(w.body) - start)
}

// backlen appends lpEncodeBacklen(l) and counts the element.
func (w *listpackWriter) backlen(l int) {
	var b [5]byte
	n := store.ListpackBacklen(l)
	for i := n - 1; i >= 0; i-- {
		b[i] = byte(l & 127)
		if i != 0 { // every byte but the most significant has the high bit
			b[i] |= 128
		}
		l >>= 7
	}
	w.body = append(w.body, b[:n]...)
	w.n++
}

func (w *listpackWriter) bytes() []byte {
	total := 6 + len(w.body) + 1
	out := binary.LittleEndian.AppendUint32(make([]byte, 0, total), uint32(total))
	out = binary.LittleEndian.AppendUint16(out, uint16(min(w.n, 65535)))
	return append(append(out, w.body...), 0xFF)
}

// --- reading -------------------------------------------------------------

// stream reads a stream of type t into v.stream.
func (r *rdbReader) stream(t byte) *rdbValue {
	s := store.NewStream()
	nodes := r.count(2)
	last := store.StreamID{}
	for range nodes {
		key, lp := r.str(), r.str()
		if r.err != nil {
			return nil
		}
		if len(key) != 16 || !streamNodeEntries(s, streamIDOf(key), lp, &last) {
			r.fail()
			return nil
		}
	}
	length, _ := r.length()
	s.LastID = r.streamID()
	if t >= rdbTypeStreamListpacks2 {
		s.FirstID, s.MaxDeletedID = r.streamID(), r.streamID()
		added, _ := r.length()
		s.EntriesAdded = int64(added)
	} else {
		s.MaxDeletedID, s.EntriesAdded = store.StreamID{}, int64(length)
		if e, ok := s.First(); ok {
			s.FirstID = e.ID
		}
	}
	if r.err != nil || length != uint64(s.Length()) || (s.Length() > 0 && s.LastID.Less(last)) {
		r.fail()
		return nil
	}
	groups := r.count(4)
	for range groups {
		if !r.streamGroup(s, t) {
			r.fail()
			return nil
		}
	}
	return &rdbValue{typ: store.TypeStream, stream: s}
}

func streamIDOf(raw []byte) store.StreamID {
	return store.StreamID{Ms: binary.BigEndian.Uint64(raw[:8]), Seq: binary.BigEndian.Uint64(raw[8:])}
}

// streamID reads an ID as two lengths.
func (r *rdbReader) streamID() store.StreamID {
	ms, _ := r.length()
	seq, _ := r.length()
	return store.StreamID{Ms: ms, Seq: seq}
}

// streamNodeEntries adds the live entries of one listpack node to s; the
// IDs must grow from last on. false if the listpack is malformed.
func streamNodeEntries(s *store.Stream, master store.StreamID, lp []byte, last *store.StreamID) bool {
	el, ok := listpackEntries(lp)
	if !ok || len(el) < 4 {
		return false
	}
	nf, ok := lpInt(el, 2)
	if !ok || nf < 0 || int(nf)+4 > len(el) {
		return false
	}
	fields := el[3 : 3+nf]
	if z, ok := lpInt(el, int(3+nf)); !ok || z != 0 {
		return false
	}
	for i := int(4 + nf); i < len(el); {
		next, ok := streamNodeEntry(s, master, el, fields, i, last)
		if !ok {
			return false
		}
		i = next
	}
	return true
}

// lpInt is listpack element i as an integer; false past the end or for a
// string that is not one.
func lpInt(el [][]byte, i int) (int64, bool) {
	if i >= len(el) {
		return 0, false
	}
	v, err := strconv.ParseInt(string(el[i]), 10, 64)
	return v, err == nil
}

// streamNodeEntry reads the entry at el[i] and returns where the next one
// starts.
func streamNodeEntry(s *store.Stream, master store.StreamID, el, fields [][]byte, i int, last *store.StreamID) (int, bool) {
	flags, ok1 := lpInt(el, i)
	dms, ok2 := lpInt(el, i+1)
	dseq, ok3 := lpInt(el, i+2)
	if !ok1 || !ok2 || !ok3 {
		return 0, false
	}
	id := store.StreamID{Ms: master.Ms + uint64(dms), Seq: master.Seq + uint64(dseq)}
	i += 3
	var fv [][]byte
	if flags&streamItemSameFields != 0 {
		if i+len(fields) > len(el) {
			return 0, false
		}
		for k, f := range fields {
			fv = append(fv, f, el[i+k])
		}
		i += len(fields)
	} else {
		n, ok := lpInt(el, i)
		if !ok || n < 0 || i+1+int(2*n) > len(el) {
			return 0, false
		}
		fv = slices.Clone(el[i+1 : i+1+int(2*n)])
		i += 1 + int(2*n)
	}
	if _, ok := lpInt(el, i); !ok { // lp-count
		return 0, false
	}
	if flags&streamItemDeleted == 0 {
		if s.Length() > 0 && !last.Less(id) {
			return 0, false
		}
		s.Add(id, fv)
		*last = id
	}
	return i + 1, true
}

// streamGroup reads one consumer group into s.
func (r *rdbReader) streamGroup(s *store.Stream, t byte) bool {
	name := r.str()
	lastID := r.streamID()
	entriesRead := int64(-1)
	if t >= rdbTypeStreamListpacks2 {
		n, _ := r.length()
		entriesRead = int64(n)
	} else if r.err == nil {
		entriesRead = estimateDistance(s, lastID)
	}
	if r.err != nil || !s.CreateGroup(name, lastID, entriesRead) {
		return false
	}
	g := s.MutGroup(name)
	pel := map[store.StreamID]store.PendingEntry{}
	for range r.count(17) {
		raw := r.next(16)
		tm := r.next(8)
		cnt, _ := r.length()
		if r.err != nil {
			return false
		}
		id := streamIDOf(raw)
		if _, dup := pel[id]; dup {
			return false
		}
		pel[id] = store.PendingEntry{ID: id, DeliveryTime: int64(binary.LittleEndian.Uint64(tm)), DeliveryCount: int64(cnt)}
	}
	for range r.count(10) {
		if !r.streamConsumer(g, t, pel) {
			return false
		}
	}
	return r.err == nil && len(pel) == 0 // every pending entry has its consumer
}

// streamConsumer reads one consumer and gives it its pending entries,
// taken out of pel.
func (r *rdbReader) streamConsumer(g *store.StreamGroup, t byte, pel map[store.StreamID]store.PendingEntry) bool {
	name := r.str()
	seen := r.next(8)
	active := seen
	if t >= rdbTypeStreamListpacks3 {
		active = r.next(8)
	}
	if r.err != nil {
		return false
	}
	c, fresh := g.CreateConsumer(name, int64(binary.LittleEndian.Uint64(seen)))
	if !fresh {
		return false
	}
	c.ActiveTime = int64(binary.LittleEndian.Uint64(active))
	for range r.count(16) {
		raw := r.next(16)
		if r.err != nil {
			return false
		}
		p, ok := pel[streamIDOf(raw)]
		if !ok {
			return false
		}
		delete(pel, p.ID)
		p.Consumer = string(name)
		g.SetPending(p)
	}
	return true
}

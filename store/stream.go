package store

import (
	"math"
	"strconv"

	"github.com/tidwall/btree"
)

// ---------------------------------------------------------------------------
// Streams (Redis's stream type): entries ordered by ID in a copy-on-write
// B-tree, consumer groups with their pending entries lists (PELs) and
// consumers, all in copy-on-write B-trees too, so Clone is O(1) and a
// snapshot View keeps its point in time while the live copy changes.
//
// Redis keeps entries in listpacks of at most stream-node-max-entries (100)
// entries and stream-node-max-bytes (4096) bytes hanging off a radix tree;
// approximate trimming (MAXLEN ~ / MINID ~) removes whole listpacks only,
// and XINFO STREAM reports their number. The Stream models those nodes —
// which entries share a listpack and how many bytes it takes with Redis's
// listpack encoding — so that "~" trims exactly what Redis would.

// streamListpackMax is Redis's STREAM_LISTPACK_MAX_SIZE, the node size
// used when stream-node-max-bytes is 0 or larger.
const streamListpackMax = 1 << 30

// StreamID is an entry ID: milliseconds and sequence number.
type StreamID struct{ Ms, Seq uint64 }

// MaxStreamID is the greatest ID ("+").
var MaxStreamID = StreamID{math.MaxUint64, math.MaxUint64}

// Cmp returns -1, 0 or 1 as a is less than, equal to or greater than b.
func (a StreamID) Cmp(b StreamID) int {
	switch {
	case a.Ms < b.Ms:
		return -1
	case a.Ms > b.Ms:
		return 1
	case a.Seq < b.Seq:
		return -1
	case a.Seq > b.Seq:
		return 1
	}
	return 0
}

// Less reports whether a < b.
func (a StreamID) Less(b StreamID) bool { return a.Cmp(b) < 0 }

// IsZero reports whether the ID is 0-0.
func (a StreamID) IsZero() bool { return a.Ms == 0 && a.Seq == 0 }

// String renders the ID as "ms-seq".
func (a StreamID) String() string { return string(a.Append(nil)) }

// Append appends the "ms-seq" form of the ID to b.
func (a StreamID) Append(b []byte) []byte {
	b = strconv.AppendUint(b, a.Ms, 10)
	b = append(b, '-')
	return strconv.AppendUint(b, a.Seq, 10)
}

// Incr returns the next ID; false if a is the greatest ID.
func (a StreamID) Incr() (StreamID, bool) {
	switch {
	case a.Seq < math.MaxUint64:
		return StreamID{a.Ms, a.Seq + 1}, true
	case a.Ms < math.MaxUint64:
		return StreamID{a.Ms + 1, 0}, true
	}
	return StreamID{}, false
}

// Decr returns the previous ID; false if a is 0-0.
func (a StreamID) Decr() (StreamID, bool) {
	switch {
	case a.Seq > 0:
		return StreamID{a.Ms, a.Seq - 1}, true
	case a.Ms > 0:
		return StreamID{a.Ms - 1, math.MaxUint64}, true
	}
	return StreamID{}, false
}

// StreamEntry is one entry: its ID and its fields and values, alternating.
// Stored entries are never modified.
type StreamEntry struct {
	ID     StreamID
	Fields [][]byte
}

func entryLessByID(a, b StreamEntry) bool { return a.ID.Less(b.ID) }

// streamNode models one of Redis's listpacks: the entries with IDs in
// [first, last] that were appended to it, how many are live and how many
// are marked deleted, and its size in bytes.
type streamNode struct {
	first, last   StreamID
	live, deleted int64
	fixed         int      // listpack bytes except the live and deleted counters
	master        [][]byte // the master entry's fields (of the first entry)
}

func (n *streamNode) bytes() int { return n.fixed + lpIntSize(n.live) + lpIntSize(n.deleted) }

func nodeLess(a, b streamNode) bool { return a.first.Less(b.first) }

// owner marks which Stream may change a group or consumer in place: the
// ones it shares with a clone carry another owner and are copied first.
type owner struct{ _ int }

// PendingEntry is an entry of a group's PEL: delivered to Consumer and not
// yet acknowledged.
type PendingEntry struct {
	ID            StreamID
	Consumer      string
	DeliveryTime  int64 // unix ms
	DeliveryCount int64
}

func pendingLess(a, b PendingEntry) bool { return a.ID.Less(b.ID) }

func idLess(a, b StreamID) bool { return a.Less(b) }

// StreamConsumer is a consumer of a group.
type StreamConsumer struct {
	Name       string
	SeenTime   int64 // unix ms of its last attempted interaction
	ActiveTime int64 // unix ms of its last successful interaction; -1 = never
	pel        *btree.BTreeG[StreamID]
	own        *owner
}

func consumerLess(a, b *StreamConsumer) bool { return a.Name < b.Name }

// PendingLen is the number of entries delivered to the consumer and not
// acknowledged.
func (c *StreamConsumer) PendingLen() int { return c.pel.Len() }

// Pending visits the consumer's pending IDs from start on, in order, while
// fn returns true.
func (c *StreamConsumer) Pending(start StreamID, fn func(id StreamID) bool) {
	c.pel.Ascend(start, fn)
}

// StreamGroup is a consumer group.
type StreamGroup struct {
	Name        string
	LastID      StreamID // last delivered ID
	EntriesRead int64    // logical read counter; -1 = unknown
	pel         *btree.BTreeG[PendingEntry]
	consumers   *btree.BTreeG[*StreamConsumer]
	own         *owner
}

func groupLess(a, b *StreamGroup) bool { return a.Name < b.Name }

// Stream is the value of a stream key.
type Stream struct {
	entries      *btree.BTreeG[StreamEntry]
	nodes        *btree.BTreeG[streamNode]
	groups       *btree.BTreeG[*StreamGroup]
	LastID       StreamID // last generated ID
	FirstID      StreamID // recorded first entry ID (0-0 when empty)
	MaxDeletedID StreamID // greatest ID removed by XDEL
	EntriesAdded int64    // entries ever added
	own          *owner
	lim          *Limits // the store's encoding limits (nil: the defaults)
}

// NewStream returns an empty stream.
func NewStream() *Stream {
	return &Stream{
		entries: btree.NewBTreeGOptions(entryLessByID, treeOptions),
		nodes:   btree.NewBTreeGOptions(nodeLess, treeOptions),
		groups:  btree.NewBTreeGOptions(groupLess, treeOptions),
		own:     &owner{},
	}
}

// Len is the number of entries plus one: a stream exists until it is
// deleted even with no entries (XDEL, XGROUP CREATE … MKSTREAM), so as a
// Collection it is never empty. XLEN is Length.
func (s *Stream) Len() int { return s.entries.Len() + 1 }

// Length is the number of entries (XLEN).
func (s *Stream) Length() int { return s.entries.Len() }

// Encoding is what OBJECT ENCODING reports.
func (s *Stream) Encoding() string { return "stream" }

// Clone returns an O(1) copy-on-write copy; groups and consumers shared by
// both are copied by the first one to change them.
func (s *Stream) Clone() Collection {
	c := *s
	c.entries = s.entries.Copy()
	c.nodes = s.nodes.Copy()
	c.groups = s.groups.Copy()
	s.own, c.own = &owner{}, &owner{}
	return &c
}

// Nodes is the number of modelled listpacks (XINFO STREAM radix-tree-keys).
func (s *Stream) Nodes() int { return s.nodes.Len() }

// Get returns the entry with ID id.
func (s *Stream) Get(id StreamID) (StreamEntry, bool) {
	return s.entries.Get(StreamEntry{ID: id})
}

// First returns the entry with the smallest ID.
func (s *Stream) First() (StreamEntry, bool) { return s.entries.Min() }

// Last returns the entry with the greatest ID (streamLastValidID).
func (s *Stream) Last() (StreamEntry, bool) { return s.entries.Max() }

// Range visits the entries with start <= ID <= end, ascending (or
// descending if rev), while fn returns true.
func (s *Stream) Range(start, end StreamID, rev bool, fn func(e StreamEntry) bool) {
	if end.Less(start) {
		return
	}
	if rev {
		s.entries.Descend(StreamEntry{ID: end}, func(e StreamEntry) bool {
			return !e.ID.Less(start) && fn(e)
		})
		return
	}
	s.entries.Ascend(StreamEntry{ID: start}, func(e StreamEntry) bool {
		return !end.Less(e.ID) && fn(e)
	})
}

// NextID is the ID an entry added at time now (unix ms) with "*" gets, as
// Redis's streamNextID; false when the stream has used every ID.
func (s *Stream) NextID(now int64) (StreamID, bool) {
	if now > 0 && uint64(now) > s.LastID.Ms {
		return StreamID{Ms: uint64(now)}, true
	}
	return s.LastID.Incr()
}

// nodeFull is Redis's streamAppendItem check for a new node: the last
// node would pass stream-node-max-bytes with total more bytes, or holds
// stream-node-max-entries entries (live and deleted).
func (s *Stream) nodeFull(n streamNode, total int) bool {
	l := limitsOr(s.lim)
	maxBytes := l.StreamNodeBytes
	if maxBytes <= 0 || maxBytes > streamListpackMax {
		maxBytes = streamListpackMax
	}
	if int64(n.bytes()+total) >= maxBytes {
		return true
	}
	return l.StreamNodeEntries > 0 && int64(n.live+n.deleted) >= l.StreamNodeEntries
}

func (s *Stream) setLimits(lim *Limits) { s.lim = lim }

// NodeEntriesLimit is stream-node-max-entries as the stream follows it.
func (s *Stream) NodeEntriesLimit() int64 { return limitsOr(s.lim).StreamNodeEntries }

// Add appends an entry with ID id (which must be greater than LastID) and
// the given fields and values (copied).
func (s *Stream) Add(id StreamID, fv [][]byte) {
	owned := make([][]byte, len(fv))
	total := 0
	for i, b := range fv {
		owned[i] = ownBytes(b)
		total += len(b)
	}
	numFields := int64(len(fv) / 2)
	n, ok := s.nodes.Max()
	if ok && s.nodeFull(n, total) {
		ok = false
	}
	same := false
	if !ok {
		n = streamNode{first: id}
		n.master = make([][]byte, numFields)
		n.fixed = lpHeaderSize + lpIntSize(numFields) + lpIntSize(0)
		for i := range n.master {
			n.master[i] = owned[2*i]
			n.fixed += lpStrSize(owned[2*i])
		}
		same = true
	} else if int64(len(n.master)) == numFields {
		same = true
		for i, f := range n.master {
			if string(f) != string(owned[2*i]) {
				same = false
				break
			}
		}
	}
	// flags, ms-diff, seq-diff, [num-fields, fields], values, lp-count
	flags := int64(0)
	lpCount := numFields + 3
	if same {
		flags = 2
	} else {
		lpCount += numFields + 1
	}
	sz := lpIntSize(flags) + lpIntSize(int64(id.Ms-n.first.Ms)) + lpIntSize(int64(id.Seq-n.first.Seq))
	if !same {
		sz += lpIntSize(numFields)
	}
	for i, b := range owned {
		if i%2 == 0 && same {
			continue
		}
		sz += lpStrSize(b)
	}
	sz += lpIntSize(lpCount)
	n.fixed += sz
	n.live++
	n.last = id
	s.nodes.Set(n)
	s.entries.Set(StreamEntry{ID: id, Fields: owned})
	s.LastID = id
	s.EntriesAdded++
	if s.entries.Len() == 1 {
		s.FirstID = id
	}
}

// nodeOf returns the node holding id.
func (s *Stream) nodeOf(id StreamID) (streamNode, bool) {
	var out streamNode
	found := false
	s.nodes.Descend(streamNode{first: id}, func(n streamNode) bool {
		out, found = n, true
		return false
	})
	return out, found
}

// remove deletes one live entry, marking it deleted in its node (or
// dropping the node with its last live entry, as Redis does).
func (s *Stream) remove(id StreamID) bool {
	if _, ok := s.entries.Delete(StreamEntry{ID: id}); !ok {
		return false
	}
	if n, ok := s.nodeOf(id); ok {
		n.live--
		if n.live <= 0 {
			s.nodes.Delete(n)
		} else {
			n.deleted++
			s.nodes.Set(n)
		}
	}
	return true
}

func (s *Stream) fixFirst() {
	if e, ok := s.entries.Min(); ok {
		s.FirstID = e.ID
	} else {
		s.FirstID = StreamID{}
	}
}

// Delete removes the entries with the given IDs (XDEL) and returns how many
// existed; it keeps FirstID and MaxDeletedID as Redis does.
func (s *Stream) Delete(ids []StreamID) int {
	deleted := 0
	for _, id := range ids {
		if s.remove(id) {
			deleted++
			if s.MaxDeletedID.Less(id) {
				s.MaxDeletedID = id
			}
		}
	}
	if deleted > 0 {
		s.fixFirst()
	}
	return deleted
}

// TrimArgs are XADD's and XTRIM's trimming options.
type TrimArgs struct {
	MinID  bool     // MINID strategy (else MAXLEN)
	MaxLen int64    // MAXLEN
	ID     StreamID // MINID
	Approx bool     // "~": remove whole nodes only
	Limit  int64    // at most this many entries; 0 = no limit
}

// Trim removes the oldest entries as Redis's streamTrim does and returns
// how many it removed.
func (s *Stream) Trim(a TrimArgs) int64 {
	var deleted int64
	for {
		length := int64(s.entries.Len())
		if !a.MinID && length <= a.MaxLen {
			break
		}
		n, ok := s.nodes.Min()
		if !ok {
			break
		}
		if a.Limit > 0 && deleted+n.live > a.Limit {
			break
		}
		var whole bool
		if a.MinID {
			whole = n.last.Less(a.ID)
		} else {
			whole = length-n.live >= a.MaxLen
		}
		if whole {
			var ids []StreamID
			s.Range(n.first, n.last, false, func(e StreamEntry) bool {
				ids = append(ids, e.ID)
				return true
			})
			for _, id := range ids {
				s.entries.Delete(StreamEntry{ID: id})
			}
			s.nodes.Delete(n)
			deleted += int64(len(ids))
			continue
		}
		if a.Approx {
			break
		}
		var ids []StreamID
		s.Range(n.first, n.last, false, func(e StreamEntry) bool {
			if a.MinID {
				if !e.ID.Less(a.ID) {
					return false
				}
			} else if length-int64(len(ids)) <= a.MaxLen {
				return false
			}
			ids = append(ids, e.ID)
			return true
		})
		for _, id := range ids {
			s.entries.Delete(StreamEntry{ID: id})
		}
		n.live -= int64(len(ids))
		n.deleted += int64(len(ids))
		s.nodes.Set(n)
		deleted += int64(len(ids))
		break
	}
	if s.entries.Len() == 0 {
		s.FirstID = StreamID{}
	} else if deleted > 0 {
		s.fixFirst()
	}
	return deleted
}

// ---------------------------------------------------------------------------
// Consumer groups.

// Group returns the group named name (nil if none); it must not be changed:
// use MutGroup.
func (s *Stream) Group(name []byte) *StreamGroup {
	g, _ := s.groups.Get(&StreamGroup{Name: string(name)})
	return g
}

// MutGroup returns the group named name for changing in place (copied
// first if shared with a clone), or nil.
func (s *Stream) MutGroup(name []byte) *StreamGroup {
	g := s.Group(name)
	if g == nil || g.own == s.own {
		return g
	}
	c := *g
	c.pel = g.pel.Copy()
	c.consumers = g.consumers.Copy()
	c.own = s.own
	s.groups.Set(&c)
	return &c
}

// NumGroups is the number of consumer groups.
func (s *Stream) NumGroups() int { return s.groups.Len() }

// Groups visits the groups in name order while fn returns true.
func (s *Stream) Groups(fn func(g *StreamGroup) bool) { s.groups.Scan(fn) }

// CreateGroup adds a group; false if one with that name exists.
func (s *Stream) CreateGroup(name []byte, last StreamID, entriesRead int64) bool {
	if s.Group(name) != nil {
		return false
	}
	s.groups.Set(&StreamGroup{
		Name: string(name), LastID: last, EntriesRead: entriesRead,
		pel:       btree.NewBTreeGOptions(pendingLess, treeOptions),
		consumers: btree.NewBTreeGOptions(consumerLess, treeOptions),
		own:       s.own,
	})
	return true
}

// DestroyGroup removes a group; false if there was none.
func (s *Stream) DestroyGroup(name []byte) bool {
	_, ok := s.groups.Delete(&StreamGroup{Name: string(name)})
	return ok
}

// PendingLen is the size of the group's PEL.
func (g *StreamGroup) PendingLen() int { return g.pel.Len() }

// PendingGet returns the PEL entry of id.
func (g *StreamGroup) PendingGet(id StreamID) (PendingEntry, bool) {
	return g.pel.Get(PendingEntry{ID: id})
}

// Pending visits the group's PEL from start on, in ID order, while fn
// returns true.
func (g *StreamGroup) Pending(start StreamID, fn func(p PendingEntry) bool) {
	g.pel.Ascend(PendingEntry{ID: start}, fn)
}

// PendingBounds returns the smallest and greatest pending IDs.
func (g *StreamGroup) PendingBounds() (lo, hi StreamID, ok bool) {
	a, ok1 := g.pel.Min()
	b, _ := g.pel.Max()
	return a.ID, b.ID, ok1
}

// NumConsumers is the number of consumers.
func (g *StreamGroup) NumConsumers() int { return g.consumers.Len() }

// Consumers visits the consumers in name order while fn returns true.
func (g *StreamGroup) Consumers(fn func(c *StreamConsumer) bool) { g.consumers.Scan(fn) }

// Consumer returns the consumer named name, nil if none; it must not be
// changed: use MutConsumer.
func (g *StreamGroup) Consumer(name []byte) *StreamConsumer {
	c, _ := g.consumers.Get(&StreamConsumer{Name: string(name)})
	return c
}

// MutConsumer returns the consumer for changing in place (the group must
// come from MutGroup), or nil.
func (g *StreamGroup) MutConsumer(name []byte) *StreamConsumer {
	c := g.Consumer(name)
	if c == nil || c.own == g.own {
		return c
	}
	cc := *c
	cc.pel = c.pel.Copy()
	cc.own = g.own
	g.consumers.Set(&cc)
	return &cc
}

// CreateConsumer adds a consumer seen at now; false if it exists.
func (g *StreamGroup) CreateConsumer(name []byte, now int64) (*StreamConsumer, bool) {
	if c := g.MutConsumer(name); c != nil {
		return c, false
	}
	c := &StreamConsumer{Name: string(name), SeenTime: now, ActiveTime: -1,
		pel: btree.NewBTreeGOptions(idLess, treeOptions), own: g.own}
	g.consumers.Set(c)
	return c, true
}

// DeleteConsumer removes a consumer and its pending entries from the
// group's PEL; it returns how many were pending (-1 if no such consumer).
func (g *StreamGroup) DeleteConsumer(name []byte) int {
	c := g.Consumer(name)
	if c == nil {
		return -1
	}
	n := c.pel.Len()
	c.pel.Scan(func(id StreamID) bool {
		g.pel.Delete(PendingEntry{ID: id})
		return true
	})
	g.consumers.Delete(c)
	return n
}

// SetPending stores p in the group's PEL, moving the ID from its previous
// consumer's PEL to p.Consumer's (which must exist).
func (g *StreamGroup) SetPending(p PendingEntry) {
	if old, ok := g.pel.Get(p); ok && old.Consumer != p.Consumer {
		if oc := g.MutConsumer([]byte(old.Consumer)); oc != nil {
			oc.pel.Delete(p.ID)
		}
	}
	g.pel.Set(p)
	if c := g.MutConsumer([]byte(p.Consumer)); c != nil {
		c.pel.Set(p.ID)
	}
}

// Ack removes id from the PELs; false if it was not pending.
func (g *StreamGroup) Ack(id StreamID) bool {
	p, ok := g.pel.Delete(PendingEntry{ID: id})
	if !ok {
		return false
	}
	if c := g.MutConsumer([]byte(p.Consumer)); c != nil {
		c.pel.Delete(id)
	}
	return true
}

// ---------------------------------------------------------------------------
// Listpack sizes (Redis's listpack.c), for the node model.

const lpHeaderSize = 6 + 1 // total bytes and count; end byte

// ListpackBacklen is the size of the back-length field Redis's listpack
// format gives an element whose encoding takes l bytes.
func ListpackBacklen(l int) int {
	switch {
	case l <= 127:
		return 1
	case l < 16383:
		return 2
	case l < 2097151:
		return 3
	case l < 268435455:
		return 4
	}
	return 5
}

// lpIntSize is the size of an integer element.
func lpIntSize(v int64) int {
	var enc int
	switch {
	case v >= 0 && v <= 127:
		enc = 1
	case v >= -4096 && v <= 4095:
		enc = 2
	case v >= math.MinInt16 && v <= math.MaxInt16:
		enc = 3
	case v >= -(1<<23) && v <= 1<<23-1:
		enc = 4
	case v >= math.MinInt32 && v <= math.MaxInt32:
		enc = 5
	default:
		enc = 9
	}
	return enc + ListpackBacklen(enc)
}

// lpStrSize is the size of a string element (stored as an integer when it
// is one in canonical form, as lpAppend does).
func lpStrSize(b []byte) int {
	if v, ok := lpStringToInt64(b); ok {
		return lpIntSize(v)
	}
	var enc int
	switch l := len(b); {
	case l < 64:
		enc = 1 + l
	case l < 4096:
		enc = 2 + l
	default:
		enc = 5 + l
	}
	return enc + ListpackBacklen(enc)
}

// lpStringToInt64 is listpack's lpStringToInt64: string2ll's syntax
// ("0", or an optional '-' then a digit 1-9 and digits) within int64.
func lpStringToInt64(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) >= 21 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	p := b
	if neg {
		p = b[1:]
	}
	if len(p) == 0 || p[0] < '1' || p[0] > '9' {
		return 0, false
	}
	var u uint64
	for _, c := range p {
		if c < '0' || c > '9' {
			return 0, false
		}
		if u > (math.MaxUint64-9)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

// RaxNodes is the number of nodes of Redis's radix tree holding the
// listpacks (XINFO STREAM radix-tree-nodes), for a tree in canonical
// compressed form: the root, every key, every branching prefix and every
// child of a branching prefix.
func (s *Stream) RaxNodes() int {
	var keys [][16]byte
	s.nodes.Scan(func(n streamNode) bool {
		var k [16]byte
		for i := 0; i < 8; i++ {
			k[i] = byte(n.first.Ms >> (56 - 8*i))
			k[8+i] = byte(n.first.Seq >> (56 - 8*i))
		}
		keys = append(keys, k)
		return true
	})
	set := map[string]struct{}{"": {}}
	for i, k := range keys {
		set[string(k[:])] = struct{}{}
		if i == 0 {
			continue
		}
		prev := keys[i-1]
		l := 0
		for l < 16 && prev[l] == k[l] {
			l++
		}
		set[string(k[:l])] = struct{}{}
		set[string(k[:l+1])] = struct{}{}
		set[string(prev[:l+1])] = struct{}{}
	}
	return len(set)
}

package fsm

import (
	"crypto/sha1"
	"encoding/binary"
	"strconv"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// Redis 7.2's DEBUG DIGEST and DIGEST-VALUE (debug.c): a key's digest
// mixes its name, its type and its value (ordered parts mixed in order,
// unordered ones xored), plus a mark when it has a deadline; a dataset's
// is the xor of its keys' digests, mixed first with the database number.
// Same data, same digest, in Redis and in slotraft, whatever the order of
// insertion or the encoding, so replicas can be compared.

// Digest is a SHA1-sized digest.
type Digest [20]byte

// xor folds SHA1(p) into d (xorDigest).
func (d *Digest) xor(p []byte) {
	h := sha1.Sum(p)
	for i := range d {
		d[i] ^= h[i]
	}
}

// mix is mixDigest: d = SHA1(d xor SHA1(p)), so that order matters.
func (d *Digest) mix(p []byte) {
	d.xor(p)
	*d = sha1.Sum(d[:])
}

// Hex is the digest in lowercase hex, as DEBUG prints it.
func (d Digest) Hex() string {
	const hexdigits = "0123456789abcdef"
	b := make([]byte, 40)
	for i, c := range d {
		b[2*i], b[2*i+1] = hexdigits[c>>4], hexdigits[c&15]
	}
	return string(b)
}

// Redis's object type numbers (OBJ_STRING…), which the digest mixes in.
var redisTypeCode = map[store.Type]uint32{
	store.TypeString: 0, store.TypeList: 1, store.TypeSet: 2, store.TypeZSet: 3, store.TypeHash: 4, store.TypeStream: 6,
}

// ValueDigest is xorObjectDigest into a zero digest: DIGEST-VALUE's
// answer for a key holding o (expired or not, as Redis's).
func ValueDigest(o *store.Object) Digest {
	var d Digest
	objectDigest(&d, o)
	return d
}

// objectDigest is xorObjectDigest: mixes o's type and value into d.
func objectDigest(d *Digest, o *store.Object) {
	var aux [4]byte
	binary.BigEndian.PutUint32(aux[:], redisTypeCode[o.Type])
	d.mix(aux[:])
	switch o.Type {
	case store.TypeString:
		d.mix(o.Str)
	case store.TypeList:
		listWalk(o.Coll, 0, false, func(e []byte) bool { d.mix(e); return true })
	case store.TypeSet:
		o.Coll.(*store.Set).Ascend(func(m []byte) bool { d.xor(m); return true })
	case store.TypeZSet:
		o.Coll.(*store.ZSet).Ascend(0, func(m string, score float64) bool {
			var e Digest
			e.mix([]byte(m))
			e.mix(resp.FormatDtoa(score))
			d.xor(e[:])
			return true
		})
	case store.TypeHash:
		o.Coll.(*store.Hash).Ascend(func(f, v []byte) bool {
			var e Digest
			e.mix(f)
			e.mix(v)
			d.xor(e[:])
			return true
		})
	case store.TypeStream:
		o.Coll.(*store.Stream).Range(store.StreamID{}, store.MaxStreamID, false, func(e store.StreamEntry) bool {
			d.mix([]byte(strconv.FormatUint(e.ID.Ms, 10) + "." + strconv.FormatUint(e.ID.Seq, 10)))
			for _, f := range e.Fields {
				d.mix(f)
			}
			return true
		})
	}
	if o.ExpireAt != 0 {
		d.xor([]byte("!!expire!!"))
	}
}

// KeyDigest is one key's share of the dataset digest: its name mixed,
// then its value.
func KeyDigest(key []byte, o *store.Object) Digest {
	var d Digest
	d.mix(key)
	objectDigest(&d, o)
	return d
}

// DatasetDigest xors the SHA1 of the digest of every key of st (expired
// or not, as Redis's computeDatasetDigest walks its dictionary) into acc
// and returns how many keys it saw.
func DatasetDigest(st store.Reader, acc *Digest) int {
	n := 0
	st.Ascend(func(key []byte, o *store.Object) bool {
		kd := KeyDigest(key, o)
		acc.xor(kd[:]) // xorDigest: the SHA1 of the key's digest
		n++
		return true
	})
	return n
}

// FinishDigest is computeDatasetDigest's result for database 0 from
// DatasetDigest's accumulator: all zeros for no key, else the database
// number's mix xored in.
func FinishDigest(keys Digest, n int) Digest {
	if n == 0 {
		return Digest{}
	}
	var final Digest
	final.mix([]byte{0, 0, 0, 0})
	for i := range final {
		final[i] ^= keys[i]
	}
	return final
}

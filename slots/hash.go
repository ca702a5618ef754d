package slots

// Count is the number of hash slots, as in Redis Cluster.
const Count = 16384

// crcTable is the CRC16-XMODEM (CCITT polynomial 0x1021, initial value 0,
// no reflection) lookup table that Redis Cluster's crc16.c uses.
var crcTable = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()

// CRC16 is CRC16-XMODEM of b; CRC16("123456789") = 0x31C3.
func CRC16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^c]
	}
	return crc
}

// HashTag returns the part of key that decides its slot: the bytes between
// the first '{' and the first '}' after it when that part is not empty,
// otherwise the whole key ("foo{}{bar}" hashes whole, "foo{{bar}}zap"
// hashes "{bar").
func HashTag(key []byte) []byte {
	for i, c := range key {
		if c != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j == i+1 {
					return key
				}
				return key[i+1 : j]
			}
		}
		return key
	}
	return key
}

// Of is the hash slot of key (CLUSTER KEYSLOT): CRC16 of its hash tag
// modulo Count.
func Of(key []byte) uint16 {
	return CRC16(HashTag(key)) & (Count - 1)
}

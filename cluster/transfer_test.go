package cluster

import "testing"

func TestSettingPayload(t *testing.T) {
	tests := []struct {
		gid        uint32
		key, value string
	}{
		{1, "preferred-leader", "node2"},
		{7, "k", ""},
		{0xFFFFFFFF, "", "v"},
	}
	for _, tc := range tests {
		gid, key, value, err := decodeSetting(encodeSetting(tc.gid, tc.key, tc.value))
		if err != nil || gid != tc.gid || key != tc.key || value != tc.value {
			t.Errorf("round trip of %+v = %d %q %q, %v", tc, gid, key, value, err)
		}
	}
	for _, bad := range [][]byte{nil, {1, 0, 0, 0}, {2, 0, 0, 0, 1, 0}, {1, 0, 0, 0, 1, 9, 'a'}} {
		if _, _, _, err := decodeSetting(bad); err == nil {
			t.Errorf("decodeSetting(%x) accepted a bad payload", bad)
		}
	}
}

func FuzzDecodeSetting(f *testing.F) {
	f.Add(encodeSetting(1, "preferred-leader", "node2"))
	f.Add([]byte{1, 0, 0, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F})
	f.Fuzz(func(t *testing.T, in []byte) {
		gid, key, value, err := decodeSetting(in)
		if err != nil {
			return
		}
		if g2, k2, v2, err := decodeSetting(encodeSetting(gid, key, value)); err != nil || g2 != gid || k2 != key || v2 != value {
			t.Fatalf("re-decode of %d %q %q = %d %q %q, %v", gid, key, value, g2, k2, v2, err)
		}
	})
}

package nft

import (
	"slices"
	"testing"
)

func TestParseDropped(t *testing.T) {
	out := `{"nftables": [{"metainfo": {"version": "1.0.6"}}, {"chain": {"family": "inet", "table": "t", "name": "cut"}},
	 {"rule": {"expr": [{"match": {}}, {"counter": {"packets": 12, "bytes": 900}}, {"drop": null}]}},
	 {"rule": {"expr": [{"counter": {"packets": 30, "bytes": 1}}, {"drop": null}]}}]}`
	n, err := parseDropped([]byte(out))
	if err != nil || n != 42 {
		t.Errorf("parseDropped = %d, %v; want 42", n, err)
	}
	for _, bad := range []string{"", "{", `{"nftables": [{"rule": {"expr": [{"counter": {"packets": -1}}]}}]}`,
		`{"nftables": [{"rule": {"expr": [{"counter": 5}]}}]}`} {
		if _, err := parseDropped([]byte(bad)); err == nil {
			t.Errorf("parseDropped(%q) accepted", bad)
		}
	}
}

// FuzzParseDropped: any bytes give a count that is not negative, or an error.
func FuzzParseDropped(f *testing.F) {
	f.Add([]byte(`{"nftables": [{"rule": {"expr": [{"counter": {"packets": 12}}]}}]}`))
	f.Add([]byte(`{"nftables": [{"rule": {"expr": [{"counter": {"packets": 9223372036854775807}}, {"counter": {"packets": 1}}]}}]}`))
	f.Add([]byte(`{"nftables": []}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if n, err := parseDropped(b); err == nil && n < 0 {
			t.Fatalf("parseDropped(%q) = %d", b, n)
		}
	})
}

func TestDropRules(t *testing.T) {
	got := dropRules([][2]string{{"127.0.0.2", "127.0.0.4"}, {"127.0.0.2", "127.0.0.3"}})
	want := []string{
		"ip saddr 127.0.0.2 ip daddr { 127.0.0.3, 127.0.0.4 } counter drop",
		"ip saddr 127.0.0.3 ip daddr { 127.0.0.2 } counter drop",
		"ip saddr 127.0.0.4 ip daddr { 127.0.0.2 } counter drop",
	}
	if !slices.Equal(got, want) {
		t.Errorf("dropRules = %q\nwant %q", got, want)
	}
}

package server

import (
	"testing"
)

func TestTrackingSmoke(t *testing.T) {
	addr := singleNodeAddr(t)
	r, w := dialPS(t, addr), dialPS(t, addr)
	r.send("HELLO 3")
	r.next()
	r.do("CLIENT TRACKING on", "+OK\r\n")
	w.do("SET key1 1", "+OK\r\n")
	r.do("GET key1", bulk("1"))
	w.do("SET key1 2", "+OK\r\n")
	r.expect(">2\r\n$10\r\ninvalidate\r\n*1\r\n$4\r\nkey1\r\n")
}

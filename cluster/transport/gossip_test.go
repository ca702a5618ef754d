package transport

import (
	"bufio"
	"bytes"
	"io"
	"testing"
	"time"
)

func TestGossipPacketsAndStreams(t *testing.T) {
	f := NewFaults()
	a, b := rpcMux(t, "a", f, nil), rpcMux(t, "b", f, nil)
	ga, err := a.Gossip()
	if err != nil {
		t.Fatal(err)
	}
	gb, err := b.Gossip()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ga.Shutdown(); _ = gb.Shutdown() })
	if _, err := a.Stream(GossipStreamGroup); err == nil {
		t.Fatal("the gossip stream group can be registered as a Raft group")
	}

	for _, msg := range []string{"ping", "ack"} {
		if _, err := ga.WriteTo([]byte(msg), b.Addr().String()); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"ping", "ack"} { // in order over one connection
		select {
		case p := <-gb.PacketCh():
			if string(p.Buf) != want || p.From == nil {
				t.Fatalf("packet %q from %v, want %q", p.Buf, p.From, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("packet %q not delivered", want)
		}
	}

	c, err := ga.DialTimeout(b.Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("state")); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-gb.StreamCh():
		defer s.Close()
		got := make([]byte, 5)
		if _, err := io.ReadFull(s, got); err != nil || string(got) != "state" {
			t.Fatalf("stream read %q, %v", got, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stream not accepted")
	}

	// A cut link drops packets (best effort, as UDP) and refuses streams.
	f.Cut("a", "b")
	if _, err := ga.DialTimeout(b.Addr().String(), time.Second); err == nil {
		t.Fatal("gossip stream dialled over a cut link")
	}
	if _, err := ga.WriteTo([]byte("lost"), b.Addr().String()); err != nil {
		t.Fatalf("WriteTo over a cut link: %v, want a silent drop", err)
	}
	if _, err := ga.WriteTo(make([]byte, maxGossipPacket+1), b.Addr().String()); err == nil {
		t.Fatal("oversized packet accepted")
	}
}

func FuzzReadPacket(f *testing.F) {
	f.Add([]byte{0, 0, 0, 2, 'h', 'i'})
	f.Add([]byte{0xFF, 0xFF, 0xFF, 0xFF})
	f.Fuzz(func(t *testing.T, in []byte) {
		b, err := readPacket(bufio.NewReader(bytes.NewReader(in)))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := writePacket(bufio.NewWriter(&out), b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), in[:4+len(b)]) {
			t.Fatalf("re-encoded %x, read from %x", out.Bytes(), in)
		}
	})
}

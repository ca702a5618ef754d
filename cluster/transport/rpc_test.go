package transport

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func rpcMux(t *testing.T, id string, f *Faults, h RPCHandler) *Mux {
	t.Helper()
	m, err := New(Config{Listener: listen(t), LocalID: id, Faults: f, Handler: h, HeaderTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func TestCall(t *testing.T) {
	echo := func(_ context.Context, from string, svc Service, p []byte) ([]byte, error) {
		if svc == 9 {
			return nil, errors.New("nine is refused")
		}
		return fmt.Appendf(nil, "%s:%d:%s", from, svc, p), nil
	}
	a := rpcMux(t, "a", nil, nil)
	b := rpcMux(t, "b", nil, echo)
	ctx := context.Background()
	for i := range 3 { // the second and third calls reuse the pooled connection
		out, err := a.Call(ctx, b.Addr().String(), 3, []byte("hi"))
		if err != nil || string(out) != "a:3:hi" {
			t.Fatalf("call %d = %q, %v; want a:3:hi", i, out, err)
		}
	}
	_, err := a.Call(ctx, b.Addr().String(), 9, nil)
	var re *RemoteError
	if !errors.As(err, &re) || re.Msg != "nine is refused" {
		t.Fatalf("refused call: %v, want RemoteError", err)
	}
	if _, err := b.Call(ctx, a.Addr().String(), 1, nil); !errors.As(err, &re) {
		t.Fatalf("call to a node without handler: %v, want RemoteError", err)
	}
}

func TestCallHonoursContextAndFaults(t *testing.T) {
	release := make(chan struct{})
	slow := func(ctx context.Context, _ string, _ Service, _ []byte) ([]byte, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, nil
	}
	f := NewFaults()
	a := rpcMux(t, "a", f, nil)
	b := rpcMux(t, "b", f, slow)
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := a.Call(ctx, b.Addr().String(), 1, nil); !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err) {
		t.Fatalf("slow call: %v, want a deadline error", err)
	}
	f.Cut("a", "b")
	if _, err := a.Call(context.Background(), b.Addr().String(), 1, nil); !errors.Is(err, ErrLinkCut) {
		t.Fatalf("call over a cut link: %v, want ErrLinkCut", err)
	}
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

func TestReadFrameLimits(t *testing.T) {
	var big bytes.Buffer
	big.Write([]byte{1, 0xFF, 0xFF, 0xFF, 0xFF})
	if _, _, err := readFrame(bufio.NewReader(&big)); !errors.Is(err, errRPCTooLarge) {
		t.Fatalf("oversized frame: %v, want errRPCTooLarge", err)
	}
	short := bytes.NewReader([]byte{1, 0, 0, 0, 10, 'x'})
	if _, _, err := readFrame(bufio.NewReader(short)); err == nil {
		t.Fatal("truncated frame read without error")
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 2, 'h', 'i'})
	f.Add([]byte{0, 0, 0, 0, 0})
	f.Add([]byte{7, 0x20, 0, 0, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		kind, payload, err := readFrame(bufio.NewReader(bytes.NewReader(in)))
		if err != nil {
			return
		}
		var out bytes.Buffer
		w := bufio.NewWriter(&out)
		if err := writeFrame(w, kind, payload); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), in[:5+len(payload)]) {
			t.Fatalf("re-encoded frame differs: %x vs %x", out.Bytes(), in[:5+len(payload)])
		}
	})
}

// TestCallPoolChurn: more concurrent calls than the pool keeps, and a
// pooled connection gone stale, both close connections; neither may hang
// the Mux (Close untracks under the Mux's lock).
func TestCallPoolChurn(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 64)
	slowEcho := func(_ context.Context, _ string, _ Service, p []byte) ([]byte, error) {
		arrived <- struct{}{}
		<-release
		return p, nil
	}
	a := rpcMux(t, "a", nil, nil)
	b := rpcMux(t, "b", nil, slowEcho)
	addr := b.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const calls = 2*rpcPoolSize + 1
	errs := make(chan error, calls)
	for i := range calls {
		go func() {
			_, err := a.Call(ctx, addr, 1, []byte{byte(i)})
			errs <- err
		}()
	}
	for range calls { // every call holds its own connection until all arrived
		select {
		case <-arrived:
		case <-ctx.Done():
			t.Fatal("the concurrent calls never all arrived")
		}
	}
	close(release)
	for range calls {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent call: %v", err)
		}
	}
	a.mu.Lock()
	pooled := len(a.rpcPool[addr])
	for _, c := range a.rpcPool[addr] {
		c.used = time.Now().Add(-2 * rpcPoolIdle)
	}
	a.mu.Unlock()
	if pooled != rpcPoolSize {
		t.Fatalf("%d pooled connections after %d calls, want %d", pooled, calls, rpcPoolSize)
	}
	if out, err := a.Call(ctx, addr, 1, []byte("after idle")); err != nil || string(out) != "after idle" {
		t.Fatalf("call after the pool went stale: %q, %v", out, err)
	}
}

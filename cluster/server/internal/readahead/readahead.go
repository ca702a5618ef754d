// Package readahead is a client connection that its handler may have read
// ahead while it waits for something else than the client (a blocked
// command, CLIENT PAUSE, the proxy's pipeline): the client going away is
// noticed at once, and what it sent meanwhile is kept for the handler's
// request reader. The server's connections and the proxy's use it.
package readahead

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// MaxStash bounds the bytes read ahead before watching stops.
const MaxStash = 1 << 20

// Conn is a client connection that can be read ahead while its handler
// waits (a blocked command, a pause), to notice the client going away:
// what it reads is kept and returned to the handler's reader afterwards.
type Conn struct {
	net.Conn
	mu    sync.Mutex
	stash []byte
	err   error
	idle  time.Duration // > 0: each read from the socket must bring bytes within it (timeout); the connection's goroutine only
}

func (w *Conn) Read(p []byte) (int, error) {
	w.mu.Lock()
	if len(w.stash) > 0 {
		n := copy(p, w.stash)
		w.stash = w.stash[n:]
		w.mu.Unlock()
		return n, nil
	}
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return 0, err
	}
	w.mu.Unlock()
	if w.idle > 0 {
		_ = w.Conn.SetReadDeadline(time.Now().Add(w.idle))
	}
	return w.Conn.Read(p)
}

// ReadWithin is Read with a deadline of d for a read from the socket
// (a Lua debugging session's rounds), whatever the idle timeout is.
func (w *Conn) ReadWithin(p []byte, d time.Duration) (int, error) {
	w.mu.Lock()
	if len(w.stash) > 0 || w.err != nil {
		w.mu.Unlock()
		return w.Read(p)
	}
	w.mu.Unlock()
	_ = w.Conn.SetReadDeadline(time.Now().Add(d))
	n, err := w.Conn.Read(p)
	_ = w.Conn.SetReadDeadline(time.Time{})
	return n, err
}

// Watch reads ahead until stop is called; gone is closed if the client
// closes the connection (or it fails) meanwhile. Reading ahead stops, and
// with it the watch, once MaxStash bytes are kept.
func (w *Conn) Watch() (gone <-chan struct{}, stop func()) {
	goneC := make(chan struct{})
	exited := make(chan struct{})
	var stopping atomic.Bool
	go func() {
		defer close(exited)
		buf := make([]byte, 4096)
		for {
			n, err := w.Conn.Read(buf)
			w.mu.Lock()
			w.stash = append(w.stash, buf[:n]...)
			full := len(w.stash) >= MaxStash
			if err != nil {
				var ne net.Error
				if !(stopping.Load() && errors.As(err, &ne) && ne.Timeout()) {
					w.err = err
					close(goneC)
				}
			}
			w.mu.Unlock()
			if err != nil || full {
				return
			}
		}
	}()
	return goneC, func() {
		stopping.Store(true)
		_ = w.Conn.SetReadDeadline(time.Now())
		<-exited
		_ = w.Conn.SetReadDeadline(time.Time{})
	}
}

// SetIdle makes each read from the socket fail unless bytes come within
// d (0: no limit), for the timeout parameter; the handler's goroutine only.
func (w *Conn) SetIdle(d time.Duration) { w.idle = d }

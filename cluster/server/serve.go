package server

import (
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/slotraft/slotraft/cluster/server/internal/readahead"
	"github.com/slotraft/slotraft/resp"
)

// The connection loop: each client has a goroutine that reads its
// requests with resp.RequestReader (one parse that also enforces Redis's
// protocol limits), serves all the requests one read brought (a pipeline:
// consecutive writes of one group become one proposal, router.go), and
// writes all their replies with one write.

// Serve accepts clients on ln until Close, then returns nil.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed || s.serving != nil {
		s.mu.Unlock()
		ln.Close()
		return ErrClosed
	}
	s.ln = ln
	s.serving = make(chan struct{})
	s.reportPort(ln.Addr())
	done := s.serving
	s.mu.Unlock()
	defer close(done)
	if err := s.startTLS(); err != nil {
		return err
	}
	go s.sampleStats() // ends with s.ctx (Close)
	go s.startACL()    // the config file's requirepass, the aclfile (acl_config.go)
	return acceptLoop(ln, s.isClosed, s.log, func(nc net.Conn) {
		if c := s.accept(nc); c != nil {
			go s.serveConn(c)
		}
	})
}

// acceptLoop accepts connections on ln and hands each to serve until ln
// closes (closed reports a Close), then returns nil. Out of file
// descriptors and the like, it waits before the next Accept, as
// net/http does, rather than spin on the error.
func acceptLoop(ln net.Listener, closed func() bool, log *slog.Logger, serve func(net.Conn)) error {
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if closed() || errors.Is(err, net.ErrClosed) {
				return nil
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			log.Warn("accept", "err", err, "retry_in", backoff)
			time.Sleep(backoff) // a pause before the next Accept, not a wait for a condition
			continue
		}
		backoff = 0
		serve(nc)
	}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close stops accepting, closes every client connection, cancels in-flight
// requests and waits for the connection goroutines to end.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.debugs.endAll(false, endNodeClosing, true) // their scripts stop at once, not at their budget's end
	ln, serving, facade := s.ln, s.serving, s.sentinel
	for _, c := range s.clients {
		_ = c.conn.nc.Close()
	}
	s.mu.Unlock()
	if facade != nil {
		_ = facade.Close() // its subscribers' writers are the pub/sub's (pubsub.go)
	}
	s.cancel()
	s.migrateConns.closeAll()
	if ln != nil {
		_ = ln.Close()
		<-serving
	}
	s.tlsSrv.close()
	s.conns.Wait()
	s.ps.close()
	<-s.trk.done
	return nil
}

// accept registers a new client on nc, or closes nc if the server is
// closing or has maxclients clients already (with Redis's error, as Redis).
func (s *Server) accept(nc net.Conn) *client {
	s.setKeepAlive(nc)
	w := &readahead.Conn{Conn: nc}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = nc.Close()
		return nil
	}
	if s.protectedRefused(nc) {
		return nil
	}
	if int64(len(s.clients)) >= s.connCfg.maxClients.Load() {
		s.stats.rejected.Add(1)
		_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = nc.Write([]byte("-ERR max number of clients reached\r\n"))
		_ = nc.Close()
		return nil
	}
	c := newClient(s.nextID.Add(1), newClientConn(w, s.connCfg.limits(), &s.io))
	_, c.onTLS = nc.(*tls.Conn)
	c.watch = w
	s.initACL(c)
	s.clients[c.id] = c
	s.conns.Add(1)
	s.stats.connections.Add(1)
	return c
}

// serveConn is c's goroutine: requests in, replies out, until the client
// goes, breaks the protocol, or asks to be closed.
func (s *Server) serveConn(c *client) {
	defer s.closedConn(c)
	for {
		reqs, err := s.readRequests(c)
		if err != nil {
			c.io.Lock()
			c.conn.fail(err)
			c.io.Unlock()
			return
		}
		c.io.Lock() // invalidations wait for this pipeline's replies (tracking_cmd.go)
		keep := s.handle(c, reqs)
		if keep {
			// What CLIENT LIST of other connections shows (client_info.go)
			// is published before the replies go, so that a client that
			// read its reply is shown as it left the server; then only
			// the output buffer, once written.
			c.argvMem = 0
			c.publish()
			err = c.conn.flush()
			c.publishWritten()
		}
		s.releaseIO(c)
		if !keep || err != nil || c.acl.gone.Load() { // gone: its user was deleted (aclClose)
			return
		}
	}
}

// closedConn forgets c once its goroutine ends.
func (s *Server) closedConn(c *client) {
	_ = c.conn.close()
	s.mu.Lock()
	delete(s.clients, c.id)
	s.mu.Unlock()
	s.trk.disable(c)
	c.io.Lock() // no invalidation makes an output queue from now on
	c.gone = true
	c.io.Unlock()
	s.stopMonitor(c)
	s.forgetClient(c) // its subscriptions and output writer (pubsub.go)
	s.conns.Done()
}

// handle serves the requests one read brought; false when the connection
// is to be closed.
func (s *Server) handle(c *client, reqs []resp.Request) (keep bool) {
	// Commands recover from their own panics (onPanic); one anywhere else
	// (routing, queuing) leaves the pipeline's replies in doubt, so the
	// connection is closed, never the process.
	defer s.onPanic("(connection)", func(resp.Value) { keep = false })
	s.serve(c, reqs)
	if c.closing {
		_ = c.conn.flush()
		c.drainOutput() // a subscriber's queued replies go out first (pubsub_output.go)
		return false
	}
	return true
}

// clientConn is a client's socket with its request reader and its reply
// buffer, written once per pipeline.
type clientConn struct {
	nc  net.Conn
	rd  *resp.RequestReader
	out []byte
	io  *ioStats // the server's counters; nil in tests
}

func newClientConn(nc net.Conn, lim resp.Limits, st *ioStats) *clientConn {
	var r io.Reader = nc
	if st != nil {
		r = countingReader{nc, st}
	}
	return &clientConn{nc: nc, rd: resp.NewRequestReader(r, lim), io: st}
}

// write queues b (a rendered reply) for the next flush.
func (cc *clientConn) write(b []byte) {
	was := cap(cc.out)
	cc.out = append(cc.out, b...)
	if was > 0 && cap(cc.out) != was && cc.io != nil {
		cc.io.expands.Add(1)
	}
}

// takeOutput hands over the replies queued and not yet written (a
// subscriber's output queue takes them over, pubsub_output.go).
func (cc *clientConn) takeOutput() []byte {
	b := cc.out
	cc.out = nil
	return b
}

// flush writes the queued replies; a big buffer is let go afterwards.
func (cc *clientConn) flush() error {
	if len(cc.out) == 0 {
		return nil
	}
	_, err := cc.nc.Write(cc.out)
	if cc.io != nil {
		cc.io.writes.Add(1)
		cc.io.peakOut.note(len(cc.out))
	}
	if cap(cc.out) > 64*1024 {
		cc.out = nil
		if cc.io != nil {
			cc.io.shrinks.Add(1)
		}
	} else {
		cc.out = cc.out[:0]
	}
	return err
}

// fail ends the connection after a read error: a protocol violation gets
// Redis's error reply first (after the replies already queued).
func (cc *clientConn) fail(err error) {
	var pe *resp.ProtocolError
	if errors.As(err, &pe) {
		cc.out = append(cc.out, "-"+pe.Text+"\r\n"...)
	}
	if len(cc.out) > 0 {
		_ = cc.nc.SetWriteDeadline(time.Now().Add(time.Second))
		_ = cc.flush()
	}
}

func (cc *clientConn) close() error {
	err := cc.nc.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

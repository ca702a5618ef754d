package transport

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"syscall"
)

// The bus handshake: with a cluster secret, every bus connection starts
// with a mutual challenge-response before any service byte, then turns
// into TLS 1.3 (auth_tls.go):
//
//	dialler  -> acceptor: hello_d = "SRBA" | version | nonce_d (32) | pin_d (32)
//	acceptor -> dialler:  hello_a (same shape) | HMAC(k, "acceptor", transcript)
//	dialler  -> acceptor: HMAC(k, "dialer", transcript), then the TLS ClientHello
//
// transcript = label | version | nonce_d | nonce_a | pin_d | pin_a; k is
// derived from the secret with HKDF. Fresh nonces on both sides defeat
// replays, the role in each proof defeats reflection (a side's own proof
// sent back to it is not the other side's). A pin is the SHA-256 of the
// sender's TLS public key: TLS then accepts only the key whose pin was in
// the proven transcript, so a relay between two members, which can pass
// the handshake through unchanged, cannot read or change what follows.
// The dialler sends its proof even when the acceptor's was wrong, so that
// the node dialled logs the bad proof rather than a hang-up.

// MinSecretLen is the shortest cluster secret accepted: 256 bits.
const MinSecretLen = 32

// Secret is the cluster secret every bus connection proves. It never
// prints: %v, %s, %#v and slog show "[redacted]".
type Secret []byte

const redacted = "[redacted]"

func (Secret) String() string               { return redacted }
func (Secret) GoString() string             { return redacted }
func (Secret) LogValue() slog.Value         { return slog.StringValue(redacted) }
func (Secret) Format(f fmt.State, _ rune)   { _, _ = io.WriteString(f, redacted) }
func (Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// ErrShortSecret is returned for a cluster secret under MinSecretLen bytes.
var ErrShortSecret = fmt.Errorf("transport: cluster secret shorter than %d bytes", MinSecretLen)

// Why a bus handshake failed. Each is wrapped in the error a dial or a
// refused connection reports; compare with errors.Is.
var (
	ErrBadProof          = errors.New("bad proof of the cluster secret (a different secret?)")
	ErrPeerHasNoSecret   = errors.New("peer has no cluster secret")
	ErrNoLocalSecret     = errors.New("peer proves a cluster secret, this node has none")
	ErrNoLocalTLS        = errors.New("peer speaks bus TLS, this node has none")
	ErrNotHandshake      = errors.New("no bus handshake")
	ErrHandshakeVersion  = errors.New("unsupported bus handshake version")
	ErrHandshakeTimeout  = errors.New("bus handshake timed out")
	ErrHandshakeHangUp   = errors.New("peer closed the connection during the bus handshake (no secret, or a different one?)")
	ErrPinMismatch       = errors.New("TLS key is not the one proven in the bus handshake")
	ErrPeerRefusedTLS    = errors.New("peer refused this node's TLS certificate or handshake")
	errHandshakeInternal = errors.New("bus handshake")
)

var authMagic = [4]byte{'S', 'R', 'B', 'A'}

const (
	authVersion = 1
	nonceLen    = 32
	pinLen      = sha256.Size
	proofLen    = sha256.Size
	helloLen    = len(authMagic) + 1 + nonceLen + pinLen
	authLabel   = "slotraft bus handshake"
	roleDialer  = "dialer"
	roleAccept  = "acceptor"
)

// hello is one side's opening message.
type hello struct {
	nonce [nonceLen]byte
	pin   [pinLen]byte
}

func (h hello) encode() []byte {
	b := make([]byte, 0, helloLen)
	b = append(b, authMagic[:]...)
	b = append(b, authVersion)
	b = append(b, h.nonce[:]...)
	return append(b, h.pin[:]...)
}

// readHello reads one hello. It looks at the magic first, so a plain
// header (a peer without a secret) or garbage is refused without waiting
// for bytes that never come.
func readHello(r io.Reader) (hello, error) {
	var m [len(authMagic)]byte
	if _, err := io.ReadFull(r, m[:]); err != nil {
		return hello{}, err
	}
	switch m {
	case authMagic:
	case magic:
		return hello{}, ErrPeerHasNoSecret
	default:
		return hello{}, fmt.Errorf("%w: opened with %q", ErrNotHandshake, m[:])
	}
	var rest [helloLen - len(authMagic)]byte
	if _, err := io.ReadFull(r, rest[:]); err != nil {
		return hello{}, err
	}
	if rest[0] != authVersion {
		return hello{}, fmt.Errorf("%w %d (this node speaks %d)", ErrHandshakeVersion, rest[0], authVersion)
	}
	var h hello
	copy(h.nonce[:], rest[1:1+nonceLen])
	copy(h.pin[:], rest[1+nonceLen:])
	return h, nil
}

// authenticator runs a Mux's side of every bus connection's set-up: the
// proof of the cluster secret (if any), then TLS with this process's
// identity: a throwaway key pair, or the operator's certificate (BusTLS).
type authenticator struct {
	key    []byte // HMAC key derived from the secret; nil without one
	ident  tlsIdentity
	random io.Reader
}

// newAuthenticator is nil when there is neither a secret nor a PKI.
func newAuthenticator(secret Secret, pki *BusTLS, localID string) (*authenticator, error) {
	if secret == nil && pki == nil {
		return nil, nil
	}
	a := &authenticator{random: rand.Reader}
	if secret != nil {
		if len(secret) < MinSecretLen {
			return nil, ErrShortSecret
		}
		key, err := hkdf.Key(sha256.New, secret, nil, authLabel+" hmac key", sha256.Size)
		if err != nil {
			return nil, fmt.Errorf("transport: derive bus key: %w", err)
		}
		a.key = key
	}
	var err error
	if pki != nil {
		a.ident, err = pki.identity(localID)
	} else {
		a.ident, err = newTLSIdentity()
	}
	if err != nil {
		return nil, err
	}
	return a, nil
}

func (a *authenticator) newHello() (hello, error) {
	h := hello{pin: a.ident.pin}
	if _, err := io.ReadFull(a.random, h.nonce[:]); err != nil {
		return h, fmt.Errorf("%w: nonce: %w", errHandshakeInternal, err)
	}
	return h, nil
}

// proof is role's HMAC over the transcript of hellos d (dialler's) and acc.
func (a *authenticator) proof(role string, d, acc hello) []byte {
	mac := hmac.New(sha256.New, a.key)
	mac.Write([]byte(authLabel))
	mac.Write([]byte{authVersion})
	mac.Write([]byte(role))
	mac.Write(d.nonce[:])
	mac.Write(acc.nonce[:])
	mac.Write(d.pin[:])
	mac.Write(acc.pin[:])
	return mac.Sum(nil)
}

// dialSide sets up a dialled raw connection (deadline already set): the
// secret's proofs, then TLS. wantID, if not empty, is the node id the
// peer's certificate must name (with a PKI).
func (a *authenticator) dialSide(raw net.Conn, wantID string) (net.Conn, error) {
	chk := peerCheck{ca: a.ident.ca, id: wantID}
	if a.key != nil {
		pin, err := a.proveAsDialer(raw)
		if err != nil {
			return nil, err
		}
		chk.pin = &pin
	}
	return a.ident.client(raw, chk)
}

// acceptSide sets up an accepted raw connection (deadline already set):
// the secret's proofs, then TLS. The node id is checked against the
// certificate once the header names it (Mux.acceptHeader).
func (a *authenticator) acceptSide(raw net.Conn) (net.Conn, error) {
	chk := peerCheck{ca: a.ident.ca}
	if a.key != nil {
		pin, err := a.proveAsAcceptor(raw)
		if err != nil {
			return nil, err
		}
		chk.pin = &pin
	}
	return a.ident.server(raw, chk)
}

// proveAsDialer runs the dialler's half of the secret's handshake and
// returns the acceptor's pin.
func (a *authenticator) proveAsDialer(raw net.Conn) ([pinLen]byte, error) {
	mine, err := a.newHello()
	if err != nil {
		return [pinLen]byte{}, err
	}
	if _, err := raw.Write(mine.encode()); err != nil {
		return [pinLen]byte{}, handshakeErr(err)
	}
	theirs, err := readHello(raw)
	if err != nil {
		return [pinLen]byte{}, handshakeErr(err)
	}
	var got [proofLen]byte
	if _, err := io.ReadFull(raw, got[:]); err != nil {
		return [pinLen]byte{}, handshakeErr(err)
	}
	if _, err := raw.Write(a.proof(roleDialer, mine, theirs)); err != nil {
		return [pinLen]byte{}, handshakeErr(err)
	}
	if !hmac.Equal(got[:], a.proof(roleAccept, mine, theirs)) {
		return [pinLen]byte{}, ErrBadProof
	}
	return theirs.pin, nil
}

// proveAsAcceptor runs the acceptor's half of the secret's handshake and
// returns the dialler's pin.
func (a *authenticator) proveAsAcceptor(raw net.Conn) ([pinLen]byte, error) {
	theirs, err := readHello(raw)
	if err != nil {
		return [pinLen]byte{}, handshakeErr(err)
	}
	mine, err := a.newHello()
	if err != nil {
		return [pinLen]byte{}, err
	}
	if _, err := raw.Write(append(mine.encode(), a.proof(roleAccept, theirs, mine)...)); err != nil {
		return [pinLen]byte{}, handshakeErr(err)
	}
	var got [proofLen]byte
	if _, err := io.ReadFull(raw, got[:]); err != nil {
		return [pinLen]byte{}, handshakeErr(err)
	}
	if !hmac.Equal(got[:], a.proof(roleDialer, theirs, mine)) {
		return [pinLen]byte{}, ErrBadProof
	}
	return theirs.pin, nil
}

// handshakeErr names the I/O failures of a handshake: a timeout, or the
// peer hanging up (what a peer that refused this node's proof, or that has
// no secret, does).
func handshakeErr(err error) error {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%w: %w", ErrHandshakeTimeout, err)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		isConnReset(err):
		return fmt.Errorf("%w: %w", ErrHandshakeHangUp, err)
	}
	return err
}

func isConnReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

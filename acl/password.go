package acl

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"io"

	"github.com/slotraft/slotraft/resp"
)

// HashPassword is ACLHashPassword: the lowercase hex SHA-256 of password.
func HashPassword(password []byte) string {
	sum := sha256.Sum256(password)
	return hex.EncodeToString(sum[:])
}

// validHash is ACLCheckPasswordHash: 64 lowercase hex digits.
func validHash(h string) bool {
	if len(h) != sha256.Size*2 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < 'a' || c > 'f') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// Authenticate is ACLCheckUserCredentials for this user: an enabled user
// with nopass accepts any password, otherwise the password's hash must be
// one of the user's, compared in constant time with every hash.
func (u *User) Authenticate(password []byte) bool {
	if !u.enabled {
		return false
	}
	if u.nopass {
		return true
	}
	h := []byte(HashPassword(password))
	ok := 0
	for _, p := range u.passwords {
		ok |= subtle.ConstantTimeCompare(h, []byte(p))
	}
	return ok == 1
}

// genPassMaxBits is Redis's GENPASS_MAX_BITS.
const genPassMaxBits = 4096

// ParseGenPassBits is ACL GENPASS's argument: an integer (Redis's integer
// error otherwise) from 1 to 4096 (ErrGenPassBits otherwise).
func ParseGenPassBits(arg []byte) (int, error) {
	n, err := resp.ParseInt(arg)
	if err != nil {
		return 0, err
	}
	if n <= 0 || n > genPassMaxBits {
		return 0, ErrGenPassBits
	}
	return int(n), nil
}

// GenPass is ACL GENPASS: bits (1..4096; 256 when the command has no
// argument) of randomness from r as (bits+3)/4 lowercase hex digits.
func GenPass(bits int, r io.Reader) (string, error) {
	if bits <= 0 || bits > genPassMaxBits {
		return "", ErrGenPassBits
	}
	chars := (bits + 3) / 4
	buf := make([]byte, (chars+1)/2)
	if _, err := io.ReadFull(r, buf); err != nil {
		return "", err
	}
	return hex.EncodeToString(buf)[:chars], nil
}

// splitArgs is resp.SplitArgs over a string.
func splitArgs(s string) ([]string, bool) {
	args, ok := resp.SplitArgs([]byte(s))
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out, ok
}

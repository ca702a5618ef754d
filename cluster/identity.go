package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/slotraft/slotraft/cluster/meta"
)

// A node's data directory has an id of its own (the file node-uid, made
// the first time the node starts on it), announced in gossip and kept in
// the map (meta.Node.UID). A node that comes back under its id with
// another data directory (its volume was lost, its disk wiped) has lost
// the log entries it acknowledged: it must not act as its old self, whose
// votes and copies the groups counted on. Placement removes the old
// incarnation as soon as gossip shows the new id, and the node, seeing
// that the map's id for it is not its own, hosts no group until it is
// added again as a new member, which copies the data to it.

const uidFile = "node-uid"

// loadUID reads the data directory's id, making one if it has none (a new
// directory, or one from a release without ids).
func loadUID(dataDir string) (string, error) {
	path := filepath.Join(dataDir, uidFile)
	b, err := os.ReadFile(path)
	if err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("data directory id: %w", err)
	}
	var id [12]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", fmt.Errorf("data directory id: %w", err)
	}
	uid := hex.EncodeToString(id[:])
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return "", fmt.Errorf("data directory id: %w", err)
	}
	if err := WriteFileAtomic(path, []byte(uid+"\n"), 0o640); err != nil {
		return "", fmt.Errorf("data directory id: %w", err)
	}
	return uid, nil
}

// staleIdentity reports whether m knows this node by another data
// directory's id: until placement removes that incarnation and adds this
// one, the node hosts no group.
func (n *Node) staleIdentity(m *meta.Map) bool {
	nd, ok := m.Node(n.self.ID)
	return ok && nd.UID != "" && nd.UID != n.uid
}

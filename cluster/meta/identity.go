package meta

import "fmt"

// SetUID records the data directory id a member announces, the first time
// it is known (a map created before nodes had one, or from a static peer
// list): after that, a node that comes back under its id with another one
// lost its data, and placement removes its old incarnation.
type SetUID struct {
	ID  string `json:"id"`
	UID string `json:"uid"`
}

func (c SetUID) apply(m *Map) error {
	nd, err := m.member(c.ID)
	if err != nil {
		return err
	}
	switch {
	case c.UID == "":
		return fmt.Errorf("%w: empty uid for %s", ErrInvalid, c.ID)
	case nd.UID == c.UID:
		return errUnchanged
	case nd.UID != "":
		return fmt.Errorf("%w: %s has a uid already", ErrInvalid, c.ID)
	}
	nd.UID = c.UID
	return nil
}

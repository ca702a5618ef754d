package store

import (
	"sort"
	"sync/atomic"
)

// An order-statistic B-tree of sorted-set items with copy-on-write
// structural sharing: every node carries the number of items in its
// subtree, so rank and select are O(log N); a Clone shares every node and
// later writes copy only the nodes on the path they touch.
//
// Sharing works with generations: a tree writes in place only the nodes
// stamped with its own generation; Clone gives both trees fresh generations,
// so every node they share becomes read-only for both.

// zitem is one member and its score; the tree orders items by score, then
// by member bytes (Redis's rule for equal scores).
type zitem struct {
	score  float64
	member string
}

func zless(a, b zitem) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.member < b.member
}

const (
	zmaxItems = 63 // odd: a full node splits around its middle item
	zminItems = zmaxItems / 2
)

type znode struct {
	gen      uint64
	count    int // items in this subtree
	items    []zitem
	children []*znode // nil in a leaf
}

func (n *znode) leaf() bool { return n.children == nil }

type ztree struct {
	root *znode
	gen  uint64
}

var zgen atomic.Uint64

func newZtree() ztree { return ztree{gen: zgen.Add(1)} }

func (t *ztree) len() int {
	if t.root == nil {
		return 0
	}
	return t.root.count
}

// clone returns a tree sharing every node with t; both get new generations.
func (t *ztree) clone() ztree {
	t.gen = zgen.Add(1)
	return ztree{root: t.root, gen: zgen.Add(1)}
}

// mut returns n if this tree owns it, else a private copy of it.
func (t *ztree) mut(n *znode) *znode {
	if n.gen == t.gen {
		return n
	}
	c := &znode{gen: t.gen, count: n.count}
	c.items = make([]zitem, len(n.items), zmaxItems+1)
	copy(c.items, n.items)
	if n.children != nil {
		c.children = make([]*znode, len(n.children), zmaxItems+2)
		copy(c.children, n.children)
	}
	return c
}

// search returns the index of the first item not less than it, and whether
// that item equals it.
func (n *znode) search(it zitem) (int, bool) {
	i := sort.Search(len(n.items), func(i int) bool { return !zless(n.items[i], it) })
	return i, i < len(n.items) && !zless(it, n.items[i])
}

// insert adds it; it reports false if an equal item is present.
func (t *ztree) insert(it zitem) bool {
	if t.root == nil {
		t.root = &znode{gen: t.gen, count: 1, items: append(make([]zitem, 0, zmaxItems+1), it)}
		return true
	}
	t.root = t.mut(t.root)
	if !t.nodeInsert(t.root, it) {
		return false
	}
	if len(t.root.items) > zmaxItems {
		right, median := t.split(t.root)
		left := t.root
		t.root = &znode{gen: t.gen, count: left.count + right.count + 1,
			items:    append(make([]zitem, 0, zmaxItems+1), median),
			children: append(make([]*znode, 0, zmaxItems+2), left, right)}
	}
	return true
}

func (t *ztree) nodeInsert(n *znode, it zitem) bool {
	i, found := n.search(it)
	if found {
		return false
	}
	if n.leaf() {
		n.items = append(n.items, zitem{})
		copy(n.items[i+1:], n.items[i:])
		n.items[i] = it
		n.count++
		return true
	}
	child := t.mut(n.children[i])
	n.children[i] = child
	if !t.nodeInsert(child, it) {
		return false
	}
	n.count++
	if len(child.items) > zmaxItems {
		right, median := t.split(child)
		n.items = append(n.items, zitem{})
		copy(n.items[i+1:], n.items[i:])
		n.items[i] = median
		n.children = append(n.children, nil)
		copy(n.children[i+2:], n.children[i+1:])
		n.children[i+1] = right
	}
	return true
}

// split moves the upper half of n (owned) to a new node and returns it
// with the median item that separates them.
func (t *ztree) split(n *znode) (*znode, zitem) {
	mid := len(n.items) / 2
	median := n.items[mid]
	right := &znode{gen: t.gen}
	right.items = append(make([]zitem, 0, zmaxItems+1), n.items[mid+1:]...)
	clear(n.items[mid:])
	n.items = n.items[:mid]
	right.count = len(right.items)
	if !n.leaf() {
		right.children = append(make([]*znode, 0, zmaxItems+2), n.children[mid+1:]...)
		clear(n.children[mid+1:])
		n.children = n.children[:mid+1]
		for _, c := range right.children {
			right.count += c.count
		}
	}
	n.count -= right.count + 1
	return right, median
}

// delete removes it; it reports whether it was present.
func (t *ztree) delete(it zitem) bool {
	if t.root == nil {
		return false
	}
	if _, ok := t.root.find(it); !ok {
		return false
	}
	t.root = t.mut(t.root)
	t.nodeDelete(t.root, it, false)
	t.shrinkRoot()
	return true
}

func (t *ztree) shrinkRoot() {
	switch {
	case t.root.count == 0:
		t.root = nil
	case len(t.root.items) == 0 && !t.root.leaf():
		t.root = t.root.children[0]
	}
}

// find reports whether it is in the subtree.
func (n *znode) find(it zitem) (zitem, bool) {
	for {
		i, found := n.search(it)
		if found {
			return n.items[i], true
		}
		if n.leaf() {
			return zitem{}, false
		}
		n = n.children[i]
	}
}

// nodeDelete removes it (known to be present), or the largest item when
// max is set, from the owned node n, and returns the removed item.
func (t *ztree) nodeDelete(n *znode, it zitem, max bool) zitem {
	var i int
	var found bool
	if max {
		i = len(n.items)
		if n.leaf() {
			i--
			found = true
		}
	} else {
		i, found = n.search(it)
	}
	if n.leaf() {
		out := n.items[i]
		copy(n.items[i:], n.items[i+1:])
		n.items[len(n.items)-1] = zitem{}
		n.items = n.items[:len(n.items)-1]
		n.count--
		return out
	}
	n.children[i] = t.mut(n.children[i])
	var out zitem
	if found {
		// Replace the separator with its predecessor, the largest item of
		// the left subtree.
		out = n.items[i]
		n.items[i] = t.nodeDelete(n.children[i], zitem{}, true)
	} else {
		out = t.nodeDelete(n.children[i], it, max)
	}
	n.count--
	if len(n.children[i].items) < zminItems {
		t.rebalance(n, i)
	}
	return out
}

// rebalance fixes the underfull child i of the owned node n by merging it
// with a sibling or borrowing an item from one.
func (t *ztree) rebalance(n *znode, i int) {
	if i == len(n.items) {
		i--
	}
	left := t.mut(n.children[i])
	right := t.mut(n.children[i+1])
	n.children[i], n.children[i+1] = left, right
	if len(left.items)+len(right.items) < zmaxItems {
		left.items = append(left.items, n.items[i])
		left.items = append(left.items, right.items...)
		if !left.leaf() {
			left.children = append(left.children, right.children...)
		}
		left.count += right.count + 1
		copy(n.items[i:], n.items[i+1:])
		n.items[len(n.items)-1] = zitem{}
		n.items = n.items[:len(n.items)-1]
		copy(n.children[i+1:], n.children[i+2:])
		n.children[len(n.children)-1] = nil
		n.children = n.children[:len(n.children)-1]
		return
	}
	if len(left.items) > len(right.items) {
		// Move left's last item up and the separator down into right.
		right.items = append(right.items, zitem{})
		copy(right.items[1:], right.items)
		right.items[0] = n.items[i]
		moved := 1
		if !left.leaf() {
			c := left.children[len(left.children)-1]
			left.children[len(left.children)-1] = nil
			left.children = left.children[:len(left.children)-1]
			right.children = append(right.children, nil)
			copy(right.children[1:], right.children)
			right.children[0] = c
			moved += c.count
		}
		n.items[i] = left.items[len(left.items)-1]
		left.items[len(left.items)-1] = zitem{}
		left.items = left.items[:len(left.items)-1]
		left.count -= moved
		right.count += moved
		return
	}
	// Move right's first item up and the separator down into left.
	left.items = append(left.items, n.items[i])
	moved := 1
	if !right.leaf() {
		c := right.children[0]
		copy(right.children, right.children[1:])
		right.children[len(right.children)-1] = nil
		right.children = right.children[:len(right.children)-1]
		left.children = append(left.children, c)
		moved += c.count
	}
	n.items[i] = right.items[0]
	copy(right.items, right.items[1:])
	right.items[len(right.items)-1] = zitem{}
	right.items = right.items[:len(right.items)-1]
	left.count += moved
	right.count -= moved
}

// countBefore returns the number of items for which before is true; before
// must be true for a prefix of the items in order and false afterwards.
func (t *ztree) countBefore(before func(zitem) bool) int {
	n, acc := t.root, 0
	for n != nil {
		i := sort.Search(len(n.items), func(i int) bool { return !before(n.items[i]) })
		acc += i
		if n.leaf() {
			return acc
		}
		for _, c := range n.children[:i] {
			acc += c.count
		}
		n = n.children[i]
	}
	return acc
}

// rank returns the 0-based index of it, which must be present.
func (t *ztree) rank(it zitem) int {
	return t.countBefore(func(x zitem) bool { return zless(x, it) })
}

// at returns the item at 0-based index i (0 <= i < len).
func (t *ztree) at(i int) zitem {
	n := t.root
	for !n.leaf() {
		for j, c := range n.children {
			if i < c.count {
				n = c
				break
			}
			i -= c.count
			if i == 0 {
				return n.items[j]
			}
			i--
		}
	}
	return n.items[i]
}

// ascend calls fn for the items from index k upwards until fn returns false.
func (t *ztree) ascend(k int, fn func(zitem) bool) {
	if t.root != nil && k < t.root.count {
		t.root.ascend(max(k, 0), fn)
	}
}

func (n *znode) ascend(k int, fn func(zitem) bool) bool {
	if n.leaf() {
		for _, it := range n.items[k:] {
			if !fn(it) {
				return false
			}
		}
		return true
	}
	for i, c := range n.children {
		if k < c.count {
			if !c.ascend(k, fn) {
				return false
			}
			k = 0
		} else {
			k -= c.count
		}
		if i < len(n.items) {
			if k == 0 {
				if !fn(n.items[i]) {
					return false
				}
			} else {
				k--
			}
		}
	}
	return true
}

// descend calls fn for the items from index k downwards until fn returns
// false.
func (t *ztree) descend(k int, fn func(zitem) bool) {
	if t.root != nil && k >= 0 {
		t.root.descend(min(k, t.root.count-1), fn)
	}
}

func (n *znode) descend(k int, fn func(zitem) bool) bool {
	if n.leaf() {
		for i := min(k, len(n.items)-1); i >= 0; i-- {
			if !fn(n.items[i]) {
				return false
			}
		}
		return true
	}
	start := n.count // index just past child j
	for j := len(n.children) - 1; j >= 0; j-- {
		c := n.children[j]
		start -= c.count
		if k >= start && !c.descend(k-start, fn) {
			return false
		}
		if j > 0 {
			start--
			if k >= start && !fn(n.items[j-1]) {
				return false
			}
		}
	}
	return true
}

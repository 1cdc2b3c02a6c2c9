package plan

// gapKey orders free byte ranges for best fit: by length, then by start so
// that among equal lengths the lowest wins and every key is unique.
type gapKey struct{ length, start uint64 }

func (a gapKey) less(b gapKey) bool {
	return a.length < b.length || (a.length == b.length && a.start < b.start)
}

// treap is an ordered set of gap keys: a binary search tree kept balanced by
// heap-ordered priorities. The priorities come from a fixed-seed generator,
// so the shape, and with it the cost, is the same on every run. Nodes live in
// one slice and are recycled, which keeps a large sweep off the garbage
// collector.
type treap struct {
	nodes []treapNode
	root  int32
	free  []int32
	state uint64
}

type treapNode struct {
	key         gapKey
	prio        uint64
	left, right int32
}

const nilNode = -1

func newTreap() *treap { return &treap{root: nilNode, state: 0x9e3779b97f4a7c15} }

// nextPrio is splitmix64: cheap, and good enough to balance a treap.
func (t *treap) nextPrio() uint64 {
	t.state += 0x9e3779b97f4a7c15
	z := t.state
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// split divides the tree under n into keys less than k and the rest.
func (t *treap) split(n int32, k gapKey) (int32, int32) {
	if n == nilNode {
		return nilNode, nilNode
	}
	if t.nodes[n].key.less(k) {
		l, r := t.split(t.nodes[n].right, k)
		t.nodes[n].right = l
		return n, r
	}
	l, r := t.split(t.nodes[n].left, k)
	t.nodes[n].left = r
	return l, n
}

// join merges two trees whose keys are all less in a than in b.
func (t *treap) join(a, b int32) int32 {
	switch {
	case a == nilNode:
		return b
	case b == nilNode:
		return a
	case t.nodes[a].prio > t.nodes[b].prio:
		t.nodes[a].right = t.join(t.nodes[a].right, b)
		return a
	default:
		t.nodes[b].left = t.join(a, t.nodes[b].left)
		return b
	}
}

func (t *treap) insert(k gapKey) {
	n := treapNode{key: k, prio: t.nextPrio(), left: nilNode, right: nilNode}
	var id int32
	if len(t.free) > 0 {
		id = t.free[len(t.free)-1]
		t.free = t.free[:len(t.free)-1]
		t.nodes[id] = n
	} else {
		id = int32(len(t.nodes))
		t.nodes = append(t.nodes, n)
	}
	l, r := t.split(t.root, k)
	t.root = t.join(t.join(l, id), r)
}

// remove deletes k, which must be present.
func (t *treap) remove(k gapKey) {
	parent, n := int32(nilNode), t.root
	for t.nodes[n].key != k {
		parent = n
		if k.less(t.nodes[n].key) {
			n = t.nodes[n].left
		} else {
			n = t.nodes[n].right
		}
	}
	sub := t.join(t.nodes[n].left, t.nodes[n].right)
	switch {
	case parent == nilNode:
		t.root = sub
	case t.nodes[parent].left == n:
		t.nodes[parent].left = sub
	default:
		t.nodes[parent].right = sub
	}
	t.free = append(t.free, n)
}

// ceiling returns the least key not less than k.
func (t *treap) ceiling(k gapKey) (gapKey, bool) {
	var best gapKey
	found := false
	for n := t.root; n != nilNode; {
		if t.nodes[n].key.less(k) {
			n = t.nodes[n].right
			continue
		}
		best, found = t.nodes[n].key, true
		n = t.nodes[n].left
	}
	return best, found
}

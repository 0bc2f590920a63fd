package rbtree

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// checkRB verifies the red-black and parent-pointer invariants and returns
// the black height.
func checkRB(t *testing.T, n *Node, parent *Node) int {
	t.Helper()
	if n == nil {
		return 1
	}
	if n.parent != parent {
		t.Fatalf("node %d: wrong parent", n.Value)
	}
	if n.red && ((n.left != nil && n.left.red) || (n.right != nil && n.right.red)) {
		t.Fatalf("node %d: red node with red child", n.Value)
	}
	l, r := checkRB(t, n.left, n), checkRB(t, n.right, n)
	if l != r {
		t.Fatalf("node %d: black heights %d != %d", n.Value, l, r)
	}
	if !n.red {
		l++
	}
	return l
}

func TestRBTreeInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		var b keyTree
		var live []*Node
		n := rng.IntN(300)
		for i := 0; i < n; i++ {
			b.insert(uint64(rng.IntN(50)))
		}
		for nd := b.tree.First(); nd != nil; nd = nd.Next() {
			live = append(live, nd)
		}
		if b.tree.root != nil && b.tree.root.red {
			t.Fatal("red root")
		}
		checkRB(t, b.tree.root, nil)
		rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
		for len(live) > 0 {
			b.tree.Erase(live[0])
			live = live[1:]
			checkRB(t, b.tree.root, nil)
			var got []int32
			for nd := b.tree.First(); nd != nil; nd = nd.Next() {
				got = append(got, nd.Value)
			}
			var want []int32
			for _, l := range live {
				want = append(want, l.Value)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("round %d: in-order %v, want %v", round, got, want)
			}
		}
	}
}

// keyTree inserts keys as perf's __symbols__insert does: left when below
// the node's key, else right.
type keyTree struct {
	keys   []uint64
	tree   Tree
	linked *Node // the last node inserted, and where: under parent
	parent *Node
}

func (b *keyTree) insert(k uint64) {
	b.keys = append(b.keys, k)
	n := &Node{Value: int32(len(b.keys) - 1)}
	var parent *Node
	left := false
	for p := b.tree.Root(); p != nil; {
		parent = p
		if k < b.keys[p.Value] {
			p, left = p.Left(), true
		} else {
			p, left = p.Right(), false
		}
	}
	b.linked, b.parent = n, parent
	b.tree.Link(n, parent, left)
}

// TestMovesCountsPathChanges: a node's path from the root changes only
// when Moves does, over random insertions and erasures, and Moves does
// change on some (a test that cannot fail is none).
func TestMovesCountsPathChanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	path := func(n *Node) string {
		var b []byte
		for ; n.parent != nil; n = n.parent {
			if n.parent.left == n {
				b = append(b, 'l')
			} else {
				b = append(b, 'r')
			}
		}
		return string(b)
	}
	still, moved := 0, 0
	for range 50 {
		var b keyTree
		var nodes []*Node
		for range 200 {
			before := b.tree.Moves()
			paths := make([]string, len(nodes))
			for i, n := range nodes {
				paths[i] = path(n)
			}
			if len(nodes) > 0 && rng.IntN(5) == 0 {
				i := rng.IntN(len(nodes))
				b.tree.Erase(nodes[i])
				nodes = slices.Delete(nodes, i, i+1)
				paths = slices.Delete(paths, i, i+1)
			} else {
				b.insert(uint64(rng.IntN(1000)))
				for n := b.tree.First(); n != nil; n = n.Next() {
					if int(n.Value) == len(b.keys)-1 {
						nodes = append(nodes, n)
					}
				}
			}
			changed := false
			for i, p := range paths {
				changed = changed || path(nodes[i]) != p
			}
			switch {
			case b.tree.Moves() == before && changed:
				t.Fatal("a path changed but Moves did not")
			case b.tree.Moves() == before:
				still++
			default:
				moved++
			}
		}
	}
	if still == 0 || moved == 0 {
		t.Errorf("Moves stayed %d times and changed %d", still, moved)
	}
}

// TestRotatedReportsNewAncestors: over random insertions, every node
// that ends an insertion with an ancestor it did not have is the lowered
// node of a rotation Rotated reported that raised that ancestor, or in
// the lowered node's subtree on the side away from it, at that report.
// (Inside a double rotation, links are mended by its second half: each
// report is checked at the insertion's end.) The new node itself keeps
// only ancestors of its search path.
func TestRotatedReportsNewAncestors(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	type report struct {
		risen   *Node
		gaining map[*Node]bool
	}
	var reports []report
	var b keyTree
	b.tree.Rotated = func(risen, lowered *Node) {
		far := lowered.right
		if risen.left == lowered {
			far = lowered.left
		} else if risen.right != lowered {
			t.Fatalf("node %d rose over %d, not its child", risen.Value, lowered.Value)
		}
		gaining := map[*Node]bool{lowered: true}
		var walk func(*Node)
		walk = func(n *Node) {
			if n != nil {
				gaining[n] = true
				walk(n.left)
				walk(n.right)
			}
		}
		walk(far)
		reports = append(reports, report{risen, gaining})
	}
	gained := 0
	for round := range 40 {
		b = keyTree{tree: Tree{Rotated: b.tree.Rotated}}
		for range 300 {
			before := childAncestors(b.tree.root)
			reports = reports[:0]
			b.insert(uint64(rng.IntN(1 << (4 + round%12))))
			for n, now := range childAncestors(b.tree.root) {
				if n == b.linked {
					// The new node keeps only ancestors its search path
					// had: the rebalancing raises them and lowers nodes
					// off the path (farorder.go's worker relies on it).
					for a := range now {
						if a != b.parent && !before[b.parent][a] {
							t.Fatalf("round %d: the new node %d gained ancestor %d off its path", round, n.Value, a.Value)
						}
					}
					continue
				}
				for a := range now {
					if before[n][a] {
						continue // an ancestor it had
					}
					gained++
					if !slices.ContainsFunc(reports, func(r report) bool { return r.risen == a && r.gaining[n] }) {
						t.Fatalf("round %d: node %d gained ancestor %d, and no rotation reported raising it over them", round, n.Value, a.Value)
					}
				}
			}
		}
	}
	if gained < 1000 {
		t.Errorf("only %d ancestors gained: the test no longer tests rotations", gained)
	}
}

// childAncestors returns each node's ancestors, found by child links
// from root.
func childAncestors(root *Node) map[*Node]map[*Node]bool {
	m := map[*Node]map[*Node]bool{}
	var walk func(n *Node, above map[*Node]bool)
	walk = func(n *Node, above map[*Node]bool) {
		if n == nil {
			return
		}
		m[n] = above
		below := maps.Clone(above)
		below[n] = true
		walk(n.left, below)
		walk(n.right, below)
	}
	walk(root, map[*Node]bool{})
	return m
}

// Prev walks the in-order sequence Next walks, backwards, and each
// node's Parent has it as a child, on random trees with erasures.
func TestPrevReversesNext(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 200 {
		var b keyTree
		for range rng.IntN(300) {
			b.insert(uint64(rng.IntN(100)))
		}
		var fwd []*Node
		for nd := b.tree.First(); nd != nil; nd = nd.Next() {
			fwd = append(fwd, nd)
		}
		for _, nd := range fwd {
			if rng.IntN(4) == 0 {
				b.tree.Erase(nd)
			}
		}
		fwd = fwd[:0]
		for nd := b.tree.First(); nd != nil; nd = nd.Next() {
			fwd = append(fwd, nd)
		}
		for i, nd := range fwd {
			var want *Node
			if i > 0 {
				want = fwd[i-1]
			}
			if got := nd.Prev(); got != want {
				t.Fatalf("round %d: Prev of in-order node %d of %d is not the one before it", round, i, len(fwd))
			}
			if p := nd.Parent(); p == nil && b.tree.Root() != nd || p != nil && p.Left() != nd && p.Right() != nd {
				t.Fatalf("round %d: in-order node %d of %d is not its parent's child", round, i, len(fwd))
			}
		}
	}
}

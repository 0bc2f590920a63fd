package rbtree

import (
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
	keys []uint64
	tree Tree
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

package symbols

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// checkRB verifies the red-black and parent-pointer invariants and returns
// the black height.
func checkRB(t *testing.T, n *rbNode, parent *rbNode) int {
	t.Helper()
	if n == nil {
		return 1
	}
	if n.parent != parent {
		t.Fatalf("node %d: wrong parent", n.sym)
	}
	if n.red && ((n.left != nil && n.left.red) || (n.right != nil && n.right.red)) {
		t.Fatalf("node %d: red node with red child", n.sym)
	}
	l, r := checkRB(t, n.left, n), checkRB(t, n.right, n)
	if l != r {
		t.Fatalf("node %d: black heights %d != %d", n.sym, l, r)
	}
	if !n.red {
		l++
	}
	return l
}

func TestRBTreeInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		var b builder
		var live []*rbNode
		n := rng.IntN(300)
		for i := 0; i < n; i++ {
			b.insert(entry{start: uint64(rng.IntN(50))})
		}
		for nd := b.tree.first(); nd != nil; nd = next(nd) {
			live = append(live, nd)
		}
		if b.tree.root != nil && b.tree.root.red {
			t.Fatal("red root")
		}
		checkRB(t, b.tree.root, nil)
		rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
		for len(live) > 0 {
			b.tree.erase(live[0])
			live = live[1:]
			checkRB(t, b.tree.root, nil)
			var got []int32
			for nd := b.tree.first(); nd != nil; nd = next(nd) {
				got = append(got, nd.sym)
			}
			var want []int32
			for _, l := range live {
				want = append(want, l.sym)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("round %d: in-order %v, want %v", round, got, want)
			}
		}
	}
}

// Package rbtree reproduces the red-black tree of the Linux kernel
// (lib/rbtree.c: rb_link_node, __rb_insert, rb_erase, rb_first, rb_next)
// node for node. perf keeps its symbols and its histogram entries in such
// trees and searches them with comparisons that are not always
// consistent (overlapping symbols, perf's non-transitive sort keys): the
// answers then depend on the tree's shape, so the shape is rebuilt
// exactly: same insertions, same erasures, same rebalancing.
// Hand-written because no Go library keeps lib/rbtree.c's shape.
package rbtree

// Node is a node of a Tree, holding Value (an index into the caller's
// entries).
type Node struct {
	parent, left, right *Node
	red                 bool
	Value               int32
}

// Left returns n's left child, nil if none.
func (n *Node) Left() *Node { return n.left }

// Right returns n's right child, nil if none.
func (n *Node) Right() *Node { return n.right }

// Tree is a red-black tree whose caller does the descent (as the kernel's
// users do) and links the new node with Link.
type Tree struct {
	root  *Node
	moves uint64 // rotations and erasures so far (Moves)
	// Rotated, when set, is called after each rotation with the node
	// that rose and the one it rose over, now its child (links above them
	// may wait for a double rotation's second half). A rotation gives an
	// ancestor, the risen node, to the lowered node and its subtree on the
	// side away from the risen node, and to no other node. Erase also
	// splices a node out without a rotation: Moves counts that, Rotated
	// does not.
	Rotated func(risen, lowered *Node)
}

// Moves counts the rotations and erasures so far. A search's path to a
// node it found stays the same while Moves does: linking a new leaf
// changes no existing node's children but the leaf's parent's empty
// side, which that path does not take.
func (t *Tree) Moves() uint64 { return t.moves }

// Root returns the root node, nil for an empty tree.
func (t *Tree) Root() *Node { return t.root }

func (t *Tree) changeChild(old, new, parent *Node) {
	if parent != nil {
		if parent.left == old {
			parent.left = new
		} else {
			parent.right = new
		}
	} else {
		t.root = new
	}
}

// rotated counts and reports a rotation: rotateSetParents's, or one
// done in place (a double rotation's first half, whose second raises the
// same node again).
func (t *Tree) rotated(risen, lowered *Node) {
	t.moves++
	if t.Rotated != nil {
		t.Rotated(risen, lowered)
	}
}

// rotateSetParents is __rb_rotate_set_parents: new takes old's parent and
// colour, old becomes new's child with the given colour.
func (t *Tree) rotateSetParents(old, new *Node, red bool) {
	parent := old.parent
	new.parent, new.red = old.parent, old.red
	old.parent, old.red = new, red
	t.changeChild(old, new, parent)
	t.rotated(new, old)
}

// Link is rb_link_node followed by rb_insert_color: node becomes a red leaf
// under parent (left or right) and the tree is rebalanced.
func (t *Tree) Link(node, parent *Node, left bool) {
	node.parent, node.left, node.right, node.red = parent, nil, nil, true
	switch {
	case parent == nil:
		t.root = node
	case left:
		parent.left = node
	default:
		parent.right = node
	}
	t.insertColor(node)
}

func (t *Tree) insertColor(node *Node) {
	parent := node.parent
	for {
		if parent == nil {
			node.parent, node.red = nil, false
			return
		}
		if !parent.red {
			return
		}
		gparent := parent.parent
		tmp := gparent.right
		if parent != tmp { // parent == gparent.left
			if tmp != nil && tmp.red {
				tmp.parent, tmp.red = gparent, false
				parent.parent, parent.red = gparent, false
				node = gparent
				parent = node.parent
				node.red = true
				continue
			}
			tmp = parent.right
			if node == tmp {
				tmp = node.left
				parent.right = tmp
				node.left = parent
				if tmp != nil {
					tmp.parent, tmp.red = parent, false
				}
				parent.parent, parent.red = node, true
				t.rotated(node, parent)
				parent = node
				tmp = node.right
			}
			gparent.left = tmp
			parent.right = gparent
			if tmp != nil {
				tmp.parent, tmp.red = gparent, false
			}
			t.rotateSetParents(gparent, parent, true)
			return
		}
		tmp = gparent.left
		if tmp != nil && tmp.red {
			tmp.parent, tmp.red = gparent, false
			parent.parent, parent.red = gparent, false
			node = gparent
			parent = node.parent
			node.red = true
			continue
		}
		tmp = parent.left
		if node == tmp {
			tmp = node.right
			parent.left = tmp
			node.right = parent
			if tmp != nil {
				tmp.parent, tmp.red = parent, false
			}
			parent.parent, parent.red = node, true
			t.rotated(node, parent)
			parent = node
			tmp = node.left
		}
		gparent.right = tmp
		parent.left = gparent
		if tmp != nil {
			tmp.parent, tmp.red = gparent, false
		}
		t.rotateSetParents(gparent, parent, true)
		return
	}
}

// Erase is rb_erase (__rb_erase_augmented without callbacks, then
// ____rb_erase_color).
func (t *Tree) Erase(node *Node) {
	t.moves++
	child := node.right
	tmp := node.left
	var parent, rebalance *Node
	switch {
	case tmp == nil:
		parent = node.parent
		t.changeChild(node, child, parent)
		if child != nil {
			child.parent, child.red = node.parent, node.red
		} else if !node.red {
			rebalance = parent
		}
	case child == nil:
		tmp.parent, tmp.red = node.parent, node.red
		parent = node.parent
		t.changeChild(node, tmp, parent)
	default:
		successor := child
		var child2 *Node
		tmp = child.left
		if tmp == nil {
			parent = successor
			child2 = successor.right
		} else {
			for tmp != nil {
				parent = successor
				successor = tmp
				tmp = tmp.left
			}
			child2 = successor.right
			parent.left = child2
			successor.right = child
			child.parent = successor
		}
		tmp = node.left
		successor.left = tmp
		tmp.parent = successor
		t.changeChild(node, successor, node.parent)
		if child2 != nil {
			child2.parent, child2.red = parent, false
		} else if !successor.red {
			rebalance = parent
		}
		successor.parent, successor.red = node.parent, node.red
	}
	if rebalance != nil {
		t.eraseColor(rebalance)
	}
}

func (t *Tree) eraseColor(parent *Node) {
	var node *Node
	for {
		sibling := parent.right
		if node != sibling { // node == parent.left
			if sibling.red {
				tmp1 := sibling.left
				parent.right = tmp1
				sibling.left = parent
				tmp1.parent, tmp1.red = parent, false
				t.rotateSetParents(parent, sibling, true)
				sibling = tmp1
			}
			tmp1 := sibling.right
			if tmp1 == nil || !tmp1.red {
				tmp2 := sibling.left
				if tmp2 == nil || !tmp2.red {
					sibling.parent, sibling.red = parent, true
					if parent.red {
						parent.red = false
					} else {
						node = parent
						parent = node.parent
						if parent != nil {
							continue
						}
					}
					return
				}
				tmp1 = tmp2.right
				sibling.left = tmp1
				tmp2.right = sibling
				parent.right = tmp2
				if tmp1 != nil {
					tmp1.parent, tmp1.red = sibling, false
				}
				t.rotated(tmp2, sibling)
				tmp1 = sibling
				sibling = tmp2
			}
			tmp2 := sibling.left
			parent.right = tmp2
			sibling.left = parent
			tmp1.parent, tmp1.red = sibling, false
			if tmp2 != nil {
				tmp2.parent = parent
			}
			t.rotateSetParents(parent, sibling, false)
			return
		}
		sibling = parent.left
		if sibling.red {
			tmp1 := sibling.right
			parent.left = tmp1
			sibling.right = parent
			tmp1.parent, tmp1.red = parent, false
			t.rotateSetParents(parent, sibling, true)
			sibling = tmp1
		}
		tmp1 := sibling.left
		if tmp1 == nil || !tmp1.red {
			tmp2 := sibling.right
			if tmp2 == nil || !tmp2.red {
				sibling.parent, sibling.red = parent, true
				if parent.red {
					parent.red = false
				} else {
					node = parent
					parent = node.parent
					if parent != nil {
						continue
					}
				}
				return
			}
			tmp1 = tmp2.left
			sibling.right = tmp1
			tmp2.left = sibling
			parent.left = tmp2
			if tmp1 != nil {
				tmp1.parent, tmp1.red = sibling, false
			}
			t.rotated(tmp2, sibling)
			tmp1 = sibling
			sibling = tmp2
		}
		tmp2 := sibling.right
		parent.left = tmp2
		sibling.right = parent
		tmp1.parent, tmp1.red = sibling, false
		if tmp2 != nil {
			tmp2.parent = parent
		}
		t.rotateSetParents(parent, sibling, false)
		return
	}
}

// First is rb_first: the leftmost node, nil for an empty tree.
func (t *Tree) First() *Node {
	n := t.root
	if n == nil {
		return nil
	}
	for n.left != nil {
		n = n.left
	}
	return n
}

// Parent returns n's parent, nil at the root.
func (n *Node) Parent() *Node { return n.parent }

// Next is rb_next: n's in-order successor, nil after the last.
func (n *Node) Next() *Node {
	if n.right != nil {
		n = n.right
		for n.left != nil {
			n = n.left
		}
		return n
	}
	for n.parent != nil && n == n.parent.right {
		n = n.parent
	}
	return n.parent
}

// Prev is rb_prev: n's in-order predecessor, nil before the first.
func (n *Node) Prev() *Node {
	if n.left != nil {
		n = n.left
		for n.right != nil {
			n = n.right
		}
		return n
	}
	for n.parent != nil && n == n.parent.left {
		n = n.parent
	}
	return n.parent
}

package machine

import (
	"slices"

	"github.com/google/btree"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/rbtree"
)

// perfKmaps is perf 6.1's own tree of the kernel maps (machine->kmaps:
// lib/rbtree.c keyed by start, maps__insert, maps__remove, maps__find),
// kept beside the index with the same insertions and erasures perf makes.
// perf inserts module, KSYMBOL and kernel maps without fixing overlaps,
// and maps__find returns the first map on its way down from the root
// that holds the address. Where no two maps overlap, that is the one map
// holding it, which the index finds; once two overlap (a kernel from 6.4
// on reports a module's total size, so neighbouring modules' ranges
// overlap), the answer depends on the tree's shape, and Resolve asks this
// tree. kcore and KMOD_SEC_MAP records, which rebuild or refine the maps
// in ways not modelled here, turn it off.
type perfKmaps struct {
	tree    rbtree.Tree
	maps    []index.Map // by node Value; erased ones stay
	nodes   []*rbtree.Node
	kernel  int32 // the kernel map's node (Value), -1 for none
	overlap bool  // two maps ever overlapped
	off     bool
	// byStart holds the live maps but the kernel's, by start, until two
	// maps overlap: no two of them overlap then, so a new map overlaps
	// one of them only if it overlaps its neighbour below or above
	// (overlaps). Scanning every map instead made 23 k maps (3,000
	// modules, 20,000 BPF programs) take 0.34 s to insert. The kernel
	// map is apart: its range changes in place (fixupKernel).
	byStart *btree.BTreeG[startKey]
	// named counts the live maps by DSO name, and modules lists the
	// nodes of module maps by start and name, once first asked for
	// (hasName, setPgoff by value) and kept from then on: a module loaded
	// from its file asks for its map and each of its sections, and a
	// scan of every map each time made 4,800 module loads among 20,000
	// BPF programs take 5.8 s.
	named   map[string]int32
	modules map[moduleKey][]int32 // ascending; erased nodes stay
}

// moduleKey finds a module map's nodes: what setPgoff does not change.
type moduleKey struct {
	start uint64
	dso   string
}

// startKey orders perfKmaps.byStart: by start, then node.
type startKey struct {
	start uint64
	v     int32
}

func newPerfKmaps() *perfKmaps {
	return &perfKmaps{kernel: -1, byStart: btree.NewG(16, func(a, b startKey) bool {
		return a.start < b.start || a.start == b.start && a.v < b.v
	})}
}

// overlaps reports whether mp overlaps a live map (index.Map.Overlaps:
// an empty map overlaps one its start is strictly inside), while none
// overlapped another (byStart). Of the maps below its start, the last that is not
// empty is the only one that may (an earlier one would overlap it; an
// empty one cannot); of those from its start, the first that is not
// empty at its start does if it starts before mp's end.
func (k *perfKmaps) overlaps(mp index.Map) bool {
	if k.kernel >= 0 && k.nodes[k.kernel] != nil && mp.Overlaps(k.maps[k.kernel]) {
		return true
	}
	found := false
	k.byStart.DescendLessOrEqual(startKey{mp.Start, -1}, func(x startKey) bool {
		o := k.maps[x.v]
		found = mp.Overlaps(o)
		return !found && o.Start == o.End
	})
	if found {
		return true
	}
	k.byStart.AscendGreaterOrEqual(startKey{mp.Start, -1}, func(x startKey) bool {
		o := k.maps[x.v]
		found = mp.Overlaps(o)
		return !found && o.Start < mp.End && o.Start == mp.Start
	})
	return found
}

// active reports whether Resolve must ask the tree.
func (k *perfKmaps) active() bool { return k.overlap && !k.off }

// insert is maps__insert: the descent by start, the new map to the right
// of equal starts.
func (k *perfKmaps) insert(mp index.Map) int32 {
	if k.off {
		return -1
	}
	if !k.overlap && k.overlaps(mp) {
		k.overlap, k.byStart = true, nil // no check once seen
	}
	v := int32(len(k.maps))
	if k.byStart != nil {
		k.byStart.ReplaceOrInsert(startKey{mp.Start, v})
	}
	if k.named != nil {
		k.named[mp.DSO]++
	}
	if k.modules != nil && mp.Kind == index.KindModule {
		key := moduleKey{mp.Start, mp.DSO}
		k.modules[key] = append(k.modules[key], v)
	}
	node := &rbtree.Node{Value: v}
	if len(k.maps) == cap(k.maps) {
		// Doubling: append grows a large slice by a quarter, and its
		// copies (with write barriers for the names while the collector
		// ran) were a third of 160,000 KSYMBOL records' time.
		k.maps = slices.Grow(k.maps, max(len(k.maps), 64))
		k.nodes = slices.Grow(k.nodes, max(len(k.nodes), 64))
	}
	k.maps = append(k.maps, mp)
	k.nodes = append(k.nodes, node)
	var parent *rbtree.Node
	left := false
	for n := k.tree.Root(); n != nil; {
		parent = n
		if left = mp.Start < k.maps[n.Value].Start; left {
			n = n.Left()
		} else {
			n = n.Right()
		}
	}
	k.tree.Link(node, parent, left)
	return v
}

// remove is maps__remove of node v.
func (k *perfKmaps) remove(v int32) {
	if k.off || v < 0 || k.nodes[v] == nil {
		return
	}
	k.tree.Erase(k.nodes[v])
	k.nodes[v] = nil
	if k.named != nil {
		if k.named[k.maps[v].DSO]--; k.named[k.maps[v].DSO] == 0 {
			delete(k.named, k.maps[v].DSO)
		}
	}
	if v == k.kernel {
		k.kernel = -1
	} else if k.byStart != nil {
		k.byStart.Delete(startKey{k.maps[v].Start, v})
	}
}

// setKernelNode makes node v the kernel map's, apart from byStart.
func (k *perfKmaps) setKernelNode(v int32) {
	k.kernel = v
	if v >= 0 && k.byStart != nil {
		k.byStart.Delete(startKey{k.maps[v].Start, v})
	}
}

// find is maps__find: the node of the first map on the way down from the
// root that holds addr, -1 for none.
func (k *perfKmaps) find(addr uint64) int32 {
	for n := k.tree.Root(); n != nil; {
		mp := &k.maps[n.Value]
		switch {
		case addr < mp.Start:
			n = n.Left()
		case addr >= mp.End:
			n = n.Right()
		default:
			return n.Value
		}
	}
	return -1
}

// setKernel is __machine__create_kernel_maps and
// machine__update_kernel_mmap for a kernel MMAP: the previous kernel map
// goes, the new one goes in at start 0 (map__new2), out, and in again at
// its start (an end of 0 meaning the end of the address space, as
// machine__set_kernel_mmap takes it).
func (k *perfKmaps) setKernel(mp index.Map) {
	k.remove(k.kernel)
	start, end := mp.Start, mp.End
	mp.Start, mp.End = 0, 0
	v := k.insert(mp)
	k.remove(v)
	mp.Start, mp.End = start, end
	if mp.End == 0 {
		mp.End = ^uint64(0)
	}
	k.setKernelNode(k.insert(mp))
}

// moveKernel is the kernel map moved to mp as dso__process_kernel_symbol
// moves it to a vmlinux's .text: out of the tree and in again at its new
// start.
func (k *perfKmaps) moveKernel(mp index.Map) {
	if k.kernel >= 0 {
		k.remove(k.kernel)
		k.setKernelNode(k.insert(mp))
	}
}

// setPgoff changes the pgoff of node v's map, or for v < 0 of the live
// map equal to mp, in place (dso__process_kernel_symbol remapping a
// module's map): the tree does not move.
func (k *perfKmaps) setPgoff(v int32, mp index.Map, pgoff uint64) {
	if v >= 0 {
		if k.nodes[v] != nil {
			k.maps[v].Pgoff = pgoff
		}
		return
	}
	at := int32(-1)
	if mp.Kind == index.KindModule {
		for _, v := range k.moduleNodes(mp) {
			if k.nodes[v] != nil && k.maps[v] == mp {
				at = v
				break
			}
		}
	} else {
		for v := range k.maps {
			if k.nodes[v] != nil && k.maps[v] == mp {
				at = int32(v)
				break
			}
		}
	}
	// The kernel map's start changes in place (fixupKernel): modules
	// may not list it under its start.
	if v := k.kernel; v >= 0 && k.nodes[v] != nil && k.maps[v] == mp && (at < 0 || v < at) {
		at = v
	}
	if at >= 0 {
		k.maps[at].Pgoff = pgoff
	}
}

// moduleNodes returns, in order, the nodes that held or hold a module
// map of mp's start and name: every live one equal to mp among them.
func (k *perfKmaps) moduleNodes(mp index.Map) []int32 {
	if k.modules == nil {
		k.modules = map[moduleKey][]int32{}
		for v, n := range k.nodes {
			if o := k.maps[v]; n != nil && o.Kind == index.KindModule {
				key := moduleKey{o.Start, o.DSO}
				k.modules[key] = append(k.modules[key], int32(v))
			}
		}
	}
	return k.modules[moduleKey{mp.Start, mp.DSO}]
}

// hasName reports whether a live map's DSO is dso (maps__find_by_name).
func (k *perfKmaps) hasName(dso string) bool {
	if k.named == nil {
		k.named = map[string]int32{}
		for v, n := range k.nodes {
			if n != nil {
				k.named[k.maps[v].DSO]++
			}
		}
	}
	return k.named[dso] > 0
}

// fixupKernel is map__fixup_start and map__fixup_end on the kernel map:
// its range changes in place, the tree does not move.
func (k *perfKmaps) fixupKernel(start, end uint64) {
	if k.kernel >= 0 {
		k.maps[k.kernel].Start, k.maps[k.kernel].End = start, end
	}
}

// ksymbol is machine__process_ksymbol on the tree: a registered program
// gets a map unless maps__find finds one holding its address (an empty
// one too, which no address finds but which takes its place in the
// tree); an unregistered one's map goes unless it is the kernel map.
func (k *perfKmaps) ksymbol(s Ksymbol) {
	v := k.find(s.Addr)
	switch {
	case s.Unregister:
		if v >= 0 && v != k.kernel {
			k.remove(v)
		}
	case v < 0:
		k.insert(ksymbolMap(s))
	}
}

// frozenKmaps is a copy of perf's tree of the kernel maps for a View:
// the same descent over nodes that no longer change.
type frozenKmaps struct {
	nodes []frozenNode
	root  int32
}

type frozenNode struct {
	mp          index.Map
	left, right int32
}

// freeze returns the tree as it is now, as a View's kernel maps.
func (k *perfKmaps) freeze() mapset.Finder {
	f := &frozenKmaps{root: -1}
	var copyNode func(n *rbtree.Node) int32
	copyNode = func(n *rbtree.Node) int32 {
		if n == nil {
			return -1
		}
		i := int32(len(f.nodes))
		f.nodes = append(f.nodes, frozenNode{mp: k.maps[n.Value]})
		l := copyNode(n.Left())
		r := copyNode(n.Right())
		f.nodes[i].left, f.nodes[i].right = l, r
		return i
	}
	f.root = copyNode(k.tree.Root())
	return f
}

// Find is perfKmaps.find on the copy.
func (f *frozenKmaps) Find(addr uint64) (index.Map, bool) {
	for i := f.root; i >= 0; {
		n := &f.nodes[i]
		switch {
		case addr < n.mp.Start:
			i = n.left
		case addr >= n.mp.End:
			i = n.right
		default:
			return n.mp, true
		}
	}
	return index.Map{}, false
}

// Len returns the number of maps.
func (f *frozenKmaps) Len() int { return len(f.nodes) }

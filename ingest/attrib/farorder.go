package attrib

import (
	"cmp"
	"strings"

	"github.com/kmapindex/kmapindex/ingest/rbtree"
	"github.com/kmapindex/kmapindex/ingest/symbols"
)

// A children table's entries of addresses outside every map compare by
// their wrapped difference (_sort__addr_cmp: right - left, as a signed
// number). While every such address of an event lies on one arc of less
// than 2^63, going round the address space, that is an order, perf's
// tree of hist entries finds each address's one entry, and its in-order
// walk, which orders the rows the output sort finds equal, is that
// arc's order: the accumulator's keys and tableOrder's signed addresses
// give perf's table. Frame-pointer walks through code built without
// frame pointers read garbage "return addresses" from all over the
// space, though, and once two lie 2^63 or more apart the comparison is
// no order: perf's search can miss an address's entry and make a second
// one (a row of its own), and the walk follows the tree's shape. From
// that moment on, per event, noMapOrder rebuilds the tree as perf has it
// (package rbtree, its entries kept compact: entryTree): the entries made so
// far, in the order they were made (which is perf's, and whose
// comparisons were consistent until then), then each entry as it is
// made, and a search per sample for each address outside every map, as
// hists__findnew_entry searches. Entries with a map compare consistently
// with everything, so they are found without a search.

// noMapOrder is one event's tree, once needed, and the arc before.
type noMapOrder struct {
	arc  addrArc
	tree *entryTree // nil until the arc reached 2^63
	ids  []int32    // each tree entry's accumulator entry
	// dups counts, per accumulator entry of an address, its tree
	// entries after the first.
	dups map[int32]int32
	// last is, per accumulator entry of an address (its index), the
	// tree entry its last search found, and the tree's Moves then + 1:
	// the path to it stays while no node moves.
	last []lastSearch
}

type lastSearch struct {
	moves uint64
	found int32
}

// addrArc is the shortest arc, going up from lo for span bytes round
// the address space, that holds every address added.
type addrArc struct {
	lo, span uint64
	any      bool
}

// add adds addr and reports whether the arc stays shorter than 2^63 (so
// that the addresses' wrapped differences are an order). The shortest
// arc holding the old one and addr is one of its two extensions.
func (a *addrArc) add(addr uint64) bool {
	switch {
	case !a.any:
		a.lo, a.any = addr, true
	case addr-a.lo <= a.span:
	default:
		up := addr - a.lo            // lo up to addr
		down := a.lo + a.span - addr // addr up to the old end
		if up <= down {
			a.span = up
		} else {
			a.lo, a.span = addr, down
		}
	}
	return a.span < 1<<63
}

// countNoMap counts the sample (period c) in the entry perf finds for
// accumulator entry id, of an address outside every map: the i-th of
// the sample's entries (0: its own), at level (packLevel).
func (ac *accumulator) countNoMap(i int, id int32, event int, c Counts, level uint8) {
	if i > 0 && ac.counts[id].stamp == ac.stamp {
		return // counted for the sample (iter_add_next_cumulative_entry's he_cache)
	}
	o := ac.noMapOrder(event)
	if o.tree == nil {
		if ac.counts[id].stamp == 0 {
			if !o.arc.add(ac.keys[id].Addr) {
				ac.startTree(o, event)
			} else {
				ac.made = append(ac.made, id)
			}
		}
		if o.tree == nil {
			ac.add(id, c)
			return
		}
	}
	pe := ac.findNoMap(o, id, level)
	ac.add(pe, c)
	ac.counts[id].stamp = ac.stamp
	if i == 0 && pe != id {
		if ac.movedSelf == nil {
			ac.movedSelf = make(map[int32]Counts)
		}
		s := ac.movedSelf[pe]
		s.add(c)
		ac.movedSelf[pe] = s
	}
}

// noMapOrder returns event's noMapOrder, made on first use.
func (ac *accumulator) noMapOrder(event int) *noMapOrder {
	for event >= len(ac.orders) {
		ac.orders = append(ac.orders, nil)
	}
	if ac.orders[event] == nil {
		ac.orders[event] = &noMapOrder{}
	}
	return ac.orders[event]
}

// startTree builds event's tree as perf has it now: the event's entries
// counted so far, in the order they were first counted (ac.made), which
// is the order perf made them in.
func (ac *accumulator) startTree(o *noMapOrder, event int) {
	o.tree = &entryTree{names: map[string]int32{}}
	o.dups = map[int32]int32{}
	for _, id := range ac.made {
		if ac.keys[id].Event == event {
			ac.insert(o, id)
		}
	}
}

// insert links entry id into o's tree, where perf's search for it ends.
// An entry with a map that another compares equal to (a library of the
// same short name) is counted apart, as the accumulator keys it: perf's
// table merges such rows anyway (groupRows).
func (ac *accumulator) insert(o *noMapOrder, id int32) {
	n := o.tree.len()
	if int(o.tree.find(ac.treeKey(o.tree, id))) == n {
		o.ids = append(o.ids, id)
		ac.counts[id].inTree = true
	}
}

// enter notes an entry with a map counted for the first time, when
// perf makes it: in its event's tree, if the event has one, else in
// ac.made for a tree made later.
func (ac *accumulator) enter(id int32, event int) {
	if event < len(ac.orders) {
		if o := ac.orders[event]; o != nil && o.tree != nil {
			ac.insert(o, id)
			return
		}
	}
	ac.made = append(ac.made, id)
}

// findNoMap returns the accumulator entry of the tree entry perf's
// search for the address of entry id finds, made when it finds none: id
// itself the first time, after that an entry of the same key with the
// next dup and the level of the frame or sample that made it.
func (ac *accumulator) findNoMap(o *noMapOrder, id int32, level uint8) int32 {
	n := int32(o.tree.len())
	if int(id) >= len(o.last) {
		o.last = append(o.last, make([]lastSearch, int(id)+1-len(o.last)+len(o.last)/2)...)
	}
	if l := o.last[id]; l.moves == o.tree.tree.Moves()+1 {
		return o.ids[l.found]
	}
	te := o.tree.find(treeKey{a: ac.keys[id].Addr, noMap: true})
	if te == n { // made
		pe := id
		if ac.counts[id].inTree {
			o.dups[id]++
			k := ac.keys[id]
			k.dup = o.dups[id]
			k.Kernel, k.Hyper = unpackLevel(level)
			pe = ac.newEntry(k)
			ac.counts[pe].noMap = true
		}
		ac.counts[pe].inTree = true
		o.ids = append(o.ids, pe)
	}
	o.last[id] = lastSearch{o.tree.tree.Moves() + 1, te}
	return o.ids[te]
}

// rankKey is what tells apart the rows of addresses outside every map.
type rankKey struct {
	addr       uint64
	event, dup int32
}

func rankKeyOf(k Key) rankKey { return rankKey{k.Addr, int32(k.Event), k.dup} }

// noMapRanks returns, for the trees made, each row of an address outside
// every map by its rank in its tree's
// in-order walk, the order perf's output sort keeps for rows it finds
// equal; nil when no tree was needed.
func (ac *accumulator) noMapRanks() map[rankKey]int32 {
	var ranks map[rankKey]int32
	for _, o := range ac.orders {
		if o == nil || o.tree == nil {
			continue
		}
		if ranks == nil {
			ranks = make(map[rankKey]int32)
		}
		i := int32(0)
		for n := o.tree.tree.First(); n != nil; n = n.Next() {
			if id := o.ids[n.Value]; ac.counts[id].noMap {
				ranks[rankKeyOf(ac.keys[id])] = i
			}
			i++
		}
	}
	return ranks
}

// selfColumn returns the children table's Self column when entries made
// for samples' own addresses took some of bySym's counts (movedSelf):
// bySym with those moved to their rows; nil when none did.
func (ac *accumulator) selfColumn(bySym map[Key]Counts) map[Key]Counts {
	if ac.movedSelf == nil {
		return nil
	}
	self := make(map[Key]Counts, len(bySym)+len(ac.movedSelf))
	for k, c := range bySym {
		self[k] = c
	}
	for pe, moved := range ac.movedSelf {
		k := ac.keys[pe]
		k.dup = 0
		// The sample's key has the sample's level, which the entry,
		// first made for a callchain, may not.
		for _, lv := range [][2]bool{{k.Kernel, k.Hyper}, {false, false}, {true, false}, {false, true}} {
			k.Kernel, k.Hyper = lv[0], lv[1]
			if c, ok := self[k]; ok {
				c.Samples -= moved.Samples
				c.Period -= moved.Period
				self[k] = c
				k.dup = ac.keys[pe].dup
				self[k] = moved
				break
			}
		}
	}
	return self
}

// packLevel packs an entry's level for cumulate's list of them.
func packLevel(kernel, hyper bool) uint8 {
	var l uint8
	if kernel {
		l |= 1
	}
	if hyper {
		l |= 2
	}
	return l
}

func unpackLevel(l uint8) (kernel, hyper bool) { return l&1 != 0, l&2 != 0 }

// entryTree is perf's tree of a children table's hist entries by dso,sym
// (hists->entries_in), searched as hists__findnew_entry searches, its
// entries kept small: a search for an address reads a node and its key
// at each level, adjacent in memory. (histTree holds what any sort key
// compares, 112 bytes an entry: on the -a -g recording, with 32 k
// entries and 0.9 M searches, this one's searches took half the time.)
type entryTree struct {
	tree  rbtree.Tree
	nodes [][]treeNode // in blocks, which do not move
	n     int
	names map[string]int32 // the DSOs' short names, by id
	short []string
}

// treeNode is a node and what perf's comparison reads of its entry.
type treeNode struct {
	node rbtree.Node
	key  treeKey
}

// treeKey is what sort__dso_cmp and sort__sym_cmp read of an entry: its
// DSO's short name (an id into short) unless noMap; with sym, its
// symbol's start (a) and end (b), else its address (a). An inlined
// function's entry compares as its symbol's: the tree is then replayed
// whole (accumulator.replay), and these answers are not used.
type treeKey struct {
	a, b  uint64
	dso   int32
	noMap bool
	sym   bool
}

const treeBlock = 1024

func (t *entryTree) len() int { return t.n }

func (t *entryTree) key(i int32) *treeKey { return &t.nodes[i/treeBlock][i%treeBlock].key }

// find returns the entry perf's search for k ends in, made (and linked
// where the search ended) if it finds none.
func (t *entryTree) find(k treeKey) int32 {
	var parent *rbtree.Node
	left := false
	for n := t.tree.Root(); n != nil; {
		parent = n
		c := t.compare(t.key(n.Value), &k)
		if c == 0 {
			return n.Value
		}
		if c < 0 {
			n, left = n.Left(), true
		} else {
			n, left = n.Right(), false
		}
	}
	if t.n%treeBlock == 0 {
		t.nodes = append(t.nodes, make([]treeNode, treeBlock))
	}
	tn := &t.nodes[t.n/treeBlock][t.n%treeBlock]
	tn.key, tn.node.Value = k, int32(t.n)
	t.n++
	t.tree.Link(&tn.node, parent, left)
	return tn.node.Value
}

// compare is hist_entry__cmp(l, r) by dso,sym: histTree.compare's
// dsoCmp and symCmp on treeKeys.
func (t *entryTree) compare(l, r *treeKey) int {
	if l.noMap || r.noMap {
		if c := nullCmp(!l.noMap, !r.noMap); c != 0 {
			return c
		}
	} else if l.dso != r.dso {
		if c := strings.Compare(t.short[r.dso], t.short[l.dso]); c != 0 {
			return c
		}
	}
	switch {
	case !l.sym && !r.sym:
		return cmp.Compare(int64(r.a-l.a), 0)
	case !l.sym || !r.sym:
		return nullCmp(l.sym, r.sym)
	case l.a != r.a:
		return cmp.Compare(int64(r.a-l.a), 0)
	}
	return cmp.Compare(int64(r.b-l.b), 0)
}

// treeKey returns entry id's treeKey in t.
func (ac *accumulator) treeKey(t *entryTree, id int32) treeKey {
	k := ac.keys[id]
	if k.DSO == symbols.Unknown {
		return treeKey{a: k.Addr, noMap: true}
	}
	short := ShortName(k.DSO, k.Kernel)
	d, ok := t.names[short]
	if !ok {
		d = int32(len(t.short))
		t.names[short] = d
		t.short = append(t.short, short)
	}
	if k.Sym == symbols.Unknown {
		return treeKey{a: k.Addr, dso: d}
	}
	return treeKey{a: k.Addr, b: ac.meta[id].end, dso: d, sym: true}
}

package attrib

import (
	"cmp"
	"slices"
	"strings"

	"github.com/kmapindex/kmapindex/ingest/machine"
	"github.com/kmapindex/kmapindex/ingest/rbtree"
	"github.com/kmapindex/kmapindex/ingest/symbols"
)

// histTree reproduces, for one event, perf report's tree of hist entries
// (hists->entries_in, hists__findnew_entry in util/hist.c) for sort keys
// whose comparison is not a consistent order: sym without dso. Then
// sort__sym_cmp tells two entries without a symbol apart by address
// alone, but an entry without a symbol from one with one by their DSOs'
// names first, so that a < b < c does not make a < c. perf's red-black
// tree, searched with that comparison sample by sample, then sometimes
// misses an entry equal to the sample and makes a second one (perf shows
// both rows), and its in-order walk, which orders the rows the output
// sort finds equal, is not sorted by any key. Both follow from the
// tree's shape, so the tree is rebuilt as perf builds it: one search per
// sample, an entry linked where the search ended, the kernel's
// rebalancing (package rbtree). (A cache of searches, valid until the
// tree changed, measured no faster: entries are made all along.)
//
// With the comm key, perf then collapses the entries into a second tree
// (hists__collapse_resort), which merges entries the first tree kept
// apart, by then with their final command names: see collapseTree.
type histTree struct {
	keys   []string // the sort keys, in order
	dsoKey bool     // one of them is dso
	// changes counts the entries that took the symbol they are inlined
	// into (foundFrom): searches made before may end elsewhere now.
	changes int32
	tree    rbtree.Tree
	entries []histEntry
	rows    []*row // each entry's row (rowCounter.add)
	// With a rowCache: each entry's node, the entries of each
	// command-name entry, and each DSO's spans of the addresses its
	// entries compare (see rowCache).
	nodes  []*rbtree.Node
	byComm map[*machine.CommEntry][]int32
	spans  map[spanGroup]*addrSpans
	// poisoned are the entries that may be out of place in the walk
	// (poison; nil until the first), npoisoned how many.
	poisoned  []bool
	npoisoned int
	// version counts the entries made, poisoned and changed in what
	// they compare (find). poisonEpoch counts the entries poisoned and
	// the rotations that raised a poisoned entry (rotated): the only ways
	// a path from the root gains a poisoned entry.
	version     uint32
	poisonEpoch uint32
}

// histEntry is what perf's sort keys compare of a hist entry (and of the
// sample it is searched for).
type histEntry struct {
	tid, cpu int32
	// comm is the command-name entry of the entry's thread when it was
	// made (he->comm), which a later COMM may rename: perf compares the
	// name it has at the time of the comparison.
	comm *machine.CommEntry
	// noMap: the entry has no map (sort__dso_cmp's NULL); else dso is
	// its DSO's short name.
	noMap bool
	dso   string
	// sym: it has a symbol, dsoPath's at start..end (its identity);
	// else ip is its address (he->ip).
	sym        bool
	dsoPath    string
	start, end uint64
	ip         uint64
	// inlined: the symbol is an inlined function's, named name, which
	// perf makes spanning the symbol it is inlined into (a children
	// table's callchain entries only).
	inlined bool
	name    string
	// base is an inlined function's symbol's name (the symbol it is
	// inlined into); owner tells apart the maps a children table's
	// entries are made in (replay): perf's entry found from another map
	// takes that map's symbol at its start, which for an inline symbol
	// is the one it is inlined into.
	base  string
	owner int32
	based bool // an inline symbol's entry that took base's (foundFrom)
}

// keyEntry returns what perf's dso and sym keys compare of an entry of
// key k (see Key) whose DSO's short name is short (unused without a map),
// whose symbol ends at end, an inlined function's ("name (inlined)") if
// inlined. The other keys' fields are the caller's.
func keyEntry(k Key, short string, end uint64, inlined bool) histEntry {
	var e histEntry
	if k.DSO == symbols.Unknown {
		e.noMap = true
	} else {
		e.dso = short
	}
	if k.Sym == symbols.Unknown {
		e.ip = k.Addr
		return e
	}
	e.sym, e.dsoPath, e.start, e.end, e.name = true, k.DSO, k.Addr, end, k.Sym
	if inlined {
		e.inlined, e.name = true, bareSym(k.Sym)
	}
	return e
}

func newHistTree(keys []string) *histTree {
	return &histTree{keys: keys, dsoKey: slices.Contains(keys, SortDSO)}
}

// histTreeApplies reports whether perf's tree of hist entries can keep
// apart entries its keys find equal, so that a histTree is needed: by
// sym without dso, whose comparison is inconsistent; by sym in a
// children table, whose callchains' addresses outside every map compare
// inconsistently when 2^63 or more apart (see noMapOrder); and by comm,
// whose entries a thread's first COMM renames in place (their rows are
// the collapsed entries, each with its first entry's level and mark).
func histTreeApplies(keys []string, children bool) bool {
	sym := slices.Contains(keys, SortSym)
	return sym && (children || !slices.Contains(keys, SortDSO)) || slices.Contains(keys, SortComm)
}

// foundFrom applies hists__findnew_entry's map update to entry id, found
// for an entry from the maps owner tells apart: found from other maps,
// it takes their symbol at its symbol's start, which for an inline
// symbol (of known base) is the one it is inlined into (counted in
// h.changes).
func (h *histTree) foundFrom(id, owner int32) (changed bool) {
	he := &h.entries[id]
	if he.owner == owner {
		return false
	}
	he.owner = owner
	if he.sym && he.inlined && he.base != "" {
		he.inlined, he.name, he.based = false, he.base, true
		h.changes++
		return true
	}
	return false
}

// ownerOf is the owner (execs.owner) of the maps an entry resolved in
// kernel mode or not was found in: the kernel's are one for all
// processes.
func ownerOf(kernel bool, user int32) int32 {
	if kernel {
		return -1
	}
	return user
}

// find returns the entry the sample e falls in, made if perf's search
// finds none: hists__findnew_entry, which compares each entry on its path
// with the sample (hist_entry__cmp(he, entry)) and goes left below zero.
// An entry found takes the sample's map (perf updates he->ms.map when it
// differs), which for an entry without a symbol can change its DSO, and
// for one of another map's its symbol (foundFrom).
func (h *histTree) find(e histEntry) int32 {
	found, parent, left := h.search(&h.tree, &e)
	if found >= 0 {
		he := &h.entries[found]
		if he.noMap != e.noMap || he.dso != e.dso {
			he.noMap, he.dso = e.noMap, e.dso
			h.version++ // it compares otherwise now (rowCache.strict)
		}
		if h.foundFrom(found, e.owner) {
			h.version++
		}
		return found
	}
	if len(h.entries) == cap(h.entries) {
		h.entries = slices.Grow(h.entries, max(len(h.entries), 64)) // doubling (see accumulator.newEntry)
	}
	h.entries = append(h.entries, e)
	n := &rbtree.Node{Value: int32(len(h.entries) - 1)}
	misled := h.npoisoned > 0 && !h.cleanFrom(parent) // before Link rotates
	h.tree.Link(n, parent, left)
	h.version++
	if h.byComm != nil {
		h.nodes = append(h.nodes, n)
		h.byComm[e.comm] = append(h.byComm[e.comm], n.Value)
	}
	if misled && !h.inPlace(n, nil) {
		h.poison(n.Value)
	}
	return n.Value
}

// inPlace reports whether n's entry lies strictly between its nearest
// neighbours in the walk that are neither poisoned nor skipped.
func (h *histTree) inPlace(n *rbtree.Node, skip func(id int32) bool) bool {
	p, s := n.Prev(), n.Next()
	for p != nil && (h.isPoisoned(p.Value) || skip != nil && skip(p.Value)) {
		p = p.Prev()
	}
	for s != nil && (h.isPoisoned(s.Value) || skip != nil && skip(s.Value)) {
		s = s.Next()
	}
	e := &h.entries[n.Value]
	return (p == nil || h.compare(&h.entries[p.Value], e) > 0) && (s == nil || h.compare(e, &h.entries[s.Value]) > 0)
}

// poison marks entry id as one that may be out of place in the tree's
// walk (see rowCache): renamed out of place, or made out of place by a
// search that compared a poisoned entry.
func (h *histTree) poison(id int32) {
	if h.poisoned == nil {
		h.poisoned = make([]bool, len(h.entries), cap(h.entries))
	}
	for len(h.poisoned) < len(h.entries) {
		h.poisoned = append(h.poisoned, false)
	}
	if !h.poisoned[id] {
		h.poisoned[id] = true
		h.npoisoned++
		h.version++
		h.poisonEpoch++
	}
}

// rotated is the tree's Rotated hook (with a rowCache): a rotation gives
// the entry it raised as an ancestor to the entry it lowered and those
// below it on the side away from the raised one.
func (h *histTree) rotated(risen, _ *rbtree.Node) {
	if h.npoisoned > 0 && h.isPoisoned(risen.Value) {
		h.poisonEpoch++
	}
}

// isPoisoned reports whether entry id is poisoned.
func (h *histTree) isPoisoned(id int32) bool {
	return int(id) < len(h.poisoned) && h.poisoned[id]
}

// cleanFrom reports whether no entry from n up to the root is poisoned:
// a search that reaches n compared none.
func (h *histTree) cleanFrom(n *rbtree.Node) bool {
	for ; n != nil; n = n.Parent() {
		if h.isPoisoned(n.Value) {
			return false
		}
	}
	return true
}

// search looks for e in t as perf's trees of hist entries are searched:
// each entry on the path compared with e (hist_entry__cmp(he, entry), or
// the collapse's), left below zero. It returns the entry found equal, or
// -1 and where e would be linked.
func (h *histTree) search(t *rbtree.Tree, e *histEntry) (found int32, parent *rbtree.Node, left bool) {
	for n := t.Root(); n != nil; {
		parent = n
		c := h.compare(&h.entries[n.Value], e)
		if c == 0 {
			return n.Value, nil, false
		}
		if c < 0 {
			n, left = n.Left(), true
		} else {
			n, left = n.Right(), false
		}
	}
	return -1, parent, left
}

// compare is hist_entry__cmp(l, r): each key's se_cmp in turn (perf 6.1's
// util/sort.c), as signs.
func (h *histTree) compare(l, r *histEntry) int {
	for _, k := range h.keys {
		var c int
		switch k {
		case SortComm:
			c = strings.Compare(r.comm.Name, l.comm.Name) // sort__comm_cmp (and _collapse): strcmp(right, left)
		case SortPid:
			c = cmp.Compare(r.tid, l.tid) // sort__thread_cmp: right - left
		case SortCPU:
			c = cmp.Compare(r.cpu, l.cpu) // sort__cpu_cmp
		case SortDSO:
			c = dsoCmp(l, r)
		case SortSym:
			c = symCmp(l, r, h.dsoKey)
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// dsoCmp is sort__dso_cmp(l, r): _sort__dso_cmp(r's map, l's map), which
// orders a missing DSO first and compares short names (strcmp(r, l)).
func dsoCmp(l, r *histEntry) int {
	if l.noMap || r.noMap {
		return nullCmp(!l.noMap, !r.noMap)
	}
	return strings.Compare(r.dso, l.dso)
}

// nullCmp is cmp_null(l, r) for pointers that are non-NULL when l and r.
func nullCmp(l, r bool) int {
	switch {
	case !l && !r:
		return 0
	case !l:
		return -1
	}
	return 1
}

// symCmp is sort__sym_cmp: entries without symbols by address
// (_sort__addr_cmp: right - left, as a signed number); otherwise, without
// the dso key (dsoKey false), by DSO first (sort__dso_cmp), then
// _sort__sym_cmp: an entry without a symbol first, the same symbol
// equal; if either is inlined, by name (strcmp(left, right)), equal when
// the spans overlap (ends included); else by start, then end (right -
// left, signed).
func symCmp(l, r *histEntry, dsoKey bool) int {
	if !l.sym && !r.sym {
		return addrCmp(l.ip, r.ip)
	}
	if !dsoKey {
		if c := dsoCmp(l, r); c != 0 {
			return c
		}
	}
	if !l.sym || !r.sym {
		return nullCmp(l.sym, r.sym)
	}
	if l.dsoPath == r.dsoPath && l.start == r.start && l.end == r.end && l.inlined == r.inlined && l.name == r.name {
		return 0 // sym_l == sym_r
	}
	if l.inlined || r.inlined {
		if c := strings.Compare(l.name, r.name); c != 0 {
			return c
		}
		if l.start <= r.end && l.end >= r.start {
			return 0
		}
	}
	if l.start != r.start {
		return addrCmp(l.start, r.start)
	}
	return addrCmp(l.end, r.end)
}

// addrCmp is _sort__addr_cmp(l, r) as a sign: right - left as a signed
// number, an order only among addresses less than 2^63 apart.
func addrCmp(l, r uint64) int { return cmp.Compare(int64(r-l), 0) }

// collapseTree returns, for each entry, the entry perf keeps it in, and
// the tree of the entries kept, whose in-order walk (walkRanks) is the
// order perf's output sort keeps for rows it finds equal (output_resort
// inserts them in that order, equal ones to the right).
//
// Without the comm key perf keeps every entry, in the tree's in-order
// walk. With it (sort__need_collapse, the one key with se_collapse),
// hists__collapse_resort moves the entries in that walk's order into a
// second tree searched with the same comparison (comm's se_collapse is
// its se_cmp), by then with the final command names; an entry found equal
// merges into the one there (hists__collapse_insert_entry), and the
// second tree's in-order walk is the order kept.
func (h *histTree) collapseTree() (kept []int32, t *rbtree.Tree) {
	kept = make([]int32, len(h.entries))
	if !slices.Contains(h.keys, SortComm) {
		for n := h.tree.First(); n != nil; n = n.Next() {
			kept[n.Value] = n.Value
		}
		return kept, &h.tree
	}
	t = new(rbtree.Tree)
	nodes := make([]rbtree.Node, len(h.entries))
	for n := h.tree.First(); n != nil; n = n.Next() {
		kept[n.Value] = h.insertCollapsed(t, &nodes[n.Value], n.Value)
	}
	return kept, t
}

// walkRanks returns each entry's position in t's in-order walk (zero
// for those not in t).
func (h *histTree) walkRanks(t *rbtree.Tree) []int32 {
	ranks := make([]int32, len(h.entries))
	i := int32(0)
	for n := t.First(); n != nil; n = n.Next() {
		ranks[n.Value] = i
		i++
	}
	return ranks
}

// insertCollapsed is hists__collapse_insert_entry: it links entry id
// (its node n) into the collapsed tree t unless the search finds an
// entry equal to it, and returns the entry it is counted in.
func (h *histTree) insertCollapsed(t *rbtree.Tree, n *rbtree.Node, id int32) int32 {
	found, parent, left := h.search(t, &h.entries[id])
	if found >= 0 {
		return found
	}
	n.Value = id
	t.Link(n, parent, left)
	return id
}

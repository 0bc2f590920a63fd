package attrib

import (
	"cmp"
	"strings"

	"github.com/kmapindex/kmapindex/ingest/rbtree"
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
// rebalancing (package rbtree).
//
// Searches are cached by sample: the tree and its entries only change
// when an entry is made or takes a sample's map (gen, which starts at 1
// so that an empty cache slot never answers).
type histTree struct {
	keys    []string // the sort keys, in order
	hasDSO  bool     // dso is one of them: sort__sym_cmp leaves DSOs to it
	tree    rbtree.Tree
	entries []histEntry
	gen     uint64
	cache   *[1 << histCacheBits]histHit // nil: none (tests)
	rows    []RowKey                     // each entry's row (rowCounter.add)
	rowOf   []*row                       // and its counts
}

// histCacheBits sizes histTree.cache (16 Ki searches).
const histCacheBits = 14

// histEntry is what perf's sort keys compare of a hist entry (and of the
// sample it is searched for).
type histEntry struct {
	tid, cpu int32
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
}

// histHit is a search's answer: the entry e fell in while the tree was
// at generation gen.
type histHit struct {
	e     histEntry
	gen   uint64
	entry int32
}

// slot returns e's place in the cache: a direct-mapped array indexed by
// e's numbers (hashing its strings per sample cost as much as the
// search).
func (h *histTree) slot(e *histEntry) *histHit {
	x := e.ip ^ e.start*0x9e3779b97f4a7c15 ^ e.end<<17 ^ uint64(e.tid)<<32 ^ uint64(e.cpu)<<48 ^ uint64(len(e.dso))<<56 ^ uint64(len(e.dsoPath))<<40
	return &h.cache[(x*0xff51afd7ed558ccd)>>(64-histCacheBits)]
}

func newHistTree(keys []string) *histTree {
	h := &histTree{keys: keys, cache: new([1 << histCacheBits]histHit)}
	h.gen = 1
	for _, k := range keys {
		h.hasDSO = h.hasDSO || k == SortDSO
	}
	return h
}

// histTreeApplies reports whether perf's comparison by keys can be
// inconsistent, so that a histTree is needed: sym without dso. Views with
// comm are left out: perf collapses them into a second tree
// (hists__collapse_resort), which rowCounter.named models.
func histTreeApplies(keys []string) bool {
	sym, dso, comm := false, false, false
	for _, k := range keys {
		sym = sym || k == SortSym
		dso = dso || k == SortDSO
		comm = comm || k == SortComm
	}
	return sym && !dso && !comm
}

// find returns the entry the sample e falls in, made if perf's search
// finds none: hists__findnew_entry, which compares each entry on its path
// with the sample (hist_entry__cmp(he, entry)) and goes left below zero.
// An entry found takes the sample's map when its map differs (perf
// updates he->ms.map), which for an entry without a symbol can change
// its DSO.
func (h *histTree) find(e histEntry) int32 {
	if h.cache != nil {
		if hit := h.slot(&e); hit.gen == h.gen && hit.e == e {
			return hit.entry
		}
	}
	var parent *rbtree.Node
	left := false
	for n := h.tree.Root(); n != nil; {
		parent = n
		c := h.compare(&h.entries[n.Value], &e)
		if c == 0 {
			he := &h.entries[n.Value]
			if he.noMap != e.noMap || he.dso != e.dso {
				he.noMap, he.dso = e.noMap, e.dso
				h.gen++
			}
			h.remember(e, n.Value)
			return n.Value
		}
		if c < 0 {
			n, left = n.Left(), true
		} else {
			n, left = n.Right(), false
		}
	}
	h.entries = append(h.entries, e)
	n := &rbtree.Node{Value: int32(len(h.entries) - 1)}
	h.tree.Link(n, parent, left)
	h.gen++
	h.remember(e, n.Value)
	return n.Value
}

func (h *histTree) remember(e histEntry, entry int32) {
	if h.cache != nil {
		*h.slot(&e) = histHit{e, h.gen, entry}
	}
}

// compare is hist_entry__cmp(l, r): each key's se_cmp in turn (perf 6.1's
// util/sort.c), as signs.
func (h *histTree) compare(l, r *histEntry) int {
	for _, k := range h.keys {
		var c int
		switch k {
		case SortPid:
			c = cmp.Compare(r.tid, l.tid) // sort__thread_cmp: right - left
		case SortCPU:
			c = cmp.Compare(r.cpu, l.cpu) // sort__cpu_cmp
		case SortDSO:
			c = dsoCmp(l, r)
		case SortSym:
			c = h.symCmp(l, r)
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
// (_sort__addr_cmp: right - left, as a signed number); otherwise by DSO
// first when dso is not a key, then _sort__sym_cmp: an entry without a
// symbol first, the same symbol equal, else by start, then end (right -
// left, signed). Self entries are never inlined symbols, whose
// name-and-overlap rule is left out.
func (h *histTree) symCmp(l, r *histEntry) int {
	if !l.sym && !r.sym {
		return cmp.Compare(int64(r.ip-l.ip), 0)
	}
	if !h.hasDSO {
		if c := dsoCmp(l, r); c != 0 {
			return c
		}
	}
	if !l.sym || !r.sym {
		return nullCmp(l.sym, r.sym)
	}
	if l.dsoPath == r.dsoPath && l.start == r.start && l.end == r.end {
		return 0 // sym_l == sym_r
	}
	if l.start != r.start {
		return cmp.Compare(int64(r.start-l.start), 0)
	}
	return cmp.Compare(int64(r.end-l.end), 0)
}

// ranks returns each entry's position in the tree's in-order walk, the
// order perf's output sort keeps for rows it finds equal
// (output_resort inserts them in that order, equal ones to the right).
func (h *histTree) ranks() []int32 {
	r := make([]int32, len(h.entries))
	i := int32(0)
	for n := h.tree.First(); n != nil; n = n.Next() {
		r[n.Value] = i
		i++
	}
	return r
}

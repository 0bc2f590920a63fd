// Package symbols turns a (map, address) pair into a symbol name exactly as
// Linux perf 6.1 does for `perf script -F ip,sym,dso`.
//
// perf keeps each DSO's symbols in a red-black tree ordered by start
// address, fixes up zero sizes (symbols__fixup_end), drops all but one
// symbol per start address (symbols__fixup_duplicate, choose_best_symbol)
// and answers a lookup with symbols__find: walk down from the root and stop
// at the first symbol whose range [start, end) holds the address (a
// zero-size symbol holds only its start). This package reproduces those
// steps, including the tree's exact shape where ranges overlap, and then
// flattens the answer into a sorted array of address segments, so a
// [Table] lookup is one binary search and returns what perf would return
// for every address.
//
// Two kinds of tables are built:
//
//   - [Kernel] from /proc/kallsyms (perf's dso__load_kallsyms for a
//     kallsyms-only kernel, no kcore): the kernel table is looked up with
//     the sample IP itself (the kernel map is an identity map); module
//     tables with the module map's MapIP(ip), i.e. the offset from the
//     module's start.
//   - [ELF] and [ELFWithDebug] from user-space ELF files (perf's dso__load,
//     dso__load_sym, dso__synthesize_plt_symbols): looked up with
//     index.Map.MapIP(ip) of the file-backed map, i.e. ip - start + pgoff,
//     a file offset.
//
// A lookup that finds nothing is printed by perf as "[unknown]" (see
// [Unknown]); the address is still counted.
package symbols

import (
	"cmp"
	"debug/elf"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/rbtree"
	"github.com/kmapindex/kmapindex/internal/prefault"
)

// Unknown is how perf script prints a sample without a symbol.
const Unknown = "[unknown]"

// Symbol is one resolved symbol. Start and End are in the DSO's address
// space (what the table is keyed by); End is exclusive, and equal to Start
// for a zero-size symbol that perf matches only at its start.
type Symbol struct {
	Start, End uint64
	Name       string
	// Object says the symbol is data (STT_OBJECT: an ELF object, a
	// kallsyms D or B symbol), which perf report names with the sample's
	// offset in it ("name+0x10", _hist_entry__sym_snprintf).
	Object bool
}

// Offset returns addr - s.Start, the "+0x..." perf script prints with
// -F symoff.
func (s Symbol) Offset(addr uint64) uint64 { return addr - s.Start }

// String formats s as "name [start,end)".
func (s Symbol) String() string { return fmt.Sprintf("%s [%#x,%#x)", s.Name, s.Start, s.End) }

// sym is a Symbol with its name in the table's arena.
type sym struct {
	start, end uint64
	off, n     uint32 // the name: names[off:off+n&^nameBits], or in pages (see Table.pages)
}

// objectBit marks a sym.n of an object (Symbol.Object): names are
// shorter.
const objectBit = 1 << 31

// mangledBit marks a sym.n whose name is kept as the ELF file has it and
// printed as Demangle makes it, which the Table does at the name's first
// use: demangling every name of a DSO as it loads (as perf does) was two
// thirds of reading libstdc++'s table, and a report prints few of them.
const mangledBit = 1 << 30

// pltBit marks, with mangledBit, the name of a PLT entry (pltName).
const pltBit = 1 << 29

// extraBit marks a sym.n whose name is in the table's extra names, not
// in names.
const extraBit = 1 << 28

// nameBits are the bits of a sym.n that are not the name's length.
const nameBits = objectBit | mangledBit | pltBit | extraBit

// nameLen returns n, a name's length, with objectBit set for an object.
func nameLen(name string, object bool) uint32 {
	n := uint32(len(name))
	if object {
		n |= objectBit
	}
	return n
}

// Table answers address lookups for one DSO. The zero value and nil are
// empty tables. A Table is immutable and safe for concurrent use.
type Table struct {
	// names holds the names: a string table of the ELF file, or an arena
	// of them; extra those not in the string table (extraBit).
	names, extra string
	// pages, if not nil, hold the names instead: a kallsyms list's
	// (kallsyms.List.NamePages), a sym's off its List.NameRef.
	pages []string
	syms  []sym // the symbols perf keeps, in address order
	// Lookup segments: addresses in [bounds[i], bounds[i+1]) resolve to
	// syms[which[i]], or to nothing when which[i] < 0.
	bounds []uint64
	which  []int32
	// A bucket index over bounds for large tables: the segment holding
	// an address a in [lo, hi) is among bounds[buckets[k]] through
	// bounds[buckets[k+1]], k = (a-lo)>>shift, so a lookup binary-searches
	// a few entries instead of the whole table (whose 100k+ bounds do not
	// fit in cache). There are half as many buckets as bounds or more:
	// a 100k-symbol table's index takes 0.25-0.5 MB.
	lo, hi  uint64
	shift   uint
	buckets []uint32
	// demangled holds the printed names of the symbols whose sym.n has
	// mangledBit, by index, once made; nil when there are none.
	demangled []atomic.Pointer[string]
	// loadFailed says perf stopped loading the DSO's symbols (LoadFailed).
	loadFailed bool
}

// LoadFailed reports whether perf's dso__load failed after it had loaded
// the table's symbols: it stopped at an ELF symbol whose section it could
// not get (a .dynsym entry with a bad section index, as a BOLT-rewritten
// library has), keeping the symbols before it unfixed. perf then prints
// "Failed to open FILE, continuing without symbols", and the lookup that
// loaded the table (map__load's caller) finds no symbol; every later one
// finds the table's.
func (t *Table) LoadFailed() bool { return t != nil && t.loadFailed }

// setBounds sets the lookup segments and builds the bucket index.
func (t *Table) setBounds(bounds []uint64, which []int32) {
	t.bounds, t.which = bounds, which
	t.buckets = nil
	n := len(bounds)
	if n < 256 || uint64(n) > 1<<31 {
		return
	}
	t.lo, t.hi = bounds[1], bounds[n-1]
	t.shift = 0
	for (t.hi-t.lo)>>t.shift >= uint64(n) {
		t.shift++
	}
	nb := int((t.hi-t.lo)>>t.shift) + 1
	t.buckets = make([]uint32, nb+1)
	i := 0
	for k := range nb {
		a := t.lo + uint64(k)<<t.shift
		for i+1 < n && bounds[i+1] <= a {
			i++
		}
		t.buckets[k] = uint32(i)
	}
	t.buckets[nb] = uint32(n - 1)
}

// Len returns the number of symbols in the table.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	return len(t.syms)
}

func (t *Table) symbol(i int) Symbol {
	s := t.syms[i]
	n, object := s.n&^nameBits, s.n&objectBit != 0
	if t.pages != nil {
		p, o := t.pages[s.off>>kallsyms.PageBits], s.off&(1<<kallsyms.PageBits-1)
		return Symbol{Start: s.start, End: s.end, Name: p[o : o+n], Object: object}
	}
	name := t.names
	if s.n&extraBit != 0 {
		name = t.extra
	}
	name = name[s.off : s.off+n]
	if s.n&mangledBit != 0 {
		name = t.demangledName(i, name, s.n&pltBit != 0)
	}
	return Symbol{Start: s.start, End: s.end, Name: name, Object: object}
}

// demangledName returns the printed name of symbol i, whose ELF name is
// raw (printedName), made at its first use.
func (t *Table) demangledName(i int, raw string, plt bool) string {
	if p := t.demangled[i].Load(); p != nil {
		return *p
	}
	d := printedName(raw, plt)
	t.demangled[i].Store(&d) // a racing goroutine stores the same name
	return d
}

// Symbols returns the symbols perf keeps for the DSO, in address order
// (equal starts occur only when perf stopped loading before it resolved
// duplicates: LoadFailed).
func (t *Table) Symbols() []Symbol {
	if t == nil {
		return nil
	}
	out := make([]Symbol, len(t.syms))
	for i := range t.syms {
		out[i] = t.symbol(i)
	}
	return out
}

// Find returns the symbol perf's symbols__find returns for addr, an address
// in the table's DSO address space, and false when perf finds none.
// O(log n).
func (t *Table) Find(addr uint64) (Symbol, bool) {
	i := t.FindIndex(addr)
	if i < 0 {
		return Symbol{}, false
	}
	return t.symbol(i), true
}

// FindIndex is Find returning the symbol's index in Symbols order, or -1.
func (t *Table) FindIndex(addr uint64) int {
	if t == nil || len(t.bounds) == 0 {
		return -1
	}
	// Last segment whose start is <= addr; bounds[0] == 0 always. A
	// hand-written search: slices.BinarySearch's generic compare costs
	// a third more on this hot path.
	lo, hi := 0, len(t.bounds)
	if t.buckets != nil && addr >= t.lo && addr < t.hi {
		k := (addr - t.lo) >> t.shift
		lo, hi = int(t.buckets[k]), int(t.buckets[k+1])+1
	}
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if t.bounds[mid] <= addr {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return int(t.which[lo-1])
}

// Symbol returns the symbol at index i (0 <= i < Len) in Symbols order.
func (t *Table) Symbol(i int) Symbol { return t.symbol(i) }

// IndexOf returns the index of the symbol equal to s (start, end and
// name), or -1.
func (t *Table) IndexOf(s Symbol) int {
	if t == nil {
		return -1
	}
	i, _ := slices.BinarySearchFunc(t.syms, s.Start, func(x sym, start uint64) int { return cmp.Compare(x.start, start) })
	for ; i < len(t.syms) && t.syms[i].start == s.Start; i++ {
		if x := t.symbol(i); x == s {
			return i
		}
	}
	return -1
}

// IsObject reports whether the symbol at index i is an object
// (Symbol.Object), without making its Symbol.
func (t *Table) IsObject(i int) bool { return t.syms[i].n&objectBit != 0 }

// Name returns the symbol name perf script prints for addr: the name, or
// [Unknown].
func (t *Table) Name(addr uint64) string {
	if s, ok := t.Find(addr); ok {
		return s.Name
	}
	return Unknown
}

// entry is a symbol while a table is being built (perf's struct symbol).
type entry struct {
	start, end uint64
	name       string // for kallsyms: with the "\t[module]" tag, as perf keeps it until the split
	binding    uint8
	object     bool // STT_OBJECT (Symbol.Object)
	// mangled says name is the ELF file's, printed as printedName makes
	// it (see mangledBit); plt that it names a PLT entry.
	mangled, plt bool
	ref          uint32 // for kallsyms: the name's List.NameRef
}

// ELF symbol bindings, as perf stores them in struct symbol.
const (
	bindLocal  = 0
	bindGlobal = 1
	bindWeak   = 2
)

// builder replays perf's operations on a DSO's symbol tree (struct
// dso.symbols, ordered by start), in package rbtree's copy of the
// kernel's red-black tree. perf searches it with symbols__find, which
// stops at the first node on the search path whose range holds the
// address: when ranges overlap (a synthesised @plt symbol inside a
// zero-size symbol extended by symbols__fixup_end, a hand-written
// assembly function nested in another) the answer depends on the tree's
// shape, which an interval index does not keep
// (TestRBTreeDivergesFromInterval).
type builder struct {
	syms    []entry
	tree    rbtree.Tree
	printed printedNames // fixupDuplicate's
	// nodes is a slab the tree's nodes come from, nodeChunk at a time:
	// one allocation per node was a sixth of loading a Go binary's
	// 29 k symbols.
	nodes []rbtree.Node
	// nameTables are string tables the entries' names may be substrings
	// of (elfSymbols'): table keeps a name where it is rather than copy
	// it (/usr/bin/node: 6.6 MB of its 7.5 MB .strtab are the names
	// kept).
	nameTables []nameTable
}

// nameTable is a string table whose bytes names are substrings of, and
// its section.
type nameTable struct {
	section *elf.Section
	names   string
}

// nameTableOf returns the bytes of the string table sec when b holds them.
func (b *builder) nameTableOf(sec *elf.Section) (string, bool) {
	for _, t := range b.nameTables {
		if t.section == sec && sec != nil {
			return t.names, true
		}
	}
	return "", false
}

// nodeChunk is how many tree nodes builder allocates at once.
const nodeChunk = 1024

// grow makes room for n more symbols.
func (b *builder) grow(n int) {
	b.syms = slices.Grow(b.syms, n)
}

// insert is __symbols__insert: descend left when the new start is below
// the node's, else right (so equal starts keep insertion order).
func (b *builder) insert(e entry) {
	b.syms = append(b.syms, e)
	if len(b.nodes) == cap(b.nodes) {
		b.nodes = make([]rbtree.Node, 0, nodeChunk)
	}
	b.nodes = append(b.nodes, rbtree.Node{Value: int32(len(b.syms) - 1)})
	n := &b.nodes[len(b.nodes)-1]
	var parent *rbtree.Node
	left := false
	for p := b.tree.Root(); p != nil; {
		parent = p
		if e.start < b.syms[p.Value].start {
			p, left = p.Left(), true
		} else {
			p, left = p.Right(), false
		}
	}
	b.tree.Link(n, parent, left)
}

// insertAll inserts es as perf inserts them one by one, in order, when the
// answers can depend on its tree's shape. When the symbols do not overlap
// (with fixedUp, once symbols__fixup_end and symbols__fixup_duplicate,
// which the caller runs next, have made them what perf keeps), every
// search tree of them answers alike, and they go in sorted by start
// instead, equal starts in their order: the tree's in-order walk, which
// the fix-ups and the table follow, is the same, and each insertion
// descends the tree's right edge, in the cache, where a vmlinux's 141 k
// symbols in symbol-table order missed it at every level (200 ms a run in
// a CPU profile). It reports whether they went in sorted.
func (b *builder) insertAll(es []entry, fixedUp bool) (sortedIn bool) {
	b.grow(len(es))
	prefault.Slice(b.syms[len(b.syms):])
	// The order by start, equal starts by index: a stable sort of 16-byte
	// keys (sorting the entries stably took 120 ms for 140 k).
	keys := make([]startKey, len(es))
	for i := range es {
		keys[i] = startKey{es[i].start, int32(i)}
	}
	slices.SortFunc(keys, func(x, y startKey) int {
		if c := cmp.Compare(x.start, y.start); c != 0 {
			return c
		}
		return cmp.Compare(x.i, y.i)
	})
	if sortedIn = apart(es, keys, fixedUp); sortedIn {
		for _, k := range keys {
			b.insert(es[k.i])
		}
		return true
	}
	for i := range es {
		b.insert(es[i])
	}
	return false
}

// startKey is the position i of a symbol starting at start.
type startKey struct {
	start uint64
	i     int32
}

// apart reports whether the symbols es, in the order of keys (by start,
// equal starts in insertion order), neither overlap nor share a start;
// with fixedUp, once fixupEnd (not for kallsyms) and fixupDuplicate have
// made them what perf keeps (fixedUpFold, on copies).
func apart(es []entry, keys []startKey, fixedUp bool) bool {
	if !fixedUp {
		for k := 1; k < len(keys); k++ {
			p, e := &es[keys[k-1].i], &es[keys[k].i]
			if p.end > e.start || p.start == e.start {
				return false
			}
		}
		return true
	}
	ok := true
	var prev entry
	havePrev := false
	f := fixedUpFold{fn: func(e entry) {
		if havePrev && prev.end > e.start {
			ok = false
		}
		prev, havePrev = e, true
	}}
	for _, k := range keys {
		f.add(es[k.i])
	}
	f.finish()
	return ok
}

// fixupEnd is symbols__fixup_end (perf 6.1, after 5.18's "Update
// symbols__fixup_end()"): a zero-size symbol ends where the next one
// starts, except that for kallsyms the last symbol before a change between
// kernel and module symbols (a '[' in the name) ends at
// roundup(start+4096, 4096); the very last symbol, if zero-size, ends at
// roundup(start, 4096) + 4096.
func (b *builder) fixupEnd(isKallsyms bool) {
	prevNode := b.tree.First()
	if prevNode == nil {
		return
	}
	curr := &b.syms[prevNode.Value]
	for nd := prevNode.Next(); nd != nil; nd = nd.Next() {
		prev := curr
		curr = &b.syms[nd.Value]
		if prev.end == prev.start {
			if isKallsyms && strings.Contains(prev.name, "[") != strings.Contains(curr.name, "[") {
				prev.end = roundup4K(prev.end + 4096)
			} else {
				prev.end = curr.start
			}
		}
	}
	if curr.end == curr.start {
		curr.end = roundup4K(curr.start) + 4096
	}
}

func roundup4K(x uint64) uint64 { return (x + 4095) &^ 4095 }

// fixupDuplicate is symbols__fixup_duplicate: of the symbols sharing a
// start, keep the one choose_best_symbol prefers, erasing the others from
// the tree in perf's order.
func (b *builder) fixupDuplicate() {
	if b.printed == nil {
		b.printed = make(printedNames)
	}
	nd := b.tree.First()
	for nd != nil {
		curr := nd
		for {
			nd = curr.Next()
			if nd == nil {
				return
			}
			if b.syms[curr.Value].start != b.syms[nd.Value].start {
				break
			}
			if chooseBest(&b.syms[curr.Value], &b.syms[nd.Value], b.printed) {
				b.tree.Erase(nd)
				continue // compare curr with its new successor
			}
			nd = curr.Next()
			b.tree.Erase(curr)
			break
		}
	}
}

// chooseBest is choose_best_symbol (with the generic
// arch__choose_best_symbol): true keeps a, false keeps b. The names it
// demangles go through printed, if not nil.
func chooseBest(a, b *entry, printed printedNames) bool {
	la, lb := int64(a.end-a.start), int64(b.end-b.start)
	if lb == 0 && la > 0 {
		return true
	} else if la == 0 && lb > 0 {
		return false
	}
	wa, wb := a.binding == bindWeak, b.binding == bindWeak
	if wb && !wa {
		return true
	}
	if wa && !wb {
		return false
	}
	ga, gb := a.binding == bindGlobal, b.binding == bindGlobal
	if ga && !gb {
		return true
	}
	if gb && !ga {
		return false
	}
	if samePrintedName(a, b) {
		return true // neither is a SyS name: the rest compares equal names
	}
	a.demangle(printed)
	b.demangle(printed)
	ua, ub := underscores(a.name), underscores(b.name)
	if ub > ua {
		return true
	} else if ua > ub {
		return false
	}
	na, nb := cstrlen(a.name), cstrlen(b.name)
	if na > nb {
		return true
	} else if na < nb {
		return false
	}
	if strings.HasPrefix(a.name, "SyS") || strings.HasPrefix(a.name, "compat_SyS") {
		return false
	}
	return true
}

// samePrintedName reports whether a and b, neither demangled yet, print
// as one name that does not start with "SyS" or "compat_SyS", without
// demangling them: both the ELF file's same name, of the same kind,
// holding no "SyS" and no '$' (a Rust escape, which could spell it). A
// .dynsym repeats most of the .symtab's symbols, both loaded (perf 6.1's
// dso__load_sym): /usr/bin/node's 182 k symbols were demangled 126 k
// times for choose_best_symbol, 0.43 s of kbench's 1.07 s on a recording
// with samples in it (perf script: 0.66 s).
func samePrintedName(a, b *entry) bool {
	return a.mangled && b.mangled && a.plt == b.plt && a.name == b.name &&
		!strings.Contains(a.name, "SyS") && !strings.Contains(a.name, "$")
}

// demangle gives e its printed name, which choose_best_symbol compares,
// through printed if not nil.
func (e *entry) demangle(printed printedNames) {
	if e.mangled {
		e.name, e.mangled, e.plt = printed.of(e.name, e.plt), false, false
	}
}

// printedNames are the printed names fixupDuplicate made, by ELF name and
// kind. Once its first pass demangled a .symtab symbol (whose start
// another shares), the second compares the .dynsym's copy of it, already
// demangled, with the copy, not: /usr/bin/node's 25.8 k names demangled
// were 14.2 k different ones (BenchmarkELFTable/node 448 -> 372 ms).
type printedNames map[printedKey]string

type printedKey struct {
	raw string
	plt bool
}

// of is printedName, kept in m if not nil for the names a demangler
// parses (C++'s and Rust's, "_Z" and "_R"): the others, printed as they
// are, cost less than keeping (libc's symbols without it: 10 % fewer
// bytes allocated).
func (m printedNames) of(raw string, plt bool) string {
	if m == nil || !strings.HasPrefix(raw, "_Z") && !strings.HasPrefix(raw, "_R") {
		return printedName(raw, plt)
	}
	k := printedKey{raw, plt}
	s, ok := m[k]
	if !ok {
		s = printedName(raw, plt)
		m[k] = s
	}
	return s
}

// printedName is the name perf prints for the ELF symbol name raw, or for
// the PLT entry of that function.
func printedName(raw string, plt bool) string {
	if plt {
		return pltName(Demangle(raw))
	}
	return Demangle(raw)
}

func underscores(s string) int {
	n := 0
	for n < len(s) && s[n] == '_' {
		n++
	}
	return n
}

// cstrlen is strlen: a name read from a string table ends at its first NUL.
func cstrlen(s string) int {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return i
	}
	return len(s)
}

// find is symbols__find on the replayed tree.
func (b *builder) find(ip uint64) int32 {
	n := b.tree.Root()
	for n != nil {
		s := &b.syms[n.Value]
		switch {
		case ip < s.start:
			n = n.Left()
		case ip > s.end || (ip == s.end && ip != s.start):
			n = n.Right()
		default:
			return n.Value
		}
	}
	return -1
}

// table flattens the tree into a Table; keep, if not nil, filters the
// symbols stored (a filtered-out symbol still shadows addresses the tree
// search would resolve to it). It spends b: the tree is let go before
// names are copied, so that a large table's copies do not sit beside the
// tree's nodes (/usr/bin/node: 182 k of them).
func (b *builder) table(keep func(*entry) bool) *Table {
	// The symbols stored, and their names: b.syms holds the erased ones
	// too (/usr/bin/node: 182 k entries, 99 k kept, most of the others a
	// .dynsym's copies of .symtab symbols).
	count := 0
	inTable := make([]int, len(b.nameTables)) // bytes of names in each
	for nd := b.tree.First(); nd != nil; nd = nd.Next() {
		if e := &b.syms[nd.Value]; keep == nil || keep(e) {
			count++
			if k := b.nameTable(e.name); k >= 0 {
				inTable[k] += len(e.name)
			}
		}
	}
	// The names stay in the string table holding most of them, if they
	// are half of it or more; the others are copied.
	base := ""
	if k := maxIndex(inTable); k >= 0 && 2*inTable[k] >= len(b.nameTables[k].names) && uint64(len(b.nameTables[k].names)) < 1<<32 {
		base = b.nameTables[k].names
	}
	t := &Table{syms: make([]sym, 0, count), names: base}
	index := make([]int32, len(b.syms)) // builder index → table index, -1 for none
	for i := range index {
		index[i] = -1
	}
	mangled := false
	copied := 0
	for nd := b.tree.First(); nd != nil; nd = nd.Next() {
		e := &b.syms[nd.Value]
		if keep != nil && !keep(e) {
			continue
		}
		n := nameLen(e.name, e.object)
		if e.mangled {
			n |= mangledBit
			if e.plt {
				n |= pltBit
			}
			mangled = true
		}
		off, in := substringAt(e.name, base)
		if !in {
			off = copied
			copied += len(e.name)
			if base != "" {
				n |= extraBit
			}
		}
		index[nd.Value] = int32(len(t.syms))
		t.syms = append(t.syms, sym{start: e.start, end: e.end, off: uint32(off), n: n})
	}
	if mangled {
		t.demangled = make([]atomic.Pointer[string], len(t.syms))
	}
	switch {
	case len(t.syms) == 0:
	case keep != nil: // the filtered-out symbols shadow addresses too
		b.bounds(t, index)
	case !flatten(t) && !b.clusterBounds(t, index):
		b.bounds(t, index)
	}
	// The names to copy last, in table order, once the tree has gone.
	order := make([]int32, len(t.syms))
	for i, j := range index {
		if j >= 0 {
			order[j] = int32(i)
		}
	}
	index = nil
	b.tree, b.nodes, b.printed = rbtree.Tree{}, nil, nil
	var arena strings.Builder
	arena.Grow(copied) // one allocation: growing it doubled the names' copies
	for _, i := range order {
		if name := b.syms[i].name; base == "" || !isSubstring(name, base) {
			arena.WriteString(name)
		}
	}
	if base == "" {
		t.names = arena.String()
	} else {
		t.extra = arena.String()
	}
	return t
}

// nameTable returns the index of the string table in b.nameTables that
// name is a substring of, -1 for none.
func (b *builder) nameTable(name string) int {
	for k, tab := range b.nameTables {
		if isSubstring(name, tab.names) {
			return k
		}
	}
	return -1
}

// releaseNameTables lets go of the string tables whose bytes the tree's
// names use less than a quarter of (a .dynsym's, whose symbols are mostly
// the .symtab's again, and erased): the names left in one are copied,
// and the erased entries' names cleared, so that nothing refers to it.
func (b *builder) releaseNameTables() {
	if len(b.nameTables) == 0 {
		return
	}
	live := make([]bool, len(b.syms))
	used := make([]int, len(b.nameTables))
	for nd := b.tree.First(); nd != nil; nd = nd.Next() {
		live[nd.Value] = true
		if k := b.nameTable(b.syms[nd.Value].name); k >= 0 {
			used[k] += len(b.syms[nd.Value].name)
		}
	}
	kept := b.nameTables[:0]
	var released []string
	for k, tab := range b.nameTables {
		if 4*used[k] < len(tab.names) {
			released = append(released, tab.names)
		} else {
			kept = append(kept, tab)
		}
	}
	if len(released) == 0 {
		return
	}
	clear(b.nameTables[len(kept):])
	b.nameTables = kept
	b.printed = nil // its keys are names too; only fixupDuplicate uses it
	for i := range b.syms {
		e := &b.syms[i]
		for _, tab := range released {
			if isSubstring(e.name, tab) {
				if live[i] {
					e.name = strings.Clone(e.name)
				} else {
					e.name = ""
				}
				break
			}
		}
	}
}

// maxIndex returns the index of the largest of xs, -1 if xs is empty.
func maxIndex(xs []int) int {
	k := -1
	for i, x := range xs {
		if k < 0 || x > xs[k] {
			k = i
		}
	}
	return k
}

// substringAt returns the offset of s in table when s is one of its
// substrings by address (a name elfSymbols cut from it).
func substringAt(s, table string) (off int, ok bool) {
	if len(s) == 0 || len(s) > len(table) {
		return 0, len(s) == 0 && table != ""
	}
	// Hand-written address arithmetic: the names alias the table.
	p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	q := uintptr(unsafe.Pointer(unsafe.StringData(table)))
	if p < q || p-q > uintptr(len(table)-len(s)) {
		return 0, false
	}
	return int(p - q), true
}

// isSubstring reports whether s is one of table's substrings by address.
func isSubstring(s, table string) bool {
	_, ok := substringAt(s, table)
	return ok
}

// clusterBounds makes t's lookup segments, when every symbol of t is in
// b's tree, searching the tree only where symbols overlap. A symbol that
// overlaps no other (none starts inside it, it starts inside none, none
// shares its start) is what symbols__find answers for its addresses,
// whatever the tree's shape: a search that turned away from it would
// have passed a symbol holding its start. So the symbols, in address
// order, are cut into clusters of overlapping ones; the others' segments
// are flatten's, and each cluster's are bounds', from its own points
// (/usr/bin/node: 99 k symbols, a few hundred of them overlapping). It
// reports false, leaving t alone, for an end that wrapped past 2^64,
// which bounds handles.
func (b *builder) clusterBounds(t *Table, index []int32) bool {
	for _, x := range t.syms {
		if x.end < x.start {
			return false
		}
	}
	var seg segments
	seg.bounds = make([]uint64, 0, 2*len(t.syms)+1)
	seg.which = make([]int32, 0, 2*len(t.syms)+1)
	seg.add(0, -1)
	var pts []uint64
	for i := 0; i < len(t.syms); {
		// The cluster of t.syms[i:j]: each next symbol starts inside
		// one before it or shares its start.
		j, maxEnd := i+1, t.syms[i].end
		for j < len(t.syms) && (t.syms[j].start < maxEnd || t.syms[j].start == t.syms[j-1].start) {
			maxEnd = max(maxEnd, t.syms[j].end)
			j++
		}
		if j == i+1 {
			seg.walk1(t.syms[i], int32(i))
			i = j
			continue
		}
		pts = pts[:0]
		for _, x := range t.syms[i:j] {
			pts = append(pts, x.start, x.start+1, x.end, x.end+1)
		}
		b.search(&seg, pts, t.syms[i].start, index)
		i = j
	}
	t.setBounds(slices.Clip(seg.bounds), slices.Clip(seg.which))
	return true
}

// bounds makes t's lookup segments by searching b's tree at every point
// where symbols__find's answer can change; index maps b's entries to t's.
func (b *builder) bounds(t *Table, index []int32) {
	// symbols__find's comparisons change outcome only at a start, start+1,
	// an end or end+1, so the answer is constant between those points.
	pts := make([]uint64, 0, 4*len(t.syms)+1)
	pts = append(pts, 0)
	for nd := b.tree.First(); nd != nil; nd = nd.Next() {
		e := &b.syms[nd.Value]
		pts = append(pts, e.start, e.start+1, e.end, e.end+1)
	}
	seg := segments{bounds: make([]uint64, 0, len(pts)), which: make([]int32, 0, len(pts))}
	b.search(&seg, pts, 0, index)
	if cap(seg.bounds) > 2*len(seg.bounds) { // sized for every point: keep no more than growing would
		seg.bounds, seg.which = slices.Clone(seg.bounds), slices.Clone(seg.which)
	}
	t.setBounds(slices.Clip(seg.bounds), slices.Clip(seg.which))
}

// search adds to seg symbols__find's answer at each of pts from lo on,
// sorted (pts is sorted in place; repeats, and points below lo, which
// wrapped past 2^64 to 0, are searched once or not at all).
func (b *builder) search(seg *segments, pts []uint64, lo uint64, index []int32) {
	slices.Sort(pts)
	for k, p := range pts {
		if k > 0 && p == pts[k-1] || p < lo {
			continue
		}
		w := int32(-1)
		if n := b.find(p); n >= 0 {
			w = index[n]
		}
		seg.add(p, w)
	}
}

// flatten builds t's lookup segments directly when the symbols, in tree
// order, do not overlap (each ends at or before the next one's start, as
// after the kallsyms end fix-up): then symbols__find answers with the one
// symbol holding an address whatever the tree's shape, [start, end), or
// just start for a zero-size symbol. It reports false, leaving t alone,
// when symbols overlap and the tree walk is needed.
func flatten(t *Table) bool {
	for i := 1; i < len(t.syms); i++ {
		if t.syms[i-1].end > t.syms[i].start || t.syms[i-1].start == t.syms[i].start {
			return false
		}
	}
	// Two walks: the first counts the segments, so that the second
	// fills arrays of their exact size (kallsyms' symbols abut: about
	// one segment each, not the two each could need).
	var count, fill segments
	count.walk(t.syms)
	fill.bounds = make([]uint64, 0, count.n)
	fill.which = make([]int32, 0, count.n)
	prefault.Slice(fill.bounds)
	prefault.Slice(fill.which)
	fill.walk(t.syms)
	t.setBounds(fill.bounds, fill.which)
	return true
}

// segments collects the lookup segments of non-overlapping symbols; with
// nil arrays it only counts them.
type segments struct {
	bounds []uint64
	which  []int32
	n      int
	last   struct {
		p uint64
		w int32
	}
}

func (s *segments) add(p uint64, w int32) {
	if s.n > 0 && s.last.p == p {
		s.last.w = w
		if s.which != nil {
			s.which[s.n-1] = w
		}
		return
	}
	if s.n > 0 && s.last.w == w {
		return
	}
	s.last.p, s.last.w = p, w
	s.n++
	if s.bounds != nil {
		s.bounds, s.which = append(s.bounds, p), append(s.which, w)
	}
}

// walk adds the segments of syms, in address order, not overlapping.
func (s *segments) walk(syms []sym) {
	s.add(0, -1)
	for i, x := range syms {
		s.walk1(x, int32(i))
	}
}

// walk1 adds the segments of x, symbol i, which overlaps no other.
func (s *segments) walk1(x sym, i int32) {
	end := x.end
	switch {
	case end == x.start:
		end = x.start + 1 // a zero-size symbol holds its start only
	case end < x.start:
		return // an end that wrapped past 2^64: the walk never stops here
	}
	s.add(x.start, i)
	if end != 0 { // start == 2^64-1, zero-size: holds the top address
		s.add(end, -1)
	}
}

// Build returns the table perf builds from syms when it loads them the way
// it loads a symbol file without a PLT (perf's dso__load_perf_map, and the
// common core of every loader): insert in the given order, fix up zero
// sizes, resolve duplicates. A symbol with End == Start gets its end from
// the next symbol. Binding is taken as global for all. It is meant for
// synthetic DSOs (JIT maps, tests).
func Build(syms []Symbol) *Table {
	var b builder
	for _, s := range syms {
		b.insert(entry{start: s.Start, end: s.End, name: s.Name, binding: bindGlobal, object: s.Object})
	}
	if len(syms) > 0 {
		b.fixupEnd(false)
		b.fixupDuplicate()
	}
	return b.table(nil)
}

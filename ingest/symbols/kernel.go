package symbols

import (
	"cmp"
	"slices"
	"strings"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/internal/prefault"
)

// entryTrampolineName is x86_64's ENTRY_TRAMPOLINE_NAME; maps__split_kallsyms
// drops kernel symbols of that name on x86_64.
const entryTrampolineName = "__entry_SYSCALL_64_trampoline"

// KernelTables is what perf 6.1 makes of /proc/kallsyms when it loads a
// kallsyms-only kernel (no vmlinux, no kcore): dso__load_kallsyms followed
// by maps__split_kallsyms.
type KernelTables struct {
	// Kernel holds the core kernel symbols. The kernel map is an identity
	// map: look up the sample IP itself.
	Kernel *Table
	// Modules holds one table per module map that received symbols, keyed
	// by the module name without brackets ("nf_tables"). Look up the module
	// map's MapIP(ip): the symbols were rebased with it
	// (ip - start + pgoff; pgoff is 0 for module maps).
	Modules map[string]*Table
	// Start and End are the kernel map's range after perf's
	// map__fixup_start and map__fixup_end: the first kernel symbol's start
	// and the last one's end. perf applies them when it loads the symbols,
	// i.e. after the first kernel sample has already found the map by the
	// recorded range.
	Start, End uint64
}

// Module returns the table of the module map whose DSO is dso ("[name]"
// or a .ko path), or nil.
func (kt *KernelTables) Module(dso string) *Table { return kt.Modules[index.ModuleName(dso)] }

// Kernel builds the kernel and module symbol tables from kallsyms lines
// (in file order), following perf 6.1 (tools/perf/util/symbol.c):
//
//  1. map__process_kallsym_symbol: keep types T, W, D, B in either case
//     (symbol_type__filter) and names not starting with '$'; each symbol is
//     zero-size, its binding weak for 'W', global for other upper case,
//     local otherwise (kallsyms2elf_binding). The name keeps its
//     "\t[module]" tag.
//  2. symbols__fixup_end(is_kallsyms=true), then symbols__fixup_duplicate
//     over all of them, kernel and module symbols together.
//  3. maps__split_kallsyms with delta 0 (kallsyms of the recording boot):
//     a tagged symbol moves to the module map whose DSO is "[tag]" among
//     modules (its start and end rebased with that map's MapIP); a tag
//     with no such map (including [bpf], [__builtin__ftrace]) drops the
//     symbol; x86_64's __entry_SYSCALL_64_trampoline is dropped; the rest
//     stays in the kernel table.
//
// modules are the kernel's module maps (DSO "[name]"), as in the
// machine's kernel maps; nil means none, and every module symbol is
// dropped. BPF programs get their symbols from KSYMBOL records, never from
// kallsyms: see [BPF].
//
// One perf detail is not modelled: a kernel symbol that follows module
// symbols in address order is put by perf into a new identity map
// "[kernel].N" starting at that symbol; here it stays in Kernel (same
// name, same address), and only the map's DSO name would differ. This
// never happens on x86_64, where modules lie above the kernel.
func Kernel(syms []kallsyms.Symbol, modules []index.Map) *KernelTables {
	return KernelFrom(kallsyms.NewList(syms), modules, KernelOptions{})
}

// KernelOptions are the state of the recording that maps__split_kallsyms
// depends on besides the module maps.
type KernelOptions struct {
	// Loaded reports the module DSOs (by module name without brackets)
	// already loaded, from their files and so with no symbols, before
	// the kernel's symbols. The split drops the first symbol of such a
	// module each time its walk in address order enters the module from
	// another map (perf checks the DSO's loaded flag only when curr_map
	// changes) and moves the rest in as usual.
	Loaded func(module string) bool
	// Delta is the kernel's relocation between the recording and the
	// kallsyms file (kallsyms__delta: the reference symbol's address in
	// kallsyms minus its address in the recording's kernel MMAP); it is
	// subtracted from every kernel symbol, not from module symbols.
	Delta uint64
}

// KernelFrom is Kernel over a kallsyms list, for a recording in the
// state opts describes.
func KernelFrom(l *kallsyms.List, modules []index.Map, opts KernelOptions) *KernelTables {
	if kt, ok := kernelSorted(l, modules, opts); ok {
		return kt
	}
	return kernelTree(l, modules, opts)
}

// isKept reports whether perf keeps kallsyms symbol i
// (map__process_kallsym_symbol).
func isKept(l *kallsyms.List, i int) bool {
	return kallsymsTypeFilter(l.Type(i)) && !strings.HasPrefix(l.Name(i), "$")
}

// kallsymsEntry is kallsyms symbol i as perf's struct symbol, zero-size.
func kallsymsEntry(l *kallsyms.List, i int) entry {
	a := l.Addr(i)
	ref, _ := l.NameRef(i)
	return entry{start: a, end: a, name: l.TaggedName(i), binding: kallsymsBinding(l.Type(i)), ref: ref, object: kallsymsObject(l.Type(i))}
}

// keptOrder returns the indices of the symbols perf keeps, in address
// order, equal starts in file order (the order of perf's tree walk: every
// kallsyms symbol starts with zero size). idx is nil when that order is
// the file's (as in a kallsyms without modules): walkFixedUp then walks
// the list itself. Sorting 4-byte indices rather than the symbols moves
// little.
func keptOrder(l *kallsyms.List) (idx []int32) {
	last := -1
	sorted := true
	for i := range l.Len() {
		if !isKept(l, i) {
			continue
		}
		if last >= 0 && l.Addr(last) > l.Addr(i) {
			sorted = false
			break
		}
		last = i
	}
	if sorted {
		return nil
	}
	idx = make([]int32, 0, l.Len())
	for i := range l.Len() {
		if isKept(l, i) {
			idx = append(idx, int32(i))
		}
	}
	slices.SortStableFunc(idx, func(a, b int32) int { return cmp.Compare(l.Addr(int(a)), l.Addr(int(b))) })
	return idx
}

// walkFixedUp calls fn with the kallsyms symbols perf keeps, in address
// order (idx from keptOrder; nil: the list's order), after
// symbols__fixup_end(is_kallsyms) and symbols__fixup_duplicate: a
// zero-size symbol ends where the next one starts, or at
// roundup(start+4096, 4096) before a change between kernel and module
// symbols ('[' in the name), the last at roundup(start, 4096) + 4096; of
// each run of equal starts, choose_best_symbol's pick (a fold over the
// run in order) is kept.
func walkFixedUp(l *kallsyms.List, idx []int32, fn func(entry)) {
	if idx == nil {
		walkInFileOrder(l, fn) // in order: keptOrder found it so
		return
	}
	f := fixedUpFold{isKallsyms: true, fn: fn}
	for _, i := range idx {
		f.add(kallsymsEntry(l, int(i)))
	}
	f.finish()
}

// walkInFileOrder is walkFixedUp over the list's order when the symbols
// perf keeps are in address order there; it stops, reporting false,
// at the first that is not.
func walkInFileOrder(l *kallsyms.List, fn func(entry)) bool {
	f := fixedUpFold{isKallsyms: true, fn: fn}
	last := -1
	for i := range l.Len() {
		if !isKept(l, i) {
			continue
		}
		if last >= 0 && l.Addr(last) > l.Addr(i) {
			return false
		}
		last = i
		f.add(kallsymsEntry(l, i))
	}
	f.finish()
	return true
}

// fixedUpFold is symbols__fixup_end (isKallsyms: with its rounding where
// kernel and module symbols meet) and then symbols__fixup_duplicate over
// symbols added in tree order: a zero-size symbol ends where the next one
// starts, the last at roundup(start, 4096) + 4096; of each run of equal
// starts, choose_best_symbol's pick (a fold over the run in order) goes
// to fn. finish ends the run.
type fixedUpFold struct {
	isKallsyms bool
	fn         func(entry)
	e, kept    entry // the symbol waiting for its successor; the run's pick
	eBracket   bool  // '[' in e's name (kallsyms)
	haveE      bool
	haveKept   bool
}

func (f *fixedUpFold) add(next entry) {
	nextBracket := f.isKallsyms && strings.IndexByte(next.name, '[') >= 0
	if f.haveE {
		if e := &f.e; e.end == e.start {
			if f.eBracket != nextBracket {
				e.end = roundup4K(e.end + 4096)
			} else {
				e.end = next.start
			}
		}
		f.pick()
	}
	f.e, f.eBracket, f.haveE = next, nextBracket, true
}

// pick folds e, its end fixed, into the run of equal starts.
func (f *fixedUpFold) pick() {
	switch {
	case f.haveKept && f.kept.start == f.e.start:
		if !chooseBest(&f.kept, &f.e, nil) {
			f.kept = f.e
		}
	default:
		if f.haveKept {
			f.fn(f.kept)
		}
		f.kept, f.haveKept = f.e, true
	}
}

func (f *fixedUpFold) finish() {
	if f.haveE {
		if e := &f.e; e.end == e.start {
			e.end = roundup4K(e.start) + 4096
		}
		f.pick()
		f.haveE = false
	}
	if f.haveKept {
		f.fn(f.kept)
		f.haveKept = false
	}
}

// kernelSorted computes Kernel without replaying perf's tree, which
// matters only for lookups among overlapping symbols: the end and
// duplicate fix-ups run over the symbols in address order
// (walkFixedUp), and the split takes the tagged symbols out. If the
// kernel table's symbols then overlap (the rounding at a kernel/module
// boundary can do that), it reports false and Kernel replays the tree.
func kernelSorted(l *kallsyms.List, modules []index.Map, opts KernelOptions) (*KernelTables, bool) {
	// The kernel's names stay in the list's pages (a copy was 2 MB).
	t := &Table{syms: make([]sym, 0, l.Untagged()), pages: l.NamePages()}
	prefault.Slice(t.syms) // 2.9 MB for 121k symbols: a first KernelFrom took 21 ms, 17 with this
	split := newSplitter(modules, opts.Loaded)
	add := func(e entry) {
		name, tag, isMod := strings.Cut(e.name, "\t")
		switch {
		case isMod:
			split.add(tag, name, e)
		case name == entryTrampolineName:
		default:
			split.kernel()
			t.syms = append(t.syms, sym{start: e.start - opts.Delta, end: e.end - opts.Delta, off: e.ref, n: nameLen(name, e.object)})
		}
	}
	// A list whose kept symbols are in address order (this machine's
	// /proc/kallsyms) is walked once; the first out of order starts over
	// in keptOrder's order (keptOrder's pass to find out first took a
	// third of the time).
	if !walkInFileOrder(l, add) {
		idx := keptOrder(l)
		t.syms = t.syms[:0]
		split = newSplitter(modules, opts.Loaded)
		walkFixedUp(l, idx, add)
	}
	if len(t.syms) > 0 && !flatten(t) {
		return nil, false
	}
	return split.tables(t), true
}

// splitter collects module symbols for maps__split_kallsyms.
type splitter struct {
	byName   map[string]index.Map
	builders map[string]*builder
	order    []string
	loaded   func(module string) bool // nil: none
	cur      string                   // the tag of perf's curr_map; "" for a kernel map
}

func newSplitter(modules []index.Map, loaded func(string) bool) *splitter {
	sp := &splitter{byName: make(map[string]index.Map, len(modules)), builders: map[string]*builder{}, loaded: loaded}
	for _, m := range modules {
		// maps__find_by_name compares the DSO's short name: "[name]"
		// also for a DSO named by a .ko path.
		short, _ := index.KmodName(m.DSO)
		if _, dup := sp.byName[short]; !dup {
			sp.byName[short] = m
		}
	}
	return sp
}

// add moves a symbol tagged [tag] to its module's table, rebased with the
// module map; a tag without a module map drops it.
func (sp *splitter) add(tag, name string, e entry) {
	m, ok := sp.byName[tag]
	if tag != sp.cur {
		if !ok {
			sp.cur = "" // curr_map = initial_map
			return
		}
		sp.cur = tag
		if sp.loaded != nil && sp.loaded(strings.TrimSuffix(strings.TrimPrefix(tag, "["), "]")) {
			return
		}
	}
	if !ok {
		return
	}
	mb := sp.builders[tag]
	if mb == nil {
		mb = &builder{}
		sp.builders[tag] = mb
		sp.order = append(sp.order, tag)
	}
	mb.insert(entry{start: m.MapIP(e.start), end: m.MapIP(e.end), name: name, binding: e.binding, object: e.object})
}

// kernel notes a kernel symbol: perf's curr_map leaves any module.
func (sp *splitter) kernel() { sp.cur = "" }

// tables returns the KernelTables with kernel as the kernel table.
func (sp *splitter) tables(kernel *Table) *KernelTables {
	kt := &KernelTables{Kernel: kernel, Modules: map[string]*Table{}}
	if n := len(kernel.syms); n > 0 {
		kt.Start, kt.End = kernel.syms[0].start, kernel.syms[n-1].end
	}
	for _, tag := range sp.order {
		kt.Modules[strings.TrimSuffix(strings.TrimPrefix(tag, "["), "]")] = sp.builders[tag].table(nil)
	}
	return kt
}

// kernelTree is Kernel replaying perf's symbol tree exactly.
func kernelTree(l *kallsyms.List, modules []index.Map, opts KernelOptions) *KernelTables {
	var b builder
	for i := range l.Len() {
		if isKept(l, i) {
			b.insert(kallsymsEntry(l, i))
		}
	}
	b.fixupEnd(true)
	b.fixupDuplicate()
	split := newSplitter(modules, opts.Loaded)
	// maps__split_kallsyms walks the tree in order, erasing every symbol
	// that leaves the kernel DSO.
	for nd := b.tree.First(); nd != nil; {
		nx := nd.Next()
		e := b.syms[nd.Value]
		name, tag, isMod := strings.Cut(e.name, "\t")
		switch {
		case isMod:
			b.tree.Erase(nd)
			split.add(tag, name, e)
		case name == entryTrampolineName:
			b.tree.Erase(nd)
		default:
			split.kernel()
			b.syms[nd.Value].start -= opts.Delta // in place: a uniform shift keeps the tree's order
			b.syms[nd.Value].end -= opts.Delta
		}
		nd = nx
	}
	return split.tables(b.table(nil))
}

func kallsymsTypeFilter(t byte) bool {
	switch t {
	case 'T', 't', 'W', 'w', 'D', 'd', 'B', 'b':
		return true
	}
	return false
}

// kallsymsObject is kallsyms2elf_type: every kept type but t and w (D and
// B, data) is STT_OBJECT.
func kallsymsObject(t byte) bool { return t|0x20 != 't' && t|0x20 != 'w' }

func kallsymsBinding(t byte) uint8 {
	switch {
	case t == 'W':
		return bindWeak
	case 'A' <= t && t <= 'Z':
		return bindGlobal
	}
	return bindLocal
}

// BPF returns the symbol table perf gives a BPF program's map when it
// processes the program's PERF_RECORD_KSYMBOL (machine__process_ksymbol):
// one symbol named after the map's DSO, [MapIP(Start), MapIP(Start)+len)
// = [Pgoff, Pgoff+Size()) for the map m. Look it up with m.MapIP(ip).
func BPF(m index.Map) *Table {
	var b builder
	start := m.MapIP(m.Start)
	b.insert(entry{start: start, end: start + m.Size(), name: m.DSO, binding: bindGlobal})
	return b.table(nil)
}

// Kcore builds the kernel DSO's symbol table as perf 6.1 does after it
// loaded kcore (maps__split_kallsyms_for_kcore): the kallsyms symbols,
// fixed up as for Kernel, each found in the kernel maps by its start
// (find, over the maps as dso__load_kcore left them): a symbol in no map
// is dropped; one in the kernel map or a kcore map loses its module tag,
// has its end clipped to the map's end and is rebased to the map's file
// offsets (start - map.Start + map.Pgoff). Every such map shares the
// kernel DSO, so one table serves them all: look up m.MapIP(ip). Symbols
// that land in a BPF program's map go to that program's DSO in perf and
// are left out here (the program's KSYMBOL symbol names it).
func Kcore(l *kallsyms.List, find func(addr uint64) (index.Map, bool)) *Table {
	idx := keptOrder(l)
	if t, ok := kcoreSorted(l, idx, find); ok {
		return t
	}
	return kcoreTree(l, idx, find)
}

// kcoreTree is Kcore replaying perf's tree of the symbols.
func kcoreTree(l *kallsyms.List, idx []int32, find func(addr uint64) (index.Map, bool)) *Table {
	var b builder
	b.grow(l.Len())
	kcoreWalk(l, idx, find, func(e entry, name string) {
		b.insert(entry{start: e.start, end: e.end, name: name, binding: e.binding, object: e.object})
	})
	return b.table(nil)
}

// kcoreWalk calls fn with the symbols Kcore keeps, in kallsyms address
// order, rebased to their map's file offsets, and each one's name
// without its module tag. Consecutive symbols tend to share a map: the
// last one found is tried first (the maps do not overlap).
func kcoreWalk(l *kallsyms.List, idx []int32, find func(addr uint64) (index.Map, bool), fn func(e entry, name string)) {
	var last index.Map
	walkFixedUp(l, idx, func(e entry) {
		m, ok := last, last.Contains(e.start)
		if !ok {
			if m, ok = find(e.start); !ok {
				return
			}
			last = m
		}
		if m.Kind != index.KindKernel && m.Kind != index.KindKcore {
			return
		}
		name, _, _ := strings.Cut(e.name, "\t")
		delta := m.Start - m.Pgoff
		start, end := e.start-delta, min(e.end, m.End)
		if end != 0 {
			end -= delta
		}
		e.start, e.end = start, end
		fn(e, name)
	})
}

// kcoreSorted is Kcore without replaying perf's tree, as kernelSorted is
// Kernel: the symbols (sorted by their rebased starts, stably, when the
// maps' file offsets do not follow their addresses) go straight into a
// flat table, their names left in the list's pages. It reports false
// when they overlap and the tree is needed. Replaying it took 130 ms of
// a 13.6 k-sample report with kcore, most of it growing the builder's
// slice in fresh memory.
func kcoreSorted(l *kallsyms.List, idx []int32, find func(addr uint64) (index.Map, bool)) (*Table, bool) {
	t := &Table{syms: make([]sym, 0, l.Len()), pages: l.NamePages()}
	prefault.Slice(t.syms)
	sorted := true
	kcoreWalk(l, idx, find, func(e entry, name string) {
		if n := len(t.syms); n > 0 && t.syms[n-1].start > e.start {
			sorted = false
		}
		t.syms = append(t.syms, sym{start: e.start, end: e.end, off: e.ref, n: nameLen(name, e.object)})
	})
	if !sorted {
		slices.SortStableFunc(t.syms, func(a, b sym) int { return cmp.Compare(a.start, b.start) })
	}
	if len(t.syms) > 0 && !flatten(t) {
		return nil, false
	}
	return t, true
}

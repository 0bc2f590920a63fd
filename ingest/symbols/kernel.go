package symbols

import (
	"cmp"
	"slices"
	"strings"
	"unicode"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
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
	if kt, ok := kernelSorted(syms, modules); ok {
		return kt
	}
	return kernelTree(syms, modules)
}

// kallsymsEntries returns the symbols perf keeps from kallsyms lines, in
// file order (map__process_kallsym_symbol).
func kallsymsEntries(syms []kallsyms.Symbol) []entry {
	out := make([]entry, 0, len(syms))
	for _, s := range syms {
		if !kallsymsTypeFilter(s.Type) || strings.HasPrefix(s.Name, "$") {
			continue
		}
		name := s.Name
		if s.Module != "" {
			name += "\t[" + s.Module + "]"
		}
		out = append(out, entry{start: s.Addr, end: s.Addr, name: name, binding: kallsymsBinding(s.Type)})
	}
	return out
}

// kernelSorted computes Kernel without replaying perf's tree, which
// matters only for lookups among overlapping symbols. Every kallsyms
// symbol starts with zero size, so the tree's in-order walk is the
// symbols sorted by start, equal starts in file order; the end fix-up and
// the duplicate fix-up (a fold keeping choose_best_symbol's pick of each
// run of equal starts) then run over that order, and the split takes the
// tagged symbols out. If the kernel table's symbols then overlap (the
// rounding at a kernel/module boundary can do that), it reports false and
// Kernel replays the tree.
func kernelSorted(syms []kallsyms.Symbol, modules []index.Map) (*KernelTables, bool) {
	es := kallsymsEntries(syms)
	slices.SortStableFunc(es, func(a, b entry) int { return cmp.Compare(a.start, b.start) })
	for i := 0; i+1 < len(es); i++ { // symbols__fixup_end(is_kallsyms)
		prev, curr := &es[i], &es[i+1]
		if prev.end == prev.start {
			if strings.Contains(prev.name, "[") != strings.Contains(curr.name, "[") {
				prev.end = roundup4K(prev.end + 4096)
			} else {
				prev.end = curr.start
			}
		}
	}
	if n := len(es); n > 0 && es[n-1].end == es[n-1].start {
		es[n-1].end = roundup4K(es[n-1].start) + 4096
	}
	kept := es[:0] // symbols__fixup_duplicate
	for _, e := range es {
		if n := len(kept); n > 0 && kept[n-1].start == e.start {
			if !chooseBest(&kept[n-1], &e) {
				kept[n-1] = e
			}
			continue
		}
		kept = append(kept, e)
	}
	var kernel builder
	split := newSplitter(modules)
	for _, e := range kept {
		name, tag, isMod := strings.Cut(e.name, "\t")
		switch {
		case isMod:
			split.add(tag, name, e)
		case name == entryTrampolineName:
		default:
			kernel.syms = append(kernel.syms, e)
		}
	}
	t := &Table{}
	var arena strings.Builder
	for _, e := range kernel.syms {
		t.syms = append(t.syms, sym{start: e.start, end: e.end, off: uint32(arena.Len()), n: uint32(len(e.name))})
		arena.WriteString(e.name)
	}
	t.names = arena.String()
	if len(t.syms) > 0 && !kernel.flatten(t) {
		return nil, false
	}
	return split.tables(t), true
}

// splitter collects module symbols for maps__split_kallsyms.
type splitter struct {
	byName   map[string]index.Map
	builders map[string]*builder
	order    []string
}

func newSplitter(modules []index.Map) *splitter {
	sp := &splitter{byName: make(map[string]index.Map, len(modules)), builders: map[string]*builder{}}
	for _, m := range modules {
		if _, dup := sp.byName[m.DSO]; !dup {
			sp.byName[m.DSO] = m
		}
	}
	return sp
}

// add moves a symbol tagged [tag] to its module's table, rebased with the
// module map; a tag without a module map drops it.
func (sp *splitter) add(tag, name string, e entry) {
	m, ok := sp.byName[tag]
	if !ok {
		return
	}
	mb := sp.builders[tag]
	if mb == nil {
		mb = &builder{}
		sp.builders[tag] = mb
		sp.order = append(sp.order, tag)
	}
	mb.insert(entry{start: m.MapIP(e.start), end: m.MapIP(e.end), name: name, binding: e.binding})
}

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
func kernelTree(syms []kallsyms.Symbol, modules []index.Map) *KernelTables {
	var b builder
	for _, e := range kallsymsEntries(syms) {
		b.insert(e)
	}
	b.fixupEnd(true)
	b.fixupDuplicate()
	split := newSplitter(modules)
	// maps__split_kallsyms walks the tree in order, erasing every symbol
	// that leaves the kernel DSO.
	for nd := b.tree.first(); nd != nil; {
		nx := next(nd)
		e := b.syms[nd.sym]
		name, tag, isMod := strings.Cut(e.name, "\t")
		switch {
		case isMod:
			b.tree.erase(nd)
			split.add(tag, name, e)
		case name == entryTrampolineName:
			b.tree.erase(nd)
		}
		nd = nx
	}
	return split.tables(b.table(nil))
}

func kallsymsTypeFilter(t byte) bool {
	switch unicode.ToUpper(rune(t)) {
	case 'T', 'W', 'D', 'B':
		return true
	}
	return false
}

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

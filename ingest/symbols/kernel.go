package symbols

import (
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
	var b builder
	for _, s := range syms {
		if !kallsymsTypeFilter(s.Type) || strings.HasPrefix(s.Name, "$") {
			continue
		}
		name := s.Name
		if s.Module != "" {
			name += "\t[" + s.Module + "]"
		}
		b.insert(entry{start: s.Addr, end: s.Addr, name: name, binding: kallsymsBinding(s.Type)})
	}
	b.fixupEnd(true)
	b.fixupDuplicate()

	byName := make(map[string]index.Map, len(modules))
	for _, m := range modules {
		if _, dup := byName[m.DSO]; !dup {
			byName[m.DSO] = m
		}
	}
	kt := &KernelTables{Modules: map[string]*Table{}}
	modBuilders := map[string]*builder{}
	var order []string
	// maps__split_kallsyms walks the tree in order, erasing every symbol
	// that leaves the kernel DSO.
	for nd := b.tree.first(); nd != nil; {
		nx := next(nd)
		e := &b.syms[nd.sym]
		name, tag, isMod := strings.Cut(e.name, "\t")
		switch {
		case isMod:
			b.tree.erase(nd)
			m, ok := byName[tag]
			if !ok {
				break
			}
			mb := modBuilders[tag]
			if mb == nil {
				mb = &builder{}
				modBuilders[tag] = mb
				order = append(order, tag)
			}
			mb.insert(entry{start: m.MapIP(e.start), end: m.MapIP(e.end), name: name, binding: e.binding})
		case name == entryTrampolineName:
			b.tree.erase(nd)
		}
		nd = nx
	}
	kt.Kernel = b.table(nil)
	if n := len(kt.Kernel.syms); n > 0 {
		kt.Start, kt.End = kt.Kernel.syms[0].start, kt.Kernel.syms[n-1].end
	}
	for _, tag := range order {
		kt.Modules[strings.TrimSuffix(strings.TrimPrefix(tag, "["), "]")] = modBuilders[tag].table(nil)
	}
	return kt
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

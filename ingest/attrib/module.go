package attrib

import (
	"fmt"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/machine"
	"github.com/kmapindex/kmapindex/ingest/symbols"
	"github.com/kmapindex/kmapindex/internal/regular"
)

// loadModuleFile is perf 6.1's dso__load of a module DSO, which
// thread__find_map runs the first time a kernel-space lookup finds one
// of its maps (machine.OnModuleLoad). Before the kernel's symbols are
// in, the module counts as loaded, which the kallsyms split honours
// (symbols.KernelOptions.Loaded). The first of its candidate files (moduleCandidates) that
// symsrc__init takes and that has a .symtab gives its symbols, replacing
// any kallsyms gave it (dso__load_sym deletes them); the map found moves
// its pgoff to the file's .text, and each other section with symbols
// gets a map of its own (machine.LoadModule). No such file: the module
// keeps what it has.
func (s *symbolizer) loadModuleFile(m *machine.Machine, mod index.Map) {
	if !s.kernelLoaded {
		s.modLoaded[index.ModuleName(mod.DSO)] = true // the kallsyms split honours it
	}
	file := m.ModuleFile(mod.DSO)
	if s.noFiles || file == "" {
		return
	}
	comp := index.KmodCompression(file)
	id := s.buildIDs[mod.DSO]
	if id == nil {
		id = s.buildIDs[file]
	}
	id = dsoBuildID(id, s.symfs, file, comp)
	for _, cand := range moduleCandidates(s.debugDir, s.symfs, file, id) {
		if !regular.Is(cand) {
			continue
		}
		v, err := symbols.ReadModule(cand, comp, id)
		if err != nil {
			continue // not ELF, another build id, or no .symtab
		}
		s.useModule(m, mod, cand, v)
		return
	}
}

// moduleCandidates lists the files dso__load tries for a module DSO
// whose file name is file and build id id, in perf 6.1's order
// (binary_type_symtab, as dso__is_compatible_symtab_type lets a kmod DSO
// try them): the build-id cache's "elf" and "debug" entries, then the
// file below symfs (DSO_BINARY_TYPE__SYSTEM_PATH_KMODULE).
func moduleCandidates(debugDir, symfs, file string, id []byte) []string {
	var out []string
	if len(id) > 0 && debugDir != "" {
		out = append(out, buildIDCacheEntry(debugDir, id, "elf"), buildIDCacheEntry(debugDir, id, "debug"))
	}
	return append(out, symfs+file)
}

// useModule gives the module DSO of map mod the symbols of its file v:
// its .text's symbols become the module's table, and the kernel maps
// change as dso__process_kernel_symbol changes them for a module.
func (s *symbolizer) useModule(m *machine.Machine, mod index.Map, file string, v *symbols.Vmlinux) {
	sec := v.Text
	if sec == nil {
		sec = &symbols.KernelSection{Table: new(symbols.Table)}
	}
	if !s.kernelLoaded {
		s.moduleText[mod.DSO] = sec // kallsyms adds to it (table)
		if s.lastFinds == nil {
			s.lastFinds = map[string]*lastFind{}
		}
		s.lastFinds[mod.DSO] = &lastFind{}
	}
	short, _ := index.KmodName(mod.DSO)
	var sections []index.Map
	for _, sec := range v.Sections {
		mp := index.Map{Start: sec.Addr, End: sec.Addr + sec.Size, Pgoff: sec.Offset, Mapping: index.MappingDSO, Kind: index.KindKernelSection, DSO: short + sec.Name}
		if _, ok := s.kernelSections[mp.DSO]; !ok {
			s.kernelSections[mp.DSO] = sec.Table
		}
		sections = append(sections, mp)
	}
	if err := m.LoadModule(mod, sec.Offset, v.Text != nil, sections); err != nil && s.mapsErr == nil {
		s.mapsErr = fmt.Errorf("module file %s: %w", file, err)
	}
	s.moduleTables[mod.DSO] = sec.Table
}

// fileModuleTable is table's answer for a module DSO whose symbols came
// from its file, t so far: for a module loaded before the kernel, once
// the kernel's symbols are in, t joined by kallsyms' for it
// (KernelSection.WithKallsyms), made once; final once perf's last lookup
// in the DSO can no longer answer otherwise than t does (findIn).
func (s *symbolizer) fileModuleTable(dso string, t *symbols.Table) (*symbols.Table, bool) {
	sec, pre := s.moduleText[dso]
	if pre {
		if !s.kernelLoaded {
			return t, false
		}
		if kt := s.kernelTables(); kt != nil {
			t = sec.WithKallsyms(kt.Module(dso))
		}
		s.moduleTables[dso] = t
		delete(s.moduleText, dso)
		if lf := s.lastFinds[dso]; lf != nil && lf.found && t != sec.Table {
			lf.merged = true
		} else {
			delete(s.lastFinds, dso)
		}
	}
	return t, s.lastFinds[dso] == nil
}

// lastFind is perf's dso->last_find_result (dso__find_symbol): the last
// address looked up in a DSO and the symbol found, which perf answers the
// next lookup of that address with. It differs from a fresh lookup only
// when the DSO's symbols change after lookups: a module whose file gave
// its symbols before the kernel's, to which the kernel's load then adds
// kallsyms' (symbolizer.table; maps__split_kallsyms inserts them without
// touching the cache). Such modules are followed until the cache agrees
// with their symbols again.
type lastFind struct {
	addr   uint64
	sym    symbols.Symbol
	found  bool
	merged bool // kallsyms' symbols came in since
}

// findIn is dso__find_symbol: the index in t, the table of map m's DSO,
// of the symbol holding addr (m.MapIP of an address), or -1, answered
// from the DSO's last lookup as perf answers it for the modules that
// lastFind follows.
func (s *symbolizer) findIn(m index.Map, t *symbols.Table, addr uint64) int {
	if s.lastFinds == nil || m.Kind != index.KindModule {
		return t.FindIndex(addr)
	}
	lf := s.lastFinds[m.DSO]
	if lf == nil {
		return t.FindIndex(addr)
	}
	if lf.found && lf.addr == addr {
		return t.IndexOf(lf.sym) // kept in t: kallsyms only adds
	}
	i := t.FindIndex(addr)
	lf.addr, lf.found = addr, i >= 0
	if i >= 0 {
		lf.sym = t.Symbol(i)
	}
	if lf.merged {
		delete(s.lastFinds, m.DSO) // from now on the cache agrees with t
	}
	return i
}

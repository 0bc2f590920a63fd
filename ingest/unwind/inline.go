package unwind

import (
	"cmp"
	"debug/elf"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"sync"

	"github.com/kmapindex/kmapindex/internal/dwarf"
	"github.com/kmapindex/kmapindex/internal/filemap"
)

// Inlines answers, for an address of a binary, what binutils' addr2line
// -i -f prints for it, which perf 6.1 (built without libbfd) runs to
// expand each unwound frame into its inlined functions (append_inlines,
// addr2inlines): the innermost function first (an inlined one if the
// address is in inlined code), then each caller it was inlined into.
// Names follow bfd: the DWARF function whose range around the address
// is smallest (the later one on a tie), named by its linkage name, else
// its name, through DW_AT_abstract_origin and DW_AT_specification; with
// no DWARF function, the symbol table's nearest function symbol at or
// below the address. Safe for concurrent use.
type Inlines struct {
	d   *dwarf.Data
	cus []cuSpan // by start
	// noRanges are the units without ranges, which bfd tries for
	// every address.
	noRanges []dwarf.Offset
	// syms are the function-like symbols sorted by section, value,
	// size and, for equal ones, later symbol-table entries first:
	// symbolName's answer is the last at or below an address.
	syms     []bfdSym
	secs     []elf.SectionHeader
	mu       sync.Mutex
	units    map[dwarf.Offset]*unitFuncs
	memo     map[uint64]inlineAnswer
	refNames map[refKey]refName // nameOf's answers
	// mapped are the mappings sections lie in (loadDWARF); scans
	// counts the units read whole (scanUnit).
	mapped [][]byte
	scans  int
	// readAll makes scanUnit read every DIE and look every name up, as
	// bfd does (for tests: the shortcuts must not change the answers).
	readAll bool
}

type cuSpan struct {
	lo, hi uint64
	off    dwarf.Offset
}

type bfdSym struct {
	name        string
	value, size uint64
	sec         int
	index       int // in symbol-table order
}

type inlineAnswer struct {
	names []string
	ok    bool
}

// unitFuncs is a compilation unit's function table (bfd's
// scan_unit_for_symbols): its functions, with their ranges and the
// function each inlined one sits in, in DIE order.
type unitFuncs struct {
	// bfdFails marks a Go unit: binutils 2.40's bfd does not read the
	// line tables Go writes (addr2line prints "go.go:?", the symbol
	// table's file and function, for all of a Go binary), so the unit
	// gives no answer and the symbol table does.
	bfdFails bool
	entry    *dwarf.Entry
	fns      []funcInfo
	seqs     [][2]uint64 // line sequences' address ranges
}

type funcInfo struct {
	ranges  [][2]uint64
	name    string
	linkage bool // named by a linkage name (or a C-family DW_AT_name); answer sets it
	caller  int  // the enclosing function's index, -1 for none
}

// low is the low address of bfd's first arange of the function: its first
// range, extended down by a later one that ends where it starts
// (arange_add).
func (f *funcInfo) low() uint64 {
	if len(f.ranges) == 0 {
		return 0
	}
	first := f.ranges[0]
	for _, r := range f.ranges[1:] {
		switch {
		case r[0] == first[1]:
			first[1] = r[1]
		case r[1] == first[0]:
			first[0] = r[0]
		}
	}
	return first[0]
}

// OpenInlines reads the DWARF and symbol table of the ELF file at path
// (the file perf names in dso->symsrc_filename). A file without DWARF
// answers from its symbol table (or dynamic symbols) alone, as
// addr2line does ("name" and "??:?", which perf takes as an answer), and
// so does a relocatable object.
// Compressed sections come from cache, if not nil, or go to it.
func OpenInlines(path string, cache *SectionCache) (*Inlines, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var fi os.FileInfo
	if cache != nil {
		if fi, err = fh.Stat(); err != nil {
			fi = nil
		}
	}
	f, err := elf.NewFile(fh)
	if err != nil {
		return nil, err
	}
	in := &Inlines{units: make(map[dwarf.Offset]*unitFuncs), memo: make(map[uint64]inlineAnswer)}
	for _, s := range f.Sections {
		in.secs = append(in.secs, s.SectionHeader)
	}
	in.readSyms(f)
	if f.Section(".debug_info") == nil && f.Section(".zdebug_info") == nil || f.Type == elf.ET_REL {
		// A relocatable object's DWARF needs its relocations applied,
		// which loadDWARF does not do: no user map is one (and perf
		// does not expand a kernel module's frames).
		return in, nil
	}
	var mapped [][]byte
	if in.d, mapped, err = loadDWARF(f, fh, cache, path, fi); err != nil {
		return nil, err
	}
	if afterLoadDWARF != nil {
		afterLoadDWARF()
	}
	if len(mapped) > 0 {
		// The mappings go with the Inlines: nothing else holds the
		// Data, its entries or bytes of its sections (strings are
		// copied out of them).
		in.mapped = mapped
		runtime.AddCleanup(in, unmapAll, mapped)
	}
	// Reading every unit's header (dwarf.New) and root DIE (readUnits)
	// reads across the whole of .debug_info, its abbreviations and
	// ranges (mapped in at once: loadDWARF); lookups read a few units
	// again. The pages read are dropped once done (they fault back in
	// from the page cache when read again), and the abbreviation tables
	// decoded as it goes: libc's debug file's took 6.6 MB of resident
	// memory and 2.5 MB of heap for the rest of a report.
	forget := func() {
		if in.d != nil {
			in.d.ForgetAbbrevs()
		}
	}
	in.guard(func() { in.readUnits(forget) })
	forget()
	in.dropMapped()
	return in, nil
}

// dropMapped drops the pages of the mapped sections from memory.
func (in *Inlines) dropMapped() {
	for _, b := range in.mapped {
		filemap.DropPages(b)
	}
}

// readUnits lists the units' address ranges, calling read (which may
// forget the abbreviations read: dwarf.Data.ForgetAbbrevs) after each
// readUnitsBatch units.
func (in *Inlines) readUnits(read func()) {
	d := in.d
	if d == nil { // a fault left the DWARF out (guard)
		return
	}
	r := d.Reader()
	for units := 1; ; units++ {
		if units%readUnitsBatch == 0 {
			read()
		}
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == dwarf.TagCompileUnit || e.Tag == dwarf.TagPartialUnit {
			n := 0
			if rs, err := d.Ranges(e); err == nil {
				for _, rg := range rs {
					if rg[0] < rg[1] {
						in.cus = append(in.cus, cuSpan{rg[0], rg[1], e.Offset})
						n++
					}
				}
			}
			if n == 0 {
				in.noRanges = append(in.noRanges, e.Offset)
			}
		}
		r.SkipChildren()
	}
	sort.SliceStable(in.cus, func(i, j int) bool { return in.cus[i].lo < in.cus[j].lo })
}

// afterLoadDWARF, when set (by tests), runs once loadDWARF returned.
var afterLoadDWARF func()

// dropEveryScans is how many units Funcs reads whole between drops of
// the mapped sections' pages.
const dropEveryScans = 16

// readUnitsBatch is how many units readUnits reads between its calls of
// read.
const readUnitsBatch = 256

// readSyms keeps the symbols bfd's _bfd_elf_maybe_function_sym accepts.
func (in *Inlines) readSyms(f *elf.File) {
	syms, err := f.Symbols()
	if err != nil || len(syms) == 0 {
		syms, _ = f.DynamicSymbols()
	}
	for _, s := range syms {
		switch elf.ST_TYPE(s.Info) {
		case elf.STT_SECTION, elf.STT_FILE, elf.STT_OBJECT, elf.STT_TLS, elf.STT_COMMON:
			continue
		}
		if s.Section == elf.SHN_UNDEF || int(s.Section) >= len(f.Sections) {
			continue
		}
		if s.Size == 0 && elf.ST_BIND(s.Info) == elf.STB_LOCAL && elf.ST_TYPE(s.Info) == elf.STT_NOTYPE &&
			elf.ST_VISIBILITY(s.Other) == elf.STV_HIDDEN {
			continue
		}
		in.syms = append(in.syms, bfdSym{name: s.Name, value: s.Value, size: max(s.Size, 1), sec: int(s.Section), index: len(in.syms)})
	}
	sortSyms(in.syms)
}

// sortSyms puts syms in symbolName's order.
func sortSyms(syms []bfdSym) {
	slices.SortFunc(syms, func(a, b bfdSym) int {
		return cmp.Or(cmp.Compare(a.sec, b.sec), cmp.Compare(a.value, b.value), cmp.Compare(a.size, b.size), cmp.Compare(b.index, a.index))
	})
}

// Funcs returns the function names addr2line -i -f prints for addr,
// innermost first; ok is false when its first record's location is
// "??:0" (no DWARF function nor line holds addr), which perf takes as
// no answer. A function without a line row prints as ":?", which perf
// takes as an answer.
func (in *Inlines) Funcs(addr uint64) (names []string, ok bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if a, seen := in.memo[addr]; seen {
		return a.names, a.ok
	}
	var a inlineAnswer
	scans := in.scans
	in.guard(func() { a = in.lookup(addr) })
	if in.scans != scans && in.scans%dropEveryScans == 0 {
		// Units read whole: their pages go, as readUnits's did.
		in.dropMapped()
	}
	if len(in.memo) >= 1<<18 {
		clear(in.memo) // bounded
	}
	in.memo[addr] = a
	return a.names, a.ok
}

// guard runs f, which reads the DWARF. Should a mapped section's file be
// truncated under its mapping (SectionCache.get: only someone else
// rewriting the cache does that), the read faults: the DWARF is then
// left out from there on, and f runs again, answering from the symbol
// table, rather than the process crashing.
func (in *Inlines) guard(f func()) {
	if len(in.mapped) == 0 {
		f()
		return
	}
	faulted := false
	func() {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			if v := recover(); v != nil {
				if !filemap.Faulted(v, in.mapped) {
					panic(v)
				}
				faulted = true
			}
		}()
		f()
	}()
	if faulted {
		in.d, in.cus, in.noRanges = nil, nil, nil
		clear(in.units)
		f()
	}
}

func (in *Inlines) lookup(addr uint64) inlineAnswer {
	for _, off := range in.unitsFor(addr) {
		u := in.unit(off)
		if u == nil {
			continue
		}
		if u.bfdFails {
			continue
		}
		line, best := u.hasLine(addr), u.bestFit(addr)
		if !line && best < 0 {
			continue // bfd tries the next unit
		}
		return in.answer(u, best, addr)
	}
	// No DWARF: bfd names the symbol table's function, if any.
	if name, ok := in.symbolName(addr); ok {
		return inlineAnswer{names: []string{name}, ok: true}
	}
	return inlineAnswer{}
}

// answer names the innermost function best (-1: none) and its inliners,
// as bfd's _bfd_dwarf2_find_nearest_line ("done:") and
// _bfd_dwarf2_find_inliner_info name them. A function not named by a
// linkage name is named, the first time it is the innermost, by the
// symbol table's function at addr; it takes that name for good when the
// symbol starts where the function does (function->name =
// *functionname_ptr), and from then on counts as named by a linkage name
// (function->is_linkage = true), so its own name serves. The state lives
// as long as the Inlines, as bfd's does in perf's addr2line process (one
// a DSO, asked each address once): an inlined function's first query
// prints the symbol's name, later ones its own, and an out-of-line
// function's caller frames print the symbol's name once it was
// innermost.
func (in *Inlines) answer(u *unitFuncs, best int, addr uint64) inlineAnswer {
	if best < 0 {
		sym, ok := in.symbolName(addr)
		if !ok {
			sym = "??"
		}
		return inlineAnswer{names: []string{sym}, ok: true}
	}
	f := &u.fns[best]
	first := f.name
	if !f.linkage {
		if sym, start, ok := in.symbolAt(addr); ok {
			first = sym
			if start == f.low() {
				f.name = sym
			}
		}
		f.linkage = true
	}
	names := []string{first}
	for i := u.fns[best].caller; i >= 0 && len(names) <= 1024; i = u.fns[i].caller {
		names = append(names, u.fns[i].name)
	}
	return inlineAnswer{names: names, ok: true}
}

// unitsFor returns the units bfd tries for addr, in DIE order: those
// whose ranges hold it and those without ranges.
func (in *Inlines) unitsFor(addr uint64) []dwarf.Offset {
	i := sort.Search(len(in.cus), func(i int) bool { return in.cus[i].lo > addr })
	offs := append([]dwarf.Offset(nil), in.noRanges...)
	for _, c := range in.cus[:i] {
		if addr < c.hi && !slices.Contains(offs, c.off) {
			offs = append(offs, c.off)
		}
	}
	slices.Sort(offs)
	return offs
}

// unit returns a unit's function table, read once.
func (in *Inlines) unit(off dwarf.Offset) *unitFuncs {
	if u, ok := in.units[off]; ok {
		return u
	}
	u := in.scanUnit(off)
	in.units[off] = u
	in.scans++
	return u
}

// scanUnit reads a unit's functions.
func (in *Inlines) scanUnit(off dwarf.Offset) *unitFuncs {
	r := in.d.Reader()
	r.Seek(off)
	cu, err := r.Next()
	if err != nil || cu == nil {
		return nil
	}
	u := &unitFuncs{entry: cu}
	lang, _ := cu.Val(dwarf.AttrLanguage).(int64)
	cLike := nonMangled(lang)
	langC := isC(lang)
	if lang == langGo {
		u.bfdFails = true
		return u
	}
	lr, _ := in.d.LineReader(cu)
	u.readSeqs(lr)
	type level struct{ fn int }
	stack := []level{{-1}} // the function each nesting level is in
	for depth := 1; depth > 0; {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == 0 {
			depth--
			stack = stack[:len(stack)-1]
			continue
		}
		cur := stack[len(stack)-1].fn
		switch e.Tag {
		case dwarf.TagSubprogram, dwarf.TagInlinedSubroutine, dwarf.TagEntryPoint:
			rs, _ := in.d.Ranges(e)
			name, linkage := in.funcName(e, cLike)
			u.fns = append(u.fns, funcInfo{ranges: rs, name: name, linkage: linkage, caller: cur})
			cur = len(u.fns) - 1
		}
		if e.Children {
			if !in.readAll && noFuncsBelow(e.Tag, langC) {
				r.SkipChildren()
				continue
			}
			depth++
			stack = append(stack, level{cur})
		}
	}
	return u
}

// tagGNUCallSite is DW_TAG_GNU_call_site, GCC's DW_TAG_call_site before
// DWARF 5.
const tagGNUCallSite dwarf.Tag = 0x4109

// noFuncsBelow reports whether the children of a DIE of tag hold no
// function, which scanUnit can then skip (bfd reads them to find none):
// DWARF gives a call site only its parameters, an enumeration its
// enumerators, an array type its subranges and a subroutine type its
// parameters; a C structure or union has only members, C having no
// member functions. Types are much of a unit's DIEs.
func noFuncsBelow(tag dwarf.Tag, langC bool) bool {
	switch tag {
	case dwarf.TagCallSite, tagGNUCallSite, dwarf.TagEnumerationType, dwarf.TagArrayType, dwarf.TagSubroutineType:
		return true
	case dwarf.TagStructType, dwarf.TagUnionType:
		return langC
	}
	return false
}

// isC reports whether a unit's DW_AT_language is C: C89, C, C99, C11 or
// C17.
func isC(lang int64) bool {
	switch lang {
	case 0x01, 0x02, 0x0c, 0x1d, 0x2c:
		return true
	}
	return false
}

// funcName is bfd's name of a function DIE: the linkage name if any,
// else the name, else the abstract origin's or specification's; linkage
// says whether bfd takes it as a linkage name.
func (in *Inlines) funcName(e *dwarf.Entry, cLike bool) (name string, linkage bool) {
	switch name, kind := in.nameOf(e, 0); kind {
	case nameLinkage:
		return name, true
	case namePlain:
		return name, cLike
	}
	return "??", false
}

// nameKind says where funcName found a name.
type nameKind uint8

const (
	nameNone    nameKind = iota
	nameLinkage          // DW_AT_linkage_name or DW_AT_MIPS_linkage_name
	namePlain            // DW_AT_name
)

// refKey is a DIE funcName follows a reference to, and the references
// followed to get there (at most 8 DIEs are looked at).
type refKey struct {
	off  dwarf.Offset
	hops int
}

type refName struct {
	name string
	kind nameKind
}

// nameOf is funcName's search from e, reached through hops references;
// where the search goes on at another DIE, the answer is kept by it
// (many inlined instances share their abstract origin).
func (in *Inlines) nameOf(e *dwarf.Entry, hops int) (string, nameKind) {
	if e == nil || hops >= 8 {
		return "", nameNone
	}
	if s, ok := e.Val(dwarf.AttrLinkageName).(string); ok {
		return s, nameLinkage
	}
	if s, ok := e.Val(dwarf.Attr(0x2007)).(string); ok { // DW_AT_MIPS_linkage_name
		return s, nameLinkage
	}
	if s, ok := e.Val(dwarf.AttrName).(string); ok {
		return s, namePlain
	}
	ref, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
	if !ok {
		if ref, ok = e.Val(dwarf.AttrSpecification).(dwarf.Offset); !ok {
			return "", nameNone
		}
	}
	key := refKey{ref, hops + 1}
	if a, ok := in.refNames[key]; ok && !in.readAll {
		return a.name, a.kind
	}
	r := in.d.Reader()
	r.Seek(ref)
	next, _ := r.Next()
	name, kind := in.nameOf(next, hops+1)
	if in.refNames == nil || len(in.refNames) >= 1<<16 {
		in.refNames = make(map[refKey]refName) // bounded
	}
	in.refNames[key] = refName{name, kind}
	return name, kind
}

const langGo = 0x16 // DW_LANG_Go

// nonMangled is bfd's non_mangled: languages whose DW_AT_name is the
// symbol's name (C, Ada, Cobol, Fortran 77, Pascal, PL/I, UPC, MIPS
// assembler).
func nonMangled(lang int64) bool {
	switch lang {
	case 0x01, 0x02, 0x03, 0x05, 0x06, 0x07, 0x09, 0x0c, 0x0d, 0x0f, 0x12, 0x1d, 0x8001:
		return true
	}
	return false
}

// bestFit is lookup_address_in_function_table: the function with the
// smallest range holding addr, the later on a tie; -1 for none.
func (u *unitFuncs) bestFit(addr uint64) int {
	best, bestLen := -1, uint64(0)
	for i, f := range u.fns {
		for _, r := range f.ranges {
			if addr < r[0] || addr >= r[1] {
				continue
			}
			if l := r[1] - r[0]; best < 0 || l <= bestLen {
				best, bestLen = i, l
			}
		}
	}
	return best
}

// hasLine reports whether one of the unit's line sequences covers addr
// (bfd's lookup_address_in_line_info_table finds a row there).
func (u *unitFuncs) hasLine(addr uint64) bool {
	for _, s := range u.seqs {
		if addr >= s[0] && addr < s[1] {
			return true
		}
	}
	return false
}

// readSeqs reads the ranges of the unit's line sequences.
func (u *unitFuncs) readSeqs(lr *dwarf.LineReader) {
	if lr == nil {
		return
	}
	var le dwarf.LineEntry
	start, open := uint64(0), false
	for lr.Next(&le) == nil {
		switch {
		case le.EndSequence:
			if open && le.Address > start {
				u.seqs = append(u.seqs, [2]uint64{start, le.Address})
			}
			open = false
		case !open:
			start, open = le.Address, true
		}
	}
}

// symbolName is bfd's _bfd_elf_find_function: in the allocated section
// holding addr, the function symbol with the highest value at or below
// it, the larger on a tie, the first in the table then.
func (in *Inlines) symbolName(addr uint64) (string, bool) {
	name, _, ok := in.symbolAt(addr)
	return name, ok
}

// symbolAt is symbolName with the symbol's value.
func (in *Inlines) symbolAt(addr uint64) (name string, value uint64, ok bool) {
	sec := -1
	for i, s := range in.secs {
		if s.Flags&elf.SHF_ALLOC != 0 && addr >= s.Addr && addr-s.Addr < s.Size {
			sec = i
			break
		}
	}
	if sec < 0 {
		return "", 0, false
	}
	// bfd keeps the symbol of the highest value at or below addr, of
	// those the larger, of those the first in the table: the last in
	// syms's order.
	i := sort.Search(len(in.syms), func(i int) bool {
		s := in.syms[i]
		return s.sec > sec || s.sec == sec && s.value > addr
	}) - 1
	if i < 0 || in.syms[i].sec != sec {
		return "", 0, false
	}
	return in.syms[i].name, in.syms[i].value, true
}

// dwarfSections are the sections Inlines reads: debug/elf's DWARF
// would also decompress location lists and frames, which it does not
// need.
var dwarfSections = []string{"abbrev", "info", "line", "ranges", "str", "addr", "line_str", "str_offsets", "rnglists"}

// listUnits are the sections listing the units (dwarf.New, readUnits)
// reads throughout.
var listUnits = map[string]bool{"abbrev": true, "info": true, "ranges": true, "rnglists": true, "addr": true, "str_offsets": true}

// loadDWARF is elf.File.DWARF for executables and shared objects, with
// only the sections Inlines uses, decompressed in parallel (sectionData;
// ra is f's file, at path, fi its stat), read by internal/dwarf, which
// reads a unit's abbreviations when the unit is first read (libc's
// debug file has 2,063 units, of which a report reads a few). mapped are
// the mappings the sections lie in (sectionData's), for the caller to
// drop pages of and unmap once done.
func loadDWARF(f *elf.File, ra io.ReaderAt, cache *SectionCache, path string, fi os.FileInfo) (d *dwarf.Data, mapped [][]byte, err error) {
	data := make([][]byte, len(dwarfSections))
	mappings := make([][]byte, len(dwarfSections))
	errs := make([]error, len(dwarfSections))
	var wg sync.WaitGroup
	for i, name := range dwarfSections {
		if s := f.Section(".debug_" + name); s != nil && s.Type != elf.SHT_NOBITS {
			wg.Go(func() { data[i], mappings[i], errs[i] = sectionData(f, ra, s, cache, path, fi) })
		} else if s := f.Section(".zdebug_" + name); s != nil && s.Type != elf.SHT_NOBITS {
			wg.Go(func() { data[i], errs[i] = zdebugData(s) })
		}
	}
	wg.Wait()
	var maps [][]byte
	for i, m := range mappings {
		if m != nil {
			maps = append(maps, m)
			if listUnits[dwarfSections[i]] {
				filemap.Populate(data[i]) // read through by OpenInlines
			}
		}
	}
	defer func() {
		if err != nil {
			unmapAll(maps) // no Data holds them
		}
	}()
	for i, err := range errs {
		if err != nil && dwarfSections[i] != "info" {
			data[i] = nil // as debug/elf, a section that cannot be read is left out
		} else if err != nil {
			return nil, nil, err
		}
	}
	if d, err = dwarf.New(data[0], nil, nil, data[1], data[2], nil, data[3], data[4]); err != nil {
		return nil, nil, err
	}
	for i, name := range dwarfSections[5:] {
		if b := data[5+i]; b != nil {
			if err = d.AddSection(".debug_"+name, b); err != nil {
				return nil, nil, err
			}
		}
	}
	return d, maps, nil
}

// unmapAll unmaps the mapped sections of an Inlines no longer used.
func unmapAll(mapped [][]byte) {
	for _, b := range mapped {
		filemap.Unmap(b)
	}
}

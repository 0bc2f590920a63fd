package symbols

import (
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"slices"
	"strings"
	"unsafe"
)

// ELF builds the symbol table perf 6.1 builds for a user-space DSO whose
// symbols and runtime image are both the file at path (an unstripped
// binary, or a stripped one whose .dynsym is then used). Look it up with
// index.Map.MapIP(ip) of the file's map: symbols are keyed by file offset.
// See [ELFWithDebug] for the rules.
func ELF(path string) (*Table, error) {
	return ELFWithDebug(path, "")
}

// ELFWithDebug builds the table from a separate debug file, as perf does
// when it finds one (syms_ss = the debug file's .symtab, runtime_ss = the
// binary). With debug == "", or when debug has no SHT_SYMTAB .symtab, the
// binary is used for both, as perf does.
//
// The rules are those of perf 6.1's dso__load and dso__load_sym
// (tools/perf/util/symbol.c, symbol-elf.c):
//
//   - Symbols come from .symtab (type SHT_SYMTAB) of the symbol file,
//     then from its .dynsym (SHT_DYNSYM; a debug file's is NOBITS: none),
//     two passes each followed by the fix-ups below (loadSym). Entries
//     are read in index order.
//   - Kept: STT_FUNC, STT_GNU_IFUNC and STT_OBJECT with a name and a
//     defined section (elf_sym__filter); and STT_NOTYPE labels with a name,
//     a section other than SHN_UNDEF/SHN_ABS and default or protected
//     visibility, whose section name contains "text" or "data".
//   - A function or object in SHN_ABS is skipped (glibc's debug .symtab
//     has GLIBC_2.x version OBJECTs there; perf 6.1 keeps loading past
//     them, as the comparison with perf script shows). Any other section
//     index must exist, else perf stops loading at that symbol: the
//     symbols read so far stay, those of the pass without end or
//     duplicate fix-up, and without PLT symbols (so does this function;
//     Table.LoadFailed reports it). A section
//     without SHF_ALLOC drops the symbol. A SHT_NOBITS section in the
//     symbol file (a debug file) is replaced by the runtime file's section
//     of the same index.
//   - The address is a file offset: st_value - (p_vaddr - p_offset) of the
//     runtime file's PT_LOAD segment holding st_value (max of filesz and
//     memsz), or st_value - (sh_addr - sh_offset) when none does
//     (perf always adjusts user-space symbols: symsrc__init sets
//     adjust_symbols for DSO_SPACE__USER, whatever e_type is).
//   - Size st_size (0 stays 0); binding from st_info; the name demangled
//     as perf's demangle_sym does when it creates the symbol (see
//     [Demangle]), so duplicate resolution compares demangled names.
//   - After each pass: symbols__fixup_end (is_kallsyms false: a zero-size
//     symbol ends where the next starts; the last ends at roundup(start,
//     4096) + 4096), then symbols__fixup_duplicate.
//   - dso__synthesize_plt_symbols (the pre-6.3 version) on the runtime
//     file, when it has .dynsym, a .rela.plt or .rel.plt linked to it, and
//     a .plt: for each relocation in order, a global function
//     "NAME@plt" (NAME from the relocation's .dynsym entry, "" for index
//     0, demangled first) of plt_entry_size bytes at .plt's sh_offset +
//     plt_header_size + i × plt_entry_size, where both sizes are .plt's
//     sh_entsize except on ARM (20, 12), AArch64 (32, 16), SPARC (48, 12)
//     and SPARCv9 (128, 32). These are inserted after the fix-ups and may
//     overlap other symbols; lookups then follow perf's tree exactly.
//
// Errors are *FileError values naming the file (the binary or the debug
// file at fault); debug/elf's error, when it gave one (a *elf.FormatError
// with the offset at fault, or an I/O error), stays reachable through
// errors.As. A malformed file is an error, never a panic.
func ELFWithDebug(path, debug string) (t *Table, err error) {
	rt, err := openELF(path)
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	symFile, symPath := rt, path
	if debug != "" {
		d, err := openELF(debug)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		if sec := d.SectionByType(elf.SHT_SYMTAB); sec != nil {
			symFile, symPath = d, debug
		}
	}
	return elfTable(rt, symFile, path, symPath)
}

// elfTable builds the table of ELFWithDebug from the open runtime file rt
// (at path) and symbol file symFile (at symPath; rt itself when there is
// no debug file).
func elfTable(rt, symFile *elf.File, path, symPath string) (t *Table, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, &FileError{File: symPath, Err: fmt.Errorf("malformed ELF: %v", r)}
		}
	}()
	var b builder
	nr, complete, err := loadSym(&b, symFile, rt, symPath)
	if err != nil {
		return nil, err
	}
	if complete && nr > 0 {
		if err := synthesizePLT(&b, rt); err != nil {
			return nil, &FileError{File: path, Err: err}
		}
	}
	b.releaseNameTables()
	t = b.table(nil)
	t.loadFailed = !complete && nr > 0
	return t, nil
}

// A FileError reports an ELF file whose symbols cannot be read: the file's
// name and what went wrong. Err is debug/elf's error where it gave one (a
// *elf.FormatError, whose message names the offset at fault, or the
// *fs.PathError of opening the file), reachable through errors.As.
type FileError struct {
	File string // the file's name
	Err  error  // what went wrong
}

// Error says "symbols: FILE: ERR", or "symbols: ERR" when ERR is an
// *fs.PathError that names FILE already.
func (e *FileError) Error() string {
	var pe *fs.PathError
	if errors.As(e.Err, &pe) && pe.Path == e.File {
		return "symbols: " + e.Err.Error()
	}
	return "symbols: " + e.File + ": " + e.Err.Error()
}

func (e *FileError) Unwrap() error { return e.Err }

// openELF opens the ELF file at path; errors are *FileError.
func openELF(path string) (*elf.File, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, &FileError{File: path, Err: err}
	}
	return f, nil
}

// loadSym is dso__load_sym for a user-space DSO (perf 6.1): the symbols
// of the symbol file's .symtab, then those of its .dynsym (a debug file's
// is NOBITS, so none), each pass followed by symbols__fixup_end and
// symbols__fixup_duplicate over the whole tree when it inserted any
// (dso__load_sym_internal). Both passes usually give the table the
// .symtab alone would: a .dynsym symbol is a .symtab one again, and loses
// to it. complete is false when perf would stop early (goto out_elf_end)
// after inserting nr symbols: the pass's symbols stay, unfixed, and perf
// loads no more (no PLT symbols either).
func loadSym(b *builder, symFile, rt *elf.File, symPath string) (nr int, complete bool, err error) {
	// Room for both passes at once: the .dynsym's grew the .symtab's
	// entries by copying them (node: 4.3 MB, then 7.3 MB beside them).
	b.grow(symbolCount(symFile, elf.SHT_SYMTAB) + symbolCount(symFile, elf.SHT_DYNSYM))
	n, syms, strtab, err := elfSymbols(symFile, elf.SHT_SYMTAB)
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return 0, false, &FileError{File: symPath, Err: err}
	}
	if err == nil {
		inserted, ok := loadPass(b, symFile, rt, n, syms, nameTable{stringSection(symFile, elf.SHT_SYMTAB), strtab})
		if nr += inserted; !ok {
			return nr, false, nil
		}
	}
	n, syms, strtab, err = elfSymbols(symFile, elf.SHT_DYNSYM)
	switch {
	case errors.Is(err, elf.ErrNoSymbols):
		return nr, nr > 0, nil
	case err != nil && nr == 0:
		return 0, false, &FileError{File: symPath, Err: err}
	case err != nil:
		// elf_getdata fails on the .dynsym: perf stops with the
		// .symtab's symbols.
		return nr, false, nil
	}
	inserted, ok := loadPass(b, symFile, rt, n, syms, nameTable{stringSection(symFile, elf.SHT_DYNSYM), strtab})
	return nr + inserted, ok, nil
}

// symbolCount is how many symbols f's first section of type typ holds by
// its header's size, at most a million (a bound on the room made for
// them, which a corrupt header could claim), 0 for none.
func symbolCount(f *elf.File, typ elf.SectionType) int {
	tab := f.SectionByType(typ)
	if tab == nil {
		return 0
	}
	size := uint64(elf.Sym64Size)
	if f.Class == elf.ELFCLASS32 {
		size = elf.Sym32Size
	}
	return int(min(tab.Size/size, 1<<20))
}

// stringSection is the string table of f's first section of type typ
// (elfSymbols' strtab), nil if none.
func stringSection(f *elf.File, typ elf.SectionType) *elf.Section {
	if tab := f.SectionByType(typ); tab != nil && tab.Link < uint32(len(f.Sections)) {
		return f.Sections[tab.Link]
	}
	return nil
}

// loadPass is one dso__load_sym_internal over the n symbols syms, whose
// names are in strtab (if its names are not ""): it inserts those perf
// keeps, and fixes the tree up after them unless perf stops first (ok
// false) or none was kept.
func loadPass(b *builder, symFile, rt *elf.File, n int, syms iter.Seq[elf.Symbol], strtab nameTable) (inserted int, ok bool) {
	b.grow(n)
	if strtab.names != "" {
		b.nameTables = append(b.nameTables, strtab)
	}
	for s := range syms {
		sec, value, keep, stop := keptSymbol(symFile, rt, s)
		if stop {
			return inserted, false // elf_getscn fails: perf stops here
		}
		if !keep {
			continue
		}
		if p := loadSegment(rt, value); p != nil {
			value -= p.Vaddr - p.Off
		} else {
			value -= sec.Addr - sec.Offset
		}
		typ := elf.ST_TYPE(s.Info)
		end := value
		if s.Size != 0 {
			end = value + s.Size
		}
		b.insert(entry{start: value, end: end, name: s.Name, mangled: mayDemangle(s.Name), binding: uint8(elf.ST_BIND(s.Info)), object: typ == elf.STT_OBJECT})
		inserted++
	}
	if inserted > 0 {
		b.fixupEnd(false)
		b.fixupDuplicate()
	}
	return inserted, true
}

// keptSymbol is dso__load_sym's test of the symbol s of symFile (runtime
// file rt): keep says whether perf keeps it, in section sec (rt's section
// of the same index for a SHT_NOBITS one) at value (a thumb function's
// address without its low bit), and stop that perf stops loading there
// (elf_getscn fails on its section index).
//
//   - Kept: STT_FUNC, STT_GNU_IFUNC and STT_OBJECT with a name and a
//     defined section (elf_sym__filter); STT_NOTYPE labels with a name, a
//     section other than SHN_UNDEF/SHN_ABS and default or protected
//     visibility, in a section whose name contains "text" or "data".
//   - Dropped: ARM and AArch64 mapping symbols ("$a", "$d.x"), SHN_ABS
//     ones, and those of a section without SHF_ALLOC.
func keptSymbol(symFile, rt *elf.File, s elf.Symbol) (sec *elf.Section, value uint64, keep, stop bool) {
	typ := elf.ST_TYPE(s.Info)
	isLabel := typ == elf.STT_NOTYPE && s.Name != "" && s.Section != elf.SHN_UNDEF &&
		s.Section != elf.SHN_ABS && elf.ST_VISIBILITY(s.Other) != elf.STV_HIDDEN &&
		elf.ST_VISIBILITY(s.Other) != elf.STV_INTERNAL
	isFunc := (typ == elf.STT_FUNC || typ == elf.STT_GNU_IFUNC || typ == elf.STT_OBJECT) &&
		s.Name != "" && s.Section != elf.SHN_UNDEF
	if !isLabel && !isFunc {
		return nil, 0, false, false
	}
	if m := symFile.Machine; (m == elf.EM_ARM || m == elf.EM_AARCH64) && isARMMappingSymbol(s.Name) {
		return nil, 0, false, false
	}
	if s.Section == elf.SHN_ABS {
		return nil, 0, false, false // e.g. glibc's GLIBC_2.x version OBJECTs
	}
	if int(s.Section) >= len(symFile.Sections) {
		return nil, 0, false, true
	}
	sec = symFile.Sections[s.Section]
	if sec.Flags&elf.SHF_ALLOC == 0 {
		return nil, 0, false, false
	}
	if sec.Type == elf.SHT_NOBITS {
		if int(s.Section) >= len(rt.Sections) {
			return nil, 0, false, true
		}
		sec = rt.Sections[s.Section]
	}
	if isLabel && !strings.Contains(sec.Name, "text") && !strings.Contains(sec.Name, "data") {
		return nil, 0, false, false
	}
	value = s.Value
	if symFile.Machine == elf.EM_ARM && typ == elf.STT_FUNC && value&1 != 0 {
		value--
	}
	return sec, value, true, false
}

func isARMMappingSymbol(name string) bool {
	return len(name) >= 2 && name[0] == '$' && strings.IndexByte("adtx", name[1]) >= 0 &&
		(len(name) == 2 || name[2] == '.')
}

// loadSegment is elf_read_program_header: the first PT_LOAD holding vaddr,
// sized by the larger of p_filesz and p_memsz.
func loadSegment(f *elf.File, vaddr uint64) *elf.Prog {
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		sz := max(p.Filesz, p.Memsz)
		if sz == 0 {
			continue
		}
		if vaddr >= p.Vaddr && vaddr < p.Vaddr+sz {
			return p
		}
	}
	return nil
}

// pltName is the name perf gives the PLT entry of a function it prints
// as name: "name@plt", cut to 1,023 bytes (snprintf into char[1024]).
func pltName(name string) string {
	name += "@plt"
	if len(name) > 1023 {
		name = name[:1023]
	}
	return name
}

// ocamlDemangle is perf's ocaml_demangle_sym.
func ocamlDemangle(s string) (string, bool) {
	if len(s) < 5 || !strings.HasPrefix(s, "caml") || s[4] < 'A' || s[4] > 'Z' {
		return "", false
	}
	var out []byte
	for i := 4; i < len(s); {
		switch {
		case s[i] == '_' && i+1 < len(s) && s[i+1] == '_':
			out = append(out, '.')
			i += 2
		case s[i] == '$' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			v, _ := hex.DecodeString(strings.ToLower(s[i+1 : i+3]))
			out = append(out, v[0])
			i += 3
		default:
			out = append(out, s[i])
			i++
		}
	}
	return string(out), true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// synthesizePLT is perf 6.1's dso__synthesize_plt_symbols on the runtime
// file. Problems make perf skip the PLT symbols silently; so does this.
// The .dynsym's string table is b's when loadSym read it from f already.
func synthesizePLT(b *builder, f *elf.File) error {
	dynsym := f.Section(".dynsym")
	if dynsym == nil || dynsym.Type != elf.SHT_DYNSYM {
		return nil
	}
	dynIdx := -1
	for i, s := range f.Sections {
		if s == dynsym {
			dynIdx = i
		}
	}
	rel := f.Section(".rela.plt")
	if rel == nil {
		rel = f.Section(".rel.plt")
	}
	plt := f.Section(".plt")
	if rel == nil || int(rel.Link) != dynIdx || plt == nil || rel.Entsize == 0 {
		return nil
	}
	if rel.Type != elf.SHT_RELA && rel.Type != elf.SHT_REL {
		return nil
	}
	if int(dynsym.Link) >= len(f.Sections) || dynsym.Entsize == 0 {
		return nil
	}
	strs, ok := b.nameTableOf(f.Sections[dynsym.Link])
	if !ok {
		data, err := sectionData(f.Sections[dynsym.Link])
		if err != nil {
			return nil
		}
		strs = unsafe.String(unsafe.SliceData(data), len(data)) // never written: names alias it
	}
	if len(strs) == 0 {
		return nil
	}
	symData, err := sectionData(dynsym)
	if err != nil {
		return nil
	}
	relData, err := sectionData(rel)
	if err != nil {
		return nil
	}
	var header, entSize uint64
	switch f.Machine {
	case elf.EM_ARM:
		header, entSize = 20, 12
	case elf.EM_AARCH64:
		header, entSize = 32, 16
	case elf.EM_SPARC:
		header, entSize = 48, 12
	case elf.EM_SPARCV9:
		header, entSize = 128, 32
	default:
		header, entSize = plt.Entsize, plt.Entsize
	}
	is64 := f.Class == elf.ELFCLASS64
	bo := f.ByteOrder
	off := plt.Offset + header
	nrel := rel.Size / rel.Entsize
	var lastName string // gelf_getsym leaves the previous symbol on failure
	for i := uint64(0); i < nrel; i++ {
		p := i * rel.Entsize
		var symIdx uint64
		if is64 {
			if p+16 > uint64(len(relData)) {
				break
			}
			symIdx = bo.Uint64(relData[p+8:]) >> 32
		} else {
			if p+8 > uint64(len(relData)) {
				break
			}
			symIdx = uint64(bo.Uint32(relData[p+4:]) >> 8)
		}
		name := lastName
		if q := symIdx * dynsym.Entsize; symIdx < dynsym.Size/dynsym.Entsize && q+4 <= uint64(len(symData)) {
			name = cstring(strs, uint64(bo.Uint32(symData[q:])))
			lastName = name
		}
		end := off
		if entSize != 0 {
			end = off + entSize
		}
		if mayDemangle(name) {
			b.insert(entry{start: off, end: end, name: name, mangled: true, plt: true, binding: bindGlobal})
		} else {
			b.insert(entry{start: off, end: end, name: pltName(name), binding: bindGlobal})
		}
		off += entSize
	}
	return nil
}

func sectionData(s *elf.Section) ([]byte, error) {
	if s.Type == elf.SHT_NOBITS {
		return nil, errors.New("no data")
	}
	return readAll(io.LimitReader(s.Open(), 1<<32), s.Size)
}

// readAll is io.ReadAll with room for size bytes at first (at most
// maxPresize: a header may claim anything) and a buffer that doubles.
// Hand-written because io.ReadAll grows from 512 bytes by a quarter at
// a time: the PLT's sections of a gcc build's cc1 were copied over and
// over, 10 ms of its flat table's 0.33 s.
func readAll(r io.Reader, size uint64) ([]byte, error) {
	b := make([]byte, 0, min(size, maxPresize)+1) // +1: room to see the end
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, cap(b))
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// maxPresize bounds the buffer readAll makes before reading.
const maxPresize = 64 << 20

// cstring returns the NUL-ended string at off of b (to its end without a
// NUL), "" when off is outside b.
func cstring(b string, off uint64) string {
	if off >= uint64(len(b)) {
		return ""
	}
	s := b[off:]
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return s
}

// debugRoot is where distributions install separate debug files.
const debugRoot = "/usr/lib/debug"

// FindDebug returns the separate file perf 6.1 would take the symbols of
// the binary at path from, with the binary's own build id, no --symfs and
// no build-id cache (SymbolSources over SymbolCandidates), or "" when
// perf would take them from the binary itself or find none.
func FindDebug(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	id := BuildID(f)
	f.Close()
	_, syms, ok := SymbolSources(SymbolCandidates(path, "", id, nil), id)
	if !ok || syms == path {
		return ""
	}
	return syms
}

// BuildID returns f's build id as perf 6.1 reads a file's
// (filename__read_build_id, elf_read_build_id): the first NT_GNU_BUILD_ID
// note of the section named .note.gnu.build-id, else .notes, else .note,
// whatever its type; nil when that section has none (a build-id note in
// a section of another name is not looked at).
func BuildID(f *elf.File) (id []byte) {
	defer func() {
		if recover() != nil {
			id = nil // debug/elf panicked on a malformed section: none
		}
	}()
	var sec *elf.Section
	for _, name := range []string{".note.gnu.build-id", ".notes", ".note"} {
		if sec = f.Section(name); sec != nil {
			break
		}
	}
	if sec == nil {
		return nil
	}
	data, err := sec.Data()
	if err != nil {
		return nil
	}
	return NoteBuildID(data, f.ByteOrder)
}

// NoteBuildID returns the descriptor of the first NT_GNU_BUILD_ID note
// (type 3, name "GNU") in data, a sequence of ELF notes in byte order bo
// (a SHT_NOTE section, /sys/kernel/notes), or nil.
func NoteBuildID(data []byte, bo binary.ByteOrder) []byte {
	for len(data) >= 12 {
		nameSz := uint64(bo.Uint32(data))
		descSz := uint64(bo.Uint32(data[4:]))
		typ := bo.Uint32(data[8:])
		nameEnd := 12 + (nameSz+3)&^3
		descEnd := nameEnd + (descSz+3)&^3
		if descEnd > uint64(len(data)) {
			break
		}
		if typ == 3 && nameSz == 4 && string(data[12:16]) == "GNU\x00" {
			return data[nameEnd : nameEnd+descSz]
		}
		data = data[descEnd:]
	}
	return nil
}

package symbols

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"

	"github.com/kmapindex/kmapindex/internal/prefault"
)

// Errors of ReadVmlinux that make perf 6.1 go on to its next candidate
// for the kernel's symbols; each comes wrapped in a *FileError.
var (
	// ErrBuildIDMismatch: the recording's kernel has a build id and the
	// file's differs or cannot be read (symsrc__init).
	ErrBuildIDMismatch = errors.New("build id differs from the recording's kernel")
	// ErrStripped: the file has no .symtab of type SHT_SYMTAB
	// (dso__load_sym falls back to kallsyms for a stripped vmlinux).
	ErrStripped = errors.New("no .symtab (a stripped vmlinux)")
)

// A KernelSection is one section of a vmlinux that holds kernel symbols:
// its link-time address, size and file offset (sh_addr, sh_size,
// sh_offset), and its symbols keyed by file offset, which is what
// index.Map.MapIP gives for a map of the section (start Addr + Reloc,
// pgoff Offset).
type KernelSection struct {
	Name   string
	Addr   uint64
	Size   uint64
	Offset uint64
	Table  *Table
	// entries are .text's symbols in symbol-table order, as perf
	// inserts them (WithKallsyms replays that).
	entries []entry
}

// WithKallsyms returns the table of a module DSO whose file's .text
// symbols (s, the Text of ReadModule) were loaded before the kernel's,
// once the kernel's load has split kallsyms among the modules and moved
// the module's kallsyms symbols (extra, its KernelTables table, in
// address order) in too: maps__split_kallsyms checks a DSO's loaded flag
// only when its walk enters the module (dropping that one symbol, as
// KernelFrom does), and inserts the rest into the same tree, after the
// file's fix-ups, without fixing them up. Lookups then follow that tree.
// A nil or empty extra gives s.Table.
func (s *KernelSection) WithKallsyms(extra *Table) *Table {
	if extra == nil || extra.Len() == 0 {
		return s.Table
	}
	var b builder
	for _, e := range s.entries {
		b.insert(e) // in perf's order: the tree's shape will matter
	}
	b.fixupEnd(false)
	b.fixupDuplicate()
	for i := range extra.Len() {
		x := extra.Symbol(i)
		b.insert(entry{start: x.Start, end: x.End, name: x.Name, object: x.Object})
	}
	return b.table(nil)
}

// Vmlinux is a kernel image's symbols as perf 6.1's dso__load_vmlinux
// loads them into the kernel DSO (dso__load_sym with the kernel's map).
type Vmlinux struct {
	// Reloc is what the running kernel adds to link-time addresses: the
	// recording's reference symbol address minus the file's (ref_reloc);
	// 0 when the recording names none or the file lacks it.
	Reloc uint64
	// Text is the ".text" section, whose symbols are the kernel DSO's
	// (fixed up as perf fixes up a DSO's symbols) and where the kernel
	// map moves; nil when none of the kept symbols lies in it.
	Text *KernelSection
	// Sections are the other sections holding kept symbols, in the
	// order of their first symbol (the order perf inserts their maps),
	// one per name; their symbols are not fixed up, as perf's are not.
	Sections []KernelSection
	// Symbols counts the symbols kept. perf takes none as a failure and
	// goes on to its next candidate.
	Symbols int
}

// ReadVmlinux reads the kernel symbols of the vmlinux at path the way
// perf 6.1 does (symsrc__init, dso__load_sym, dso__process_kernel_symbol
// in tools/perf/util/symbol-elf.c):
//
//   - The file must be ELF. When the recording's kernel has a build id
//     (buildID not empty), the file's NT_GNU_BUILD_ID note, from the
//     first of the sections ".note.gnu.build-id", ".notes" and ".note"
//     that exists, must equal it (trailing zero padding aside).
//   - It must have a .symtab of type SHT_SYMTAB.
//   - The reference symbol refName (the kernel MMAP's "_text"), the first
//     symbol so named in index order whatever its type, gives Reloc =
//     refAddr - st_value.
//   - Symbols are kept as for any DSO (keptSymbol), and keyed by file
//     offset st_value - (sh_addr - sh_offset), which perf does for
//     ET_EXEC, ET_REL and ET_DYN images (elf__needs_adjust_symbols); any
//     other type is refused unless Reloc is not 0, which adjusts too.
//   - A symbol in ".text" goes to the kernel DSO (Text); one in another
//     section to that section's DSO, named by its name; one in a section
//     named "" to the kernel DSO too (its map is the one so named).
//   - Names are not demangled (perf's demangle_kernel is off).
//
// A symbol naming a section the file does not have makes perf stop
// loading halfway, with the kernel maps half changed; ReadVmlinux
// returns an error instead. Errors are *FileError values naming path.
func ReadVmlinux(path string, buildID []byte, refName string, refAddr uint64) (v *Vmlinux, err error) {
	f, err := openELF(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readVmlinux(f, path, buildID, refName, refAddr, false)
}

// readVmlinux is ReadVmlinux on the open file f; module keeps .text's
// entries for WithKallsyms.
func readVmlinux(f *elf.File, path string, buildID []byte, refName string, refAddr uint64, module bool) (v *Vmlinux, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, &FileError{File: path, Err: fmt.Errorf("malformed ELF: %v", r)}
		}
	}()
	if len(buildID) > 0 {
		if got := BuildID(f); !SameBuildID(buildID, got) {
			return nil, &FileError{File: path, Err: fmt.Errorf("%w: %x, the file's %x", ErrBuildIDMismatch, buildID, got)}
		}
	}
	if s := f.Section(".symtab"); s == nil || s.Type != elf.SHT_SYMTAB {
		return nil, &FileError{File: path, Err: ErrStripped}
	}
	n, syms, strtab, err := elfSymbols(f, elf.SHT_SYMTAB)
	if errors.Is(err, elf.ErrNoSymbols) {
		return &Vmlinux{}, nil
	}
	if err != nil {
		return nil, &FileError{File: path, Err: err}
	}
	v = &Vmlinux{}
	if refName != "" {
		for s := range syms {
			if s.Name == refName {
				v.Reloc = refAddr - s.Value
				break
			}
		}
	}
	switch f.Type {
	case elf.ET_EXEC, elf.ET_REL, elf.ET_DYN:
	default:
		if v.Reloc == 0 {
			return nil, &FileError{File: path, Err: fmt.Errorf("ELF type %v: perf 6.1 keeps such a kernel's symbols at their addresses, which kbench does not model", f.Type)}
		}
	}
	// The symbols go in after the loop, the kernel DSO's with
	// insertAll.
	text := make([]entry, 0, n)
	prefault.Slice(text) // fresh pages cost 10 µs each on first write here
	others := map[string]*[]entry{}
	var order []*elf.Section
	cur := &text // the DSO the previous symbol went to
	curName := ""
	idx := 0
	for s := range syms {
		idx++
		sec, value, keep, stop := keptSymbol(f, f, s)
		if stop {
			return nil, &FileError{File: path, Err: fmt.Errorf("symbol %d (%s): section index %d out of range (perf 6.1 stops loading there, leaving the kernel maps half changed)", idx, s.Name, s.Section)}
		}
		if !keep {
			continue
		}
		value -= sec.Addr - sec.Offset
		switch {
		case sec.Name == curName:
		case sec.Name == "":
			// maps__find_by_name finds the kernel map by its own name.
			cur, curName = &text, ""
		case sec.Name == ".text":
			if v.Text == nil {
				v.Text = &KernelSection{Name: sec.Name, Addr: sec.Addr, Size: sec.Size, Offset: sec.Offset}
			}
			cur, curName = &text, ""
		default:
			es, ok := others[sec.Name]
			if !ok {
				es = new([]entry)
				others[sec.Name] = es
				order = append(order, sec)
			}
			cur, curName = es, sec.Name
		}
		end := value
		if s.Size != 0 {
			end = value + s.Size
		}
		*cur = append(*cur, entry{start: value, end: end, name: s.Name, binding: uint8(elf.ST_BIND(s.Info)), object: elf.ST_TYPE(s.Info) == elf.STT_OBJECT})
		v.Symbols++
	}
	if v.Text != nil {
		b := builder{nameTables: []nameTable{{stringSection(f, elf.SHT_SYMTAB), strtab}}}
		b.insertAll(text, true)
		b.fixupEnd(false)
		b.fixupDuplicate()
		v.Text.Table = b.table(nil)
		if module {
			v.Text.entries = text
		}
	}
	for _, sec := range order {
		b := builder{nameTables: []nameTable{{stringSection(f, elf.SHT_SYMTAB), strtab}}} // a section DSO's symbols are not fixed up
		b.insertAll(*others[sec.Name], false)
		v.Sections = append(v.Sections, KernelSection{Name: sec.Name, Addr: sec.Addr, Size: sec.Size, Offset: sec.Offset, Table: b.table(nil)})
	}
	return v, nil
}

// SameBuildID reports whether a recorded build id equals a file's,
// ignoring the zero padding perf stores short ids with
// (dso__build_id_equal).
func SameBuildID(recorded, file []byte) bool {
	return len(recorded) > 0 && bytes.Equal(bytes.TrimRight(recorded, "\x00"), bytes.TrimRight(file, "\x00"))
}

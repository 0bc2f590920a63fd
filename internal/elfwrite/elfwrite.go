// Package elfwrite writes small little-endian ELF64 files for tests: the
// sections and symbols given, and the string tables they need. The
// standard library reads ELF but does not write it, and the tests need
// files with exact section addresses, offsets and symbols, such as a
// vmlinux made to match a recording.
package elfwrite

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
)

// A Section is one section. Its data follows the headers; Addr is its
// sh_addr. Without Data, Size is its sh_size, and the file holds only its
// header (as for a SHT_NOBITS section, or a header-only copy).
type Section struct {
	Name  string
	Type  elf.SectionType
	Flags elf.SectionFlag
	Addr  uint64
	Data  []byte
	Size  uint64 // when Data is nil
	// Offset, when Data is nil and it is not 0, is the sh_offset written
	// (a header-only section's place in the file it stands for).
	Offset uint64
}

// A Symbol is one .symtab entry. Section names the section it is defined
// in ("" for SHN_UNDEF), unless Index is not 0, which is written as is
// (elf.SHN_ABS, or an index out of range).
type Symbol struct {
	Name    string
	Type    elf.SymType
	Bind    elf.SymBind
	Other   uint8
	Section string
	Index   elf.SectionIndex
	Value   uint64
	Size    uint64
}

// A File is an ELF64 file: its type and machine, sections, and symbols
// (written in order after the null symbol; none: no .symtab), and dynamic
// symbols (likewise in .dynsym, with .dynstr; none: no .dynsym).
type File struct {
	Type       elf.Type
	Machine    elf.Machine
	Sections   []Section
	Symbols    []Symbol
	DynSymbols []Symbol
}

// Bytes returns the file's bytes: the ELF header, the sections' data (each
// 16-byte aligned), then the section headers (the null section, the
// sections in order, .symtab and .strtab when there are symbols, and
// .shstrtab).
func (f *File) Bytes() ([]byte, error) {
	secs := append([]Section(nil), f.Sections...)
	index := map[string]int{}
	for i, s := range secs {
		if _, dup := index[s.Name]; !dup {
			index[s.Name] = i + 1
		}
	}
	// links are the sh_link of the symbol tables: their string tables.
	links := map[int]int{}
	for _, t := range []struct {
		syms       []Symbol
		name, strs string
		typ        elf.SectionType
		flags      elf.SectionFlag
	}{
		{f.Symbols, ".symtab", ".strtab", elf.SHT_SYMTAB, 0},
		{f.DynSymbols, ".dynsym", ".dynstr", elf.SHT_DYNSYM, elf.SHF_ALLOC},
	} {
		if len(t.syms) == 0 {
			continue
		}
		tab, strtab, err := symbolTable(t.syms, index)
		if err != nil {
			return nil, err
		}
		links[len(secs)] = len(secs) + 2 // section indexes count the null one
		secs = append(secs,
			Section{Name: t.name, Type: t.typ, Flags: t.flags, Data: tab},
			Section{Name: t.strs, Type: elf.SHT_STRTAB, Flags: t.flags, Data: strtab})
	}
	shstrtab := []byte{0}
	names := make([]uint32, len(secs)+1)
	for i, s := range secs {
		names[i] = uint32(len(shstrtab))
		shstrtab = append(append(shstrtab, s.Name...), 0)
	}
	names[len(secs)] = uint32(len(shstrtab))
	shstrtab = append(append(shstrtab, ".shstrtab"...), 0)
	secs = append(secs, Section{Name: ".shstrtab", Type: elf.SHT_STRTAB, Data: shstrtab})

	const ehdrSize, shdrSize = 64, 64
	out := make([]byte, ehdrSize)
	offs := make([]uint64, len(secs))
	for i, s := range secs {
		for len(out)%16 != 0 {
			out = append(out, 0)
		}
		offs[i] = uint64(len(out))
		out = append(out, s.Data...)
	}
	for len(out)%8 != 0 {
		out = append(out, 0)
	}
	shoff := uint64(len(out))
	out = append(out, make([]byte, shdrSize)...) // the null section
	for i, s := range secs {
		var h [shdrSize]byte
		size := uint64(len(s.Data))
		if s.Data == nil {
			size = s.Size
		}
		binary.LittleEndian.PutUint32(h[0:], names[i])
		binary.LittleEndian.PutUint32(h[4:], uint32(s.Type))
		binary.LittleEndian.PutUint64(h[8:], uint64(s.Flags))
		binary.LittleEndian.PutUint64(h[16:], s.Addr)
		off := offs[i]
		if s.Data == nil && s.Offset != 0 {
			off = s.Offset
		}
		binary.LittleEndian.PutUint64(h[24:], off)
		binary.LittleEndian.PutUint64(h[32:], size)
		if link, ok := links[i]; ok {
			binary.LittleEndian.PutUint32(h[40:], uint32(link)) // sh_link: its string table
			binary.LittleEndian.PutUint32(h[44:], 1)            // sh_info: the first non-local
			binary.LittleEndian.PutUint64(h[56:], elf.Sym64Size)
		}
		binary.LittleEndian.PutUint64(h[48:], 1) // sh_addralign
		out = append(out, h[:]...)
	}
	h := elf.Header64{
		Type:      uint16(f.Type),
		Machine:   uint16(f.Machine),
		Version:   uint32(elf.EV_CURRENT),
		Shoff:     shoff,
		Ehsize:    ehdrSize,
		Shentsize: shdrSize,
		Shnum:     uint16(len(secs) + 1),
		Shstrndx:  uint16(len(secs)),
	}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	h.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	h.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	var hb [ehdrSize]byte
	if _, err := binary.Encode(hb[:], binary.LittleEndian, &h); err != nil {
		return nil, err
	}
	copy(out, hb[:])
	return out, nil
}

// symbolTable returns the entries of syms, after the null symbol, and
// their string table; index maps section names to their indexes.
func symbolTable(syms []Symbol, index map[string]int) (tab, strtab []byte, err error) {
	strtab = []byte{0}
	tab = make([]byte, elf.Sym64Size) // the null symbol
	for _, s := range syms {
		shndx := uint16(s.Index)
		if s.Index == 0 && s.Section != "" {
			i, ok := index[s.Section]
			if !ok {
				return nil, nil, fmt.Errorf("symbol %s: no section %s", s.Name, s.Section)
			}
			shndx = uint16(i)
		}
		var e [elf.Sym64Size]byte
		binary.LittleEndian.PutUint32(e[0:], uint32(len(strtab)))
		e[4] = elf.ST_INFO(s.Bind, s.Type)
		e[5] = s.Other
		binary.LittleEndian.PutUint16(e[6:], shndx)
		binary.LittleEndian.PutUint64(e[8:], s.Value)
		binary.LittleEndian.PutUint64(e[16:], s.Size)
		tab = append(tab, e[:]...)
		strtab = append(append(strtab, s.Name...), 0)
	}
	return tab, strtab, nil
}

// WriteFile writes the file's bytes to path, making its directory if
// need be.
func (f *File) WriteFile(path string) error {
	b, err := f.Bytes()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// BuildIDNote returns the bytes of an ELF note section holding the GNU
// build id id (NT_GNU_BUILD_ID).
func BuildIDNote(id []byte) []byte {
	b := make([]byte, 16, 16+len(id)+3)
	binary.LittleEndian.PutUint32(b[0:], 4)
	binary.LittleEndian.PutUint32(b[4:], uint32(len(id)))
	binary.LittleEndian.PutUint32(b[8:], 3) // NT_GNU_BUILD_ID
	copy(b[12:], "GNU\x00")
	b = append(b, id...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

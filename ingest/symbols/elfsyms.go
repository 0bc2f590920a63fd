package symbols

import (
	"debug/elf"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"unsafe"
)

// elfSymbols returns the symbols of f's first section of type typ
// (SHT_SYMTAB or SHT_DYNSYM), as debug/elf's Symbols and DynamicSymbols
// give them (the null first entry left out, a name not ended by a NUL
// empty) and with their errors, and their number. Hand-written for
// 64-bit files: debug/elf copies each name into a string of its own and
// the symbols into a slice, which was half of loading a Go binary's 29 k
// symbols; here a name is a substring of one copy of the string table.
// Other files go through debug/elf. The version fields of dynamic symbols
// are not set.
func elfSymbols(f *elf.File, typ elf.SectionType) (n int, all iter.Seq[elf.Symbol], err error) {
	if f.Class != elf.ELFCLASS64 {
		var syms []elf.Symbol
		if typ == elf.SHT_DYNSYM {
			syms, err = f.DynamicSymbols()
		} else {
			syms, err = f.Symbols()
		}
		return len(syms), slices.Values(syms), err
	}
	tab := f.SectionByType(typ)
	if tab == nil {
		return 0, nil, elf.ErrNoSymbols
	}
	data, err := tab.Data()
	if err != nil {
		return 0, nil, fmt.Errorf("cannot load symbol section: %w", err)
	}
	if len(data) == 0 {
		return 0, nil, elf.ErrNoSymbols
	}
	if len(data)%elf.Sym64Size != 0 {
		return 0, nil, errors.New("length of symbol section is not a multiple of Sym64Size")
	}
	if tab.Link <= 0 || tab.Link >= uint32(len(f.Sections)) {
		return 0, nil, fmt.Errorf("cannot load string table section: %w", errors.New("section has invalid string table link"))
	}
	strs, err := f.Sections[tab.Link].Data()
	if err != nil {
		return 0, nil, fmt.Errorf("cannot load string table section: %w", err)
	}
	// The table's bytes are never written: names may alias them.
	strtab := unsafe.String(unsafe.SliceData(strs), len(strs))
	data = data[elf.Sym64Size:] // the first entry is all zeros
	bo := f.ByteOrder
	all = func(yield func(elf.Symbol) bool) {
		for p := data; len(p) >= elf.Sym64Size; p = p[elf.Sym64Size:] {
			s := elf.Symbol{
				Name:    stringAt(strtab, bo.Uint32(p[0:4])),
				Info:    p[4],
				Other:   p[5],
				Section: elf.SectionIndex(bo.Uint16(p[6:8])),
				Value:   bo.Uint64(p[8:16]),
				Size:    bo.Uint64(p[16:24]),
			}
			if !yield(s) {
				return
			}
		}
	}
	return len(data) / elf.Sym64Size, all, nil
}

// stringAt is debug/elf's getString: the NUL-ended string at off of a
// string table, "" when off is outside it or no NUL ends the string.
func stringAt(strtab string, off uint32) string {
	if uint64(off) >= uint64(len(strtab)) {
		return ""
	}
	s := strtab[off:]
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return ""
}

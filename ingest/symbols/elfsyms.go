package symbols

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
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
// are not set. strtab is the string table the names are substrings of
// ("" for other files).
func elfSymbols(f *elf.File, typ elf.SectionType) (n int, all iter.Seq[elf.Symbol], strtab string, err error) {
	if f.Class != elf.ELFCLASS64 {
		var syms []elf.Symbol
		if typ == elf.SHT_DYNSYM {
			syms, err = f.DynamicSymbols()
		} else {
			syms, err = f.Symbols()
		}
		return len(syms), slices.Values(syms), "", err
	}
	tab := f.SectionByType(typ)
	if tab == nil {
		return 0, nil, "", elf.ErrNoSymbols
	}
	records, err := recordsOf(tab)
	if err != nil {
		return 0, nil, "", err
	}
	if tab.Link <= 0 || tab.Link >= uint32(len(f.Sections)) {
		return 0, nil, "", fmt.Errorf("cannot load string table section: %w", errors.New("section has invalid string table link"))
	}
	strs, err := f.Sections[tab.Link].Data()
	if err != nil {
		return 0, nil, "", fmt.Errorf("cannot load string table section: %w", err)
	}
	// The table's bytes are never written: names may alias them.
	strtab = unsafe.String(unsafe.SliceData(strs), len(strs))
	bo := f.ByteOrder
	all = func(yield func(elf.Symbol) bool) {
		for data := range records.chunks() {
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
	}
	return records.n, all, strtab, nil
}

// symbolRecords are the records of a symbol section after its first (all
// zeros): n of them, in data when the section was read whole, else read
// from at, from off on, a chunk at a time. A file's section is read in
// chunks, so that its symbols (2.6 MB of /usr/bin/node's .symtab) are not
// held whole while the table is made; a compressed one whole, as
// debug/elf's Data gives it.
type symbolRecords struct {
	n    int
	data []byte
	at   io.ReaderAt
	off  int64
}

// symbolChunk is how many bytes of records a chunk holds (2,730 records).
const symbolChunk = 2730 * elf.Sym64Size

// recordsOf returns tab's records after the first, with the errors
// of debug/elf's Data and Symbols: one reading the section, none in it
// (elf.ErrNoSymbols), a size that is not a multiple of a record's.
func recordsOf(tab *elf.Section) (symbolRecords, error) {
	if tab.Flags&elf.SHF_COMPRESSED == 0 && !strings.HasPrefix(tab.Name, ".zdebug") && tab.ReaderAt != nil && tab.Size > 0 {
		// The section's last byte read, its reading cannot fail short
		// of a file changed since: Data's errors come from Data.
		var last [1]byte
		if _, err := tab.ReadAt(last[:], int64(tab.Size-1)); err == nil {
			if tab.Size%elf.Sym64Size != 0 {
				return symbolRecords{}, errors.New("length of symbol section is not a multiple of Sym64Size")
			}
			return symbolRecords{n: int(tab.Size/elf.Sym64Size) - 1, at: tab.ReaderAt, off: elf.Sym64Size}, nil
		}
	}
	data, err := tab.Data()
	if err != nil {
		return symbolRecords{}, fmt.Errorf("cannot load symbol section: %w", err)
	}
	if len(data) == 0 {
		return symbolRecords{}, elf.ErrNoSymbols
	}
	if len(data)%elf.Sym64Size != 0 {
		return symbolRecords{}, errors.New("length of symbol section is not a multiple of Sym64Size")
	}
	return symbolRecords{n: len(data)/elf.Sym64Size - 1, data: data[elf.Sym64Size:]}, nil
}

// chunks yields the records a chunk at a time. A chunk that cannot be
// read (the file changed since recordsOf looked) panics, which the
// callers turn into a *FileError.
func (r symbolRecords) chunks() iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		if r.at == nil {
			yield(r.data)
			return
		}
		buf := make([]byte, min(symbolChunk, r.n*elf.Sym64Size))
		for off, end := r.off, r.off+int64(r.n)*elf.Sym64Size; off < end; {
			b := buf[:min(int64(len(buf)), end-off)]
			if _, err := r.at.ReadAt(b, off); err != nil {
				panic(fmt.Errorf("cannot load symbol section: %w", err))
			}
			if !yield(b) {
				return
			}
			off += int64(len(b))
		}
	}
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

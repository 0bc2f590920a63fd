package unwind

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

// maxSectionSize bounds a compressed section's declared size: larger
// ones go to debug/elf, which reads them in growing steps.
const maxSectionSize = 1 << 30

// sectionData returns the contents of s, a section of f read from ra
// (f's file), as s.Data does. A compressed section (SHF_COMPRESSED, zlib
// or zstd) is inflated with klauspost/compress, about 1.4 times faster
// than the standard library's zlib: distribution debug files compress
// their DWARF, and inflating a libc's .debug_info was the longest wait
// of a DWARF callchain report. Anything unusual goes to s.Data, which
// then gives debug/elf's answer and errors.
//
// With a cache, a compressed section comes from it when it holds it, and
// goes to it once inflated (see SectionCache); path and fi are f's file.
// A section not cached yet is then inflated straight into the cache's
// file, never whole on the heap, and mapped from there: mapping is then
// the whole mapping b lies in (SectionCache.get's), for the caller to
// drop pages of (filemap.DropPages) and unmap once done; nil when b is on
// the heap. (Uncompressed sections, a program's built here, stay read
// onto the heap: mapped from the program's file, a Rust program's 4 MB
// of DWARF took as much memory at the peak, and its DWARF children table
// a fifth more time in page faults.)
func sectionData(f *elf.File, ra io.ReaderAt, s *elf.Section, cache *SectionCache, path string, fi os.FileInfo) (b, mapping []byte, err error) {
	if ra == nil || s.Flags&elf.SHF_COMPRESSED == 0 || s.Type == elf.SHT_NOBITS {
		b, err = s.Data()
		return b, nil, err
	}
	name, cached := cache.name(path, fi, ra, s)
	if cached {
		if b, mapping, ok := cache.get(name, s.Size); ok {
			return b, mapping, nil
		}
		if cache.put(name, s.Size, func(w io.Writer) bool { return inflateTo(f, ra, s, w) }) {
			if b, mapping, ok := cache.get(name, s.Size); ok {
				return b, mapping, nil
			}
		}
	}
	if b, ok := inflate(f, ra, s); ok {
		return b, nil, nil
	}
	b, err = s.Data()
	return b, nil, err
}

// inflate decompresses s (see inflateTo) into memory; false when it
// cannot.
func inflate(f *elf.File, ra io.ReaderAt, s *elf.Section) ([]byte, bool) {
	if s.Size > maxSectionSize {
		return nil, false
	}
	out := bytes.NewBuffer(make([]byte, 0, s.Size))
	if !inflateTo(f, ra, s, out) {
		return nil, false
	}
	return out.Bytes(), true
}

// inflateTo decompresses s after its compression header (Elf32_Chdr or
// Elf64_Chdr) into w: exactly the section's size in bytes, as debug/elf
// requires of the stream. It reports false when it cannot; w may then
// have taken part of it.
func inflateTo(f *elf.File, ra io.ReaderAt, s *elf.Section, w io.Writer) bool {
	if s.FileSize > maxSectionSize {
		return false
	}
	var chdr [24]byte
	hdr := 24
	if f.Class == elf.ELFCLASS32 {
		hdr = 12
	} else if f.Class != elf.ELFCLASS64 {
		return false
	}
	if s.FileSize < uint64(hdr) {
		return false
	}
	if _, err := ra.ReadAt(chdr[:hdr], int64(s.Offset)); err != nil {
		return false
	}
	typ, size := f.ByteOrder.Uint32(chdr[:]), f.ByteOrder.Uint64(chdr[8:])
	if f.Class == elf.ELFCLASS32 {
		size = uint64(f.ByteOrder.Uint32(chdr[4:]))
	}
	if size > maxSectionSize || size != s.Size {
		return false
	}
	src := bufio.NewReaderSize(io.NewSectionReader(ra, int64(s.Offset)+int64(hdr), int64(s.FileSize)-int64(hdr)), 64<<10)
	var r io.Reader
	switch elf.CompressionType(typ) {
	case elf.COMPRESS_ZLIB:
		zr, err := zlib.NewReader(src)
		if err != nil {
			return false
		}
		defer zr.Close()
		r = zr
	case elf.COMPRESS_ZSTD:
		zr, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return false
		}
		defer zr.Close()
		r = zr
	default:
		return false
	}
	if n, err := io.CopyN(w, r, int64(size)); err != nil || uint64(n) != size {
		return false
	}
	// As debug/elf, the stream must hold exactly the declared size.
	var one [1]byte
	if n, err := r.Read(one[:]); n != 0 || err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	return true
}

// zdebugData returns the contents of s, a section of the old GNU
// compression (.zdebug_*: "ZLIB", the size in 8 big-endian bytes, a
// zlib stream), inflated as debug/elf's DWARF does; a section without
// the "ZLIB" header is taken as it is.
func zdebugData(s *elf.Section) ([]byte, error) {
	b, err := s.Data()
	if err != nil || len(b) < 12 || string(b[:4]) != "ZLIB" {
		return b, err
	}
	size := binary.BigEndian.Uint64(b[4:12])
	if size > maxSectionSize {
		return nil, fmt.Errorf("section %s: inflated size %d above %d", s.Name, size, maxSectionSize)
	}
	zr, err := zlib.NewReader(bytes.NewReader(b[12:]))
	if err != nil {
		return nil, fmt.Errorf("section %s: %w", s.Name, err)
	}
	defer zr.Close()
	out := make([]byte, size)
	if _, err := io.ReadFull(zr, out); err != nil {
		return nil, fmt.Errorf("section %s: %w", s.Name, err)
	}
	return out, nil
}

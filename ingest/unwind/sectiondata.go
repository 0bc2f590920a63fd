package unwind

import (
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
func sectionData(f *elf.File, ra io.ReaderAt, s *elf.Section, cache *SectionCache, path string, fi os.FileInfo) ([]byte, error) {
	if ra == nil || s.Flags&elf.SHF_COMPRESSED == 0 || s.Type == elf.SHT_NOBITS {
		return s.Data()
	}
	name, cached := cache.name(path, fi, ra, s)
	if cached {
		if b, ok := cache.get(name, s.Size); ok {
			return b, nil
		}
	}
	if b, ok := inflate(f, ra, s); ok {
		if cached {
			cache.put(name, b)
		}
		return b, nil
	}
	return s.Data()
}

// inflate decompresses s after its compression header (Elf32_Chdr or
// Elf64_Chdr); false when it cannot.
func inflate(f *elf.File, ra io.ReaderAt, s *elf.Section) ([]byte, bool) {
	if s.FileSize > maxSectionSize {
		return nil, false
	}
	raw := make([]byte, s.FileSize)
	if _, err := ra.ReadAt(raw, int64(s.Offset)); err != nil {
		return nil, false
	}
	var typ uint32
	var size uint64
	var hdr int
	switch f.Class {
	case elf.ELFCLASS64:
		if hdr = 24; len(raw) < hdr {
			return nil, false
		}
		typ, size = f.ByteOrder.Uint32(raw), f.ByteOrder.Uint64(raw[8:])
	case elf.ELFCLASS32:
		if hdr = 12; len(raw) < hdr {
			return nil, false
		}
		typ, size = f.ByteOrder.Uint32(raw), uint64(f.ByteOrder.Uint32(raw[4:]))
	default:
		return nil, false
	}
	if size > maxSectionSize || size != s.Size {
		return nil, false
	}
	var r io.Reader
	switch elf.CompressionType(typ) {
	case elf.COMPRESS_ZLIB:
		zr, err := zlib.NewReader(bytes.NewReader(raw[hdr:]))
		if err != nil {
			return nil, false
		}
		defer zr.Close()
		r = zr
	case elf.COMPRESS_ZSTD:
		zr, err := zstd.NewReader(bytes.NewReader(raw[hdr:]), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, false
		}
		defer zr.Close()
		r = zr
	default:
		return nil, false
	}
	out := make([]byte, size)
	if _, err := io.ReadFull(r, out); err != nil {
		return nil, false
	}
	// As debug/elf, the stream must hold exactly the declared size.
	var one [1]byte
	if n, err := r.Read(one[:]); n != 0 || err != nil && !errors.Is(err, io.EOF) {
		return nil, false
	}
	return out, true
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

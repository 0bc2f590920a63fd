// Package kcore reads the program headers of /proc/kcore and turns them
// into the segments perf maps the kernel with (tools/perf/util/symbol-elf.c,
// file__read_maps and elf_read_maps).
//
// Two sources give the same program headers:
//
//   - [ReadELF]: the ELF file itself, or a copy holding only its ELF header
//     and program headers (the data is never read). ELFCLASS32 and
//     ELFCLASS64, either byte order. Section headers are ignored, except
//     section 0 when e_phnum is PN_XNUM.
//   - [ParseReadelf]: the text `readelf -l` or `readelf -lW` prints (also
//     inside a longer `readelf -a` listing; only the "Program Headers:"
//     block is read).
//
// [Segments] then keeps what perf keeps, in file order: PT_LOAD headers
// with PF_R (or PF_X when asked for executable segments), of size
// min(p_memsz, p_filesz), skipping size 0. perf's dso__load_kcore passes
// exe = kernel map prot & PROT_EXEC, and the kernel map is made by
// map__new2 with prot 0, so perf keeps the readable segments; /proc/kcore
// marks every segment PF_R|PF_W|PF_X, so the two choices only differ on
// hand-made files.
//
// [Validate] checks the linear rule kcore guarantees and the index relies
// on, and [WriteHeaders] writes a header-only kcore for corpora and tests.
//
// ReadELF is hand-written rather than debug/elf because perf reads only
// the program headers, and debug/elf refuses a header-only copy whose
// section table was not copied (TestDivergesFromDebugELF).
package kcore

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/internal/regular"
)

// File is the part of a kcore ELF file perf uses.
type File struct {
	Class   elf.Class
	Data    elf.Data
	Type    elf.Type
	Machine elf.Machine
	Progs   []elf.ProgHeader // in file order
}

// ErrFormat is matched (errors.Is) by every error about malformed input:
// each *FormatError and each *ReadelfError.
var ErrFormat = errors.New("malformed kcore headers")

// A FormatError reports kcore ELF headers that cannot be read: the file
// offset of the header field or structure at fault and what was wrong, as
// debug/elf's FormatError does for ELF. Its message says "malformed kcore
// headers: …" and names the offset itself; ReadFile adds the file name.
// A read that fails (other than by ending early) is reported the same way,
// with the read's error in Err. errors.Is(err, ErrFormat) holds for every
// FormatError.
type FormatError struct {
	File string // the file's name, when ReadFile read it
	Off  int64  // the file offset of what is at fault; -1 when it is not representable
	Msg  string // the message after "malformed kcore headers: "
	Err  error  // the underlying error, if any
}

func (e *FormatError) Error() string {
	if e.File != "" {
		return ErrFormat.Error() + ": " + e.Msg + " (file " + e.File + ")"
	}
	return ErrFormat.Error() + ": " + e.Msg
}

func (e *FormatError) Unwrap() error { return e.Err }

// Is reports whether target is ErrFormat.
func (e *FormatError) Is(target error) bool { return target == ErrFormat }

// formatError returns a FormatError at file offset off (-1: unknown) whose
// message is format (fmt.Errorf's, %w included) applied to args.
func formatError(off int64, format string, args ...any) *FormatError {
	err := fmt.Errorf(format, args...)
	return &FormatError{Off: off, Msg: err.Error(), Err: errors.Unwrap(err)}
}

// Offsets of ELF header fields in ELFCLASS64 and ELFCLASS32 headers.
const (
	ephoff64, ephoff32         = 32, 28
	ephentsize64, ephentsize32 = 54, 42
	ephnum64, ephnum32         = 56, 44
	eshentsize64, eshentsize32 = 58, 46
)

// Sizes of the structures read, in bytes.
const (
	ehdr64Size = 64
	ehdr32Size = 52
	phdr64Size = 56
	phdr32Size = 32
	shdr64Size = 64
	shdr32Size = 40
)

// maxPrealloc bounds the program-header slice allocated up front; a larger
// count read from the file grows the slice only as headers are actually
// read, so memory stays proportional to the input.
const maxPrealloc = 4096

// ReadELF reads the ELF header and program headers of a kcore file. Every
// error is a *FormatError giving the offset of what was wrong.
func ReadELF(r io.ReaderAt) (*File, error) {
	var ident [elf.EI_NIDENT]byte
	if err := readAt(r, ident[:], 0, "ELF identification"); err != nil {
		return nil, err
	}
	if !bytes.Equal(ident[:4], []byte(elf.ELFMAG)) {
		return nil, formatError(0, "offset 0: bad ELF magic %q", ident[:4])
	}
	f := &File{Class: elf.Class(ident[elf.EI_CLASS]), Data: elf.Data(ident[elf.EI_DATA])}
	var bo binary.ByteOrder
	switch f.Data {
	case elf.ELFDATA2LSB:
		bo = binary.LittleEndian
	case elf.ELFDATA2MSB:
		bo = binary.BigEndian
	default:
		return nil, formatError(elf.EI_DATA, "offset %d: unknown ELF data encoding %d", elf.EI_DATA, f.Data)
	}
	if v := elf.Version(ident[elf.EI_VERSION]); v != elf.EV_CURRENT {
		return nil, formatError(elf.EI_VERSION, "offset %d: unknown ELF version %d", elf.EI_VERSION, v)
	}

	var phoff, shoff uint64
	var phentsize, phnum, shentsize uint16
	var phdrSize, shdrSize uint16
	var fo fieldOffsets // where the header fields read below are
	switch f.Class {
	case elf.ELFCLASS64:
		var h elf.Header64
		if err := readStruct(r, bo, &h, 0, ehdr64Size, "ELF header"); err != nil {
			return nil, err
		}
		f.Type, f.Machine = elf.Type(h.Type), elf.Machine(h.Machine)
		phoff, shoff = h.Phoff, h.Shoff
		phentsize, phnum, shentsize = h.Phentsize, h.Phnum, h.Shentsize
		phdrSize, shdrSize = phdr64Size, shdr64Size
		fo = fieldOffsets{phoff: ephoff64, phentsize: ephentsize64, phnum: ephnum64, shentsize: eshentsize64}
	case elf.ELFCLASS32:
		var h elf.Header32
		if err := readStruct(r, bo, &h, 0, ehdr32Size, "ELF header"); err != nil {
			return nil, err
		}
		f.Type, f.Machine = elf.Type(h.Type), elf.Machine(h.Machine)
		phoff, shoff = uint64(h.Phoff), uint64(h.Shoff)
		phentsize, phnum, shentsize = h.Phentsize, h.Phnum, h.Shentsize
		phdrSize, shdrSize = phdr32Size, shdr32Size
		fo = fieldOffsets{phoff: ephoff32, phentsize: ephentsize32, phnum: ephnum32, shentsize: eshentsize32}
	default:
		return nil, formatError(elf.EI_CLASS, "offset %d: unknown ELF class %d", elf.EI_CLASS, f.Class)
	}

	count := uint64(phnum)
	if phnum == 0xffff { // PN_XNUM: the count is in section header 0's sh_info.
		if shoff == 0 {
			return nil, formatError(fo.phnum, "offset %d: e_phnum is PN_XNUM but there is no section header 0", fo.phnum)
		}
		if shentsize < shdrSize {
			return nil, formatError(fo.shentsize, "offset %d: e_phnum is PN_XNUM but e_shentsize %d < %d",
				fo.shentsize, shentsize, shdrSize)
		}
		if f.Class == elf.ELFCLASS64 {
			var sh elf.Section64
			if err := readStruct(r, bo, &sh, shoff, shdr64Size, "section header 0"); err != nil {
				return nil, err
			}
			count = uint64(sh.Info)
		} else {
			var sh elf.Section32
			if err := readStruct(r, bo, &sh, shoff, shdr32Size, "section header 0"); err != nil {
				return nil, err
			}
			count = uint64(sh.Info)
		}
	}
	if count == 0 {
		return f, nil
	}
	if phentsize < phdrSize {
		return nil, formatError(fo.phentsize, "offset %d: e_phentsize %d smaller than a program header (%d bytes)",
			fo.phentsize, phentsize, phdrSize)
	}
	last := count - 1
	if phoff > math.MaxInt64 || last > (math.MaxInt64-phoff)/uint64(phentsize) ||
		phoff+last*uint64(phentsize) > math.MaxInt64-uint64(phdrSize) {
		return nil, formatError(fo.phoff, "offset %d: program header table at offset %#x (%d entries of %d bytes) overflows the file offset range",
			fo.phoff, phoff, count, phentsize)
	}
	f.Progs = make([]elf.ProgHeader, 0, min(count, maxPrealloc))
	for i := range count {
		off := phoff + i*uint64(phentsize)
		what := fmt.Sprintf("program header %d", i)
		var p elf.ProgHeader
		if f.Class == elf.ELFCLASS64 {
			var ph elf.Prog64
			if err := readStruct(r, bo, &ph, off, phdr64Size, what); err != nil {
				return nil, err
			}
			p = elf.ProgHeader{Type: elf.ProgType(ph.Type), Flags: elf.ProgFlag(ph.Flags), Off: ph.Off,
				Vaddr: ph.Vaddr, Paddr: ph.Paddr, Filesz: ph.Filesz, Memsz: ph.Memsz, Align: ph.Align}
		} else {
			var ph elf.Prog32
			if err := readStruct(r, bo, &ph, off, phdr32Size, what); err != nil {
				return nil, err
			}
			p = elf.ProgHeader{Type: elf.ProgType(ph.Type), Flags: elf.ProgFlag(ph.Flags), Off: uint64(ph.Off),
				Vaddr: uint64(ph.Vaddr), Paddr: uint64(ph.Paddr), Filesz: uint64(ph.Filesz),
				Memsz: uint64(ph.Memsz), Align: uint64(ph.Align)}
		}
		f.Progs = append(f.Progs, p)
	}
	return f, nil
}

// fieldOffsets holds the file offsets of ELF header fields, which differ
// between ELFCLASS64 and ELFCLASS32.
type fieldOffsets struct{ phoff, phentsize, phnum, shentsize int64 }

// readAt fills b from offset off, reporting a short file as truncated and a
// failed read as a FormatError wrapping the read's error.
func readAt(r io.ReaderAt, b []byte, off uint64, what string) error {
	if off > math.MaxInt64-uint64(len(b)) {
		return formatError(-1, "%s at offset %#x: offset out of range", what, off)
	}
	n, err := r.ReadAt(b, int64(off))
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		return formatError(int64(off), "%s at offset %#x: file truncated (%d of %d bytes)", what, off, n, len(b))
	}
	return formatError(int64(off), "%s at offset %#x: %w", what, off, err)
}

// readStruct decodes the size-byte structure v at offset off.
func readStruct(r io.ReaderAt, bo binary.ByteOrder, v any, off uint64, size int, what string) error {
	var buf [64]byte
	b := buf[:size]
	if err := readAt(r, b, off, what); err != nil {
		return err
	}
	if _, err := binary.Decode(b, bo, v); err != nil {
		return formatError(int64(off), "%s at offset %#x: %w", what, off, err)
	}
	return nil
}

// Segments returns the segments perf maps from progs, in file order: PT_LOAD
// headers with PF_X (exe) or PF_R (!exe), Size = min(Memsz, Filesz), those
// of size 0 skipped (elf_read_maps).
func Segments(progs []elf.ProgHeader, exe bool) []index.Segment {
	want := elf.PF_R
	if exe {
		want = elf.PF_X
	}
	var segs []index.Segment
	for _, p := range progs {
		if p.Type != elf.PT_LOAD || p.Flags&want == 0 {
			continue
		}
		size := min(p.Memsz, p.Filesz)
		if size == 0 {
			continue
		}
		segs = append(segs, index.Segment{Vaddr: p.Vaddr, Size: size, Offset: p.Off})
	}
	return segs
}

// ReadFile reads the segments of the kcore file at path as perf's
// dso__load_kcore sees them (readable PT_LOAD segments, file order). The
// file is either ELF (it starts with the ELF magic) or readelf text.
// Errors name the file: a *FormatError has it in File, others say
// "kcore PATH: …".
func ReadFile(path string) ([]index.Segment, error) {
	f, err := regular.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	progs, err := ReadProgs(f)
	if err != nil {
		var fe *FormatError
		if errors.As(err, &fe) && fe.File == "" {
			fe.File = path
			return nil, err
		}
		return nil, fmt.Errorf("kcore %s: %w", path, err)
	}
	return Segments(progs, false), nil
}

// ReadProgs reads program headers from r, which holds either an ELF file
// (it starts with the ELF magic) or readelf text.
func ReadProgs(r io.ReadSeeker) ([]elf.ProgHeader, error) {
	var magic [4]byte
	n, err := io.ReadFull(r, magic[:])
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, err
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	if n == 4 && string(magic[:]) == elf.ELFMAG {
		ra, ok := r.(io.ReaderAt)
		if !ok {
			ra = &seekReaderAt{r: r}
		}
		f, err := ReadELF(ra)
		if err != nil {
			return nil, err
		}
		return f.Progs, nil
	}
	return ParseReadelf(r)
}

// seekReaderAt adapts an io.ReadSeeker to io.ReaderAt (not concurrently).
type seekReaderAt struct{ r io.ReadSeeker }

func (s *seekReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if _, err := s.r.Seek(off, io.SeekStart); err != nil {
		return 0, err
	}
	return io.ReadFull(s.r, p)
}

// Validate checks segments the way the kcore contract needs them: each is
// non-empty, and together they pass index.CheckSegments (no range wraps
// past 2^64; any two that overlap map their common addresses to the same
// file offset, the linear rule Adrian Hunter states for kcore). Errors
// name the segments by their index in segs.
func Validate(segs []index.Segment) error {
	for i, s := range segs {
		if s.Size == 0 {
			return fmt.Errorf("kcore segment %d %s: empty", i, s)
		}
	}
	return index.CheckSegments(segs)
}

// WriteHeaders writes a header-only ELF64 core file describing segs: the ELF
// header (ET_CORE, the given machine and byte order) followed by one PT_LOAD
// program header per segment, in order, with flags PF_R|PF_W|PF_X,
// p_filesz = p_memsz = Size, p_paddr 0 and p_align 4096, as /proc/kcore
// has them. No data follows; ReadELF and readelf read it.
func WriteHeaders(w io.Writer, segs []index.Segment, machine elf.Machine, order binary.ByteOrder) error {
	if len(segs) >= 0xffff {
		return fmt.Errorf("kcore: %d segments: more than e_phnum can hold", len(segs))
	}
	var data elf.Data
	switch order.Uint16([]byte{1, 0}) {
	case 1:
		data = elf.ELFDATA2LSB
	default:
		data = elf.ELFDATA2MSB
	}
	h := elf.Header64{
		Type:      uint16(elf.ET_CORE),
		Machine:   uint16(machine),
		Version:   uint32(elf.EV_CURRENT),
		Phoff:     ehdr64Size,
		Ehsize:    ehdr64Size,
		Phentsize: phdr64Size,
		Phnum:     uint16(len(segs)),
	}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	h.Ident[elf.EI_DATA] = byte(data)
	h.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	h.Ident[elf.EI_OSABI] = byte(elf.ELFOSABI_NONE)

	buf := make([]byte, 0, ehdr64Size+phdr64Size*len(segs))
	buf, err := binary.Append(buf, order, &h)
	if err != nil {
		return err
	}
	for _, s := range segs {
		p := elf.Prog64{
			Type:   uint32(elf.PT_LOAD),
			Flags:  uint32(elf.PF_R | elf.PF_W | elf.PF_X),
			Off:    s.Offset,
			Vaddr:  s.Vaddr,
			Filesz: s.Size,
			Memsz:  s.Size,
			Align:  4096,
		}
		if buf, err = binary.Append(buf, order, &p); err != nil {
			return err
		}
	}
	_, err = w.Write(buf)
	return err
}

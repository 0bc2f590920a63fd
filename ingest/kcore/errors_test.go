package kcore

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// failingReaderAt returns err for every read at or past off.
type failingReaderAt struct {
	data []byte
	off  int64
	err  error
}

func (f failingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= f.off {
		return 0, f.err
	}
	return bytes.NewReader(f.data).ReadAt(p, off)
}

// Every ReadELF error is a *FormatError whose Off is the offset of the
// field or structure at fault, whose message names that offset, and which
// errors.Is matches against ErrFormat.
func TestFormatErrorOffsets(t *testing.T) {
	le := binary.LittleEndian
	good := writeHeaders(t, k1Segments(), elf.EM_AARCH64, le)
	g32 := elf32(t, progs32, elf.EM_386, le)
	patch := func(src []byte, off int, b ...byte) []byte {
		c := bytes.Clone(src)
		copy(c[off:], b)
		return c
	}
	xnum := func(src []byte, shoff uint64, shentsize uint16) []byte {
		c := patch(src, 56, 0xff, 0xff)
		le.PutUint64(c[40:], shoff)
		le.PutUint16(c[58:], shentsize)
		return c
	}
	ioErr := errors.New("device gone")
	for _, tt := range []struct {
		name string
		r    func() []byte
		fail int64 // reads at or past this offset fail with ioErr, when > 0
		off  int64
		msg  string
		err  error // wrapped, when not nil
	}{
		{name: "magic", r: func() []byte { return patch(good, 1, 'e') }, off: 0, msg: "offset 0: bad ELF magic"},
		{name: "class", r: func() []byte { return patch(good, elf.EI_CLASS, 3) }, off: elf.EI_CLASS, msg: "offset 4: unknown ELF class 3"},
		{name: "data", r: func() []byte { return patch(good, elf.EI_DATA, 0) }, off: elf.EI_DATA, msg: "offset 5: unknown ELF data encoding"},
		{name: "version", r: func() []byte { return patch(good, elf.EI_VERSION, 2) }, off: elf.EI_VERSION, msg: "offset 6: unknown ELF version"},
		{name: "short ident", r: func() []byte { return good[:10] }, off: 0, msg: "ELF identification at offset 0x0: file truncated (10 of 16 bytes)"},
		{name: "short header", r: func() []byte { return good[:40] }, off: 0, msg: "ELF header at offset 0x0: file truncated (40 of 64 bytes)"},
		{name: "phentsize 64", r: func() []byte { return patch(good, 54, 40, 0) }, off: 54, msg: "offset 54: e_phentsize 40 smaller"},
		{name: "phentsize 32", r: func() []byte { return patch(g32, 42, 20, 0) }, off: 42, msg: "offset 42: e_phentsize 20 smaller"},
		{name: "phoff overflow", r: func() []byte { return patch(good, 32, le.AppendUint64(nil, 1<<63)...) }, off: 32, msg: "offset 32: program header table at offset 0x8000000000000000"},
		{name: "program header truncated", r: func() []byte { return good[:64+56+10] }, off: 64 + 56, msg: "program header 1 at offset 0x78: file truncated (10 of 56 bytes)"},
		{name: "xnum no sections", r: func() []byte { return xnum(good, 0, 64) }, off: 56, msg: "offset 56: e_phnum is PN_XNUM but there is no section header 0"},
		{name: "xnum shentsize", r: func() []byte { return xnum(good, 64, 10) }, off: 58, msg: "offset 58: e_phnum is PN_XNUM but e_shentsize 10 < 64"},
		{name: "xnum section past end", r: func() []byte { return xnum(good, 1<<20, 64) }, off: 1 << 20, msg: "section header 0 at offset 0x100000: file truncated (0 of 64 bytes)"},
		{name: "read error", r: func() []byte { return good }, fail: 64, off: 64, msg: "program header 0 at offset 0x40: device gone", err: ioErr},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := tt.r()
			var r io.ReaderAt = bytes.NewReader(data)
			if tt.fail > 0 {
				r = failingReaderAt{data, tt.fail, ioErr}
			}
			_, err := ReadELF(r)
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %#v, not a *FormatError", err)
			}
			if fe.Off != tt.off || !strings.Contains(fe.Msg, tt.msg) || fe.File != "" {
				t.Errorf("got Off %d Msg %q File %q; want Off %d, Msg containing %q", fe.Off, fe.Msg, fe.File, tt.off, tt.msg)
			}
			if want := "malformed kcore headers: " + fe.Msg; err.Error() != want {
				t.Errorf("Error() = %q, want %q", err.Error(), want)
			}
			if !errors.Is(err, ErrFormat) {
				t.Errorf("errors.Is(%v, ErrFormat) = false", err)
			}
			if tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.err)
			}
		})
	}
}

// ReadFile names the file: in a *FormatError's File for ELF input, in the
// message for readelf text.
func TestReadFileErrorNamesFile(t *testing.T) {
	dir := t.TempDir()
	good := writeHeaders(t, k1Segments(), elf.EM_AARCH64, binary.LittleEndian)
	elfPath := filepath.Join(dir, "kcore")
	if err := os.WriteFile(elfPath, good[:100], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(elfPath)
	var fe *FormatError
	if !errors.As(err, &fe) || fe.File != elfPath || fe.Off != 64 ||
		err.Error() != "malformed kcore headers: program header 0 at offset 0x40: file truncated (36 of 56 bytes) (file "+elfPath+")" {
		t.Errorf("ReadFile(truncated ELF): %v", err)
	}
	textPath := filepath.Join(dir, "kcore.readelf")
	if err := os.WriteFile(textPath, []byte("nothing\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadFile(textPath)
	var re *ReadelfError
	if !errors.As(err, &re) || !errors.Is(err, ErrFormat) || !strings.HasPrefix(err.Error(), "kcore "+textPath+": readelf text: line 1:") {
		t.Errorf("ReadFile(bad text): %v", err)
	}
}

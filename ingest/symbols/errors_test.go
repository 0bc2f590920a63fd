package symbols

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// corruptKO writes a copy of the committed module object with patch
// applied to its bytes and returns its path, along with the file offset of
// the section header of the section named sec.
func corruptKO(t *testing.T, sec string, patch func(b []byte, shdr int)) string {
	t.Helper()
	const ko = "../modsec/testdata/my-mod.ko"
	b, err := os.ReadFile(ko)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(ko)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	shoff := int(binary.LittleEndian.Uint64(b[0x28:])) // e_shoff of this ELFCLASS64 LSB file
	idx := -1
	for i, s := range f.Sections {
		if s.Name == sec {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("%s has no section %s", ko, sec)
	}
	patch(b, shoff+idx*64)
	p := filepath.Join(t.TempDir(), "bad.ko")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Errors of ELF, ELFWithDebug and Section are *FileError values naming the
// file, and debug/elf's *elf.FormatError, which names the offset at fault,
// stays reachable.
func TestFileError(t *testing.T) {
	le := binary.LittleEndian
	var negOffShdr int
	negOff := corruptKO(t, ".noinstr.text", func(b []byte, shdr int) {
		negOffShdr = shdr
		le.PutUint64(b[shdr+24:], 1<<63) // sh_offset
	})
	oddSymtab := corruptKO(t, ".symtab", func(b []byte, shdr int) {
		le.PutUint64(b[shdr+32:], le.Uint64(b[shdr+32:])-1) // sh_size
	})
	missing := filepath.Join(t.TempDir(), "missing.ko")
	good := "../modsec/testdata/my-mod.ko"
	byteAt := func(off int) string { return fmt.Sprintf("in record at byte %#x", off) }
	for _, tt := range []struct {
		name   string
		load   func() error
		file   string
		msg    string // in the message, after the file name
		elfErr bool   // a *elf.FormatError is reachable
		path   bool   // a *fs.PathError is reachable
	}{
		{name: "ELF bad section offset", load: func() error { _, err := ELF(negOff); return err },
			file: negOff, msg: "invalid section offset", elfErr: true},
		{name: "Section bad section offset", load: func() error { _, err := Section(negOff, ".text"); return err },
			file: negOff, msg: "invalid section offset", elfErr: true},
		{name: "debug file bad section offset", load: func() error { _, err := ELFWithDebug(good, negOff); return err },
			file: negOff, msg: "invalid section offset", elfErr: true},
		{name: "ELF symtab size", load: func() error { _, err := ELF(oddSymtab); return err },
			file: oddSymtab, msg: "length of symbol section is not a multiple of"},
		{name: "Section symtab size", load: func() error { _, err := Section(oddSymtab, ".noinstr.text"); return err },
			file: oddSymtab, msg: "length of symbol section is not a multiple of"},
		{name: "Section no section", load: func() error { _, err := Section(good, ".nope"); return err },
			file: good, msg: "no section .nope"},
		{name: "ELF missing", load: func() error { _, err := ELF(missing); return err },
			file: missing, msg: "no such file", path: true},
		{name: "Section missing", load: func() error { _, err := Section(missing, ".text"); return err },
			file: missing, msg: "no such file", path: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.load()
			var fe *FileError
			if !errors.As(err, &fe) || fe.File != tt.file {
				t.Fatalf("err = %v, want a *FileError for %s", err, tt.file)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "symbols: ") || !strings.Contains(msg, tt.msg) || strings.Count(msg, tt.file) != 1 {
				t.Errorf("Error() = %q, want it to name %s once and say %q", msg, tt.file, tt.msg)
			}
			var ee *elf.FormatError
			if got := errors.As(err, &ee); got != tt.elfErr {
				t.Errorf("errors.As(*elf.FormatError) = %v, want %v", got, tt.elfErr)
			}
			if tt.elfErr && !strings.Contains(msg, byteAt(negOffShdr)) {
				t.Errorf("Error() = %q, want the section header's offset (%s)", msg, byteAt(negOffShdr))
			}
			var pe *fs.PathError
			if got := errors.As(err, &pe); got != tt.path {
				t.Errorf("errors.As(*fs.PathError) = %v, want %v", got, tt.path)
			}
		})
	}
}

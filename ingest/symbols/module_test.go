package symbols

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/internal/elfwrite"
	"github.com/ulikunitz/xz"
)

// moduleFile is a small relocatable module: a build id note (unless id
// is nil), .modinfo, then .text (0x1000 bytes), .init.text and .data.
func moduleFile(id []byte, syms []elfwrite.Symbol) elfwrite.File {
	var secs []elfwrite.Section
	if id != nil {
		secs = append(secs, elfwrite.Section{Name: ".note.gnu.build-id", Type: elf.SHT_NOTE, Flags: elf.SHF_ALLOC, Data: elfwrite.BuildIDNote(id)})
	}
	exec := elf.SHF_ALLOC | elf.SHF_EXECINSTR
	secs = append(secs,
		elfwrite.Section{Name: ".modinfo", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: make([]byte, 0x40)},
		elfwrite.Section{Name: ".text", Type: elf.SHT_PROGBITS, Flags: exec, Data: make([]byte, 0x1000)},
		elfwrite.Section{Name: ".init.text", Type: elf.SHT_PROGBITS, Flags: exec, Data: make([]byte, 0x100)},
		elfwrite.Section{Name: ".data", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Data: make([]byte, 0x100)},
	)
	return elfwrite.File{Type: elf.ET_REL, Machine: elf.EM_X86_64, Sections: secs, Symbols: syms}
}

var testModuleSyms = []elfwrite.Symbol{
	{Name: "mod_b", Type: elf.STT_FUNC, Bind: elf.STB_GLOBAL, Section: ".text", Value: 0x100, Size: 0x80},
	{Name: "mod_a", Type: elf.STT_FUNC, Bind: elf.STB_LOCAL, Section: ".text", Value: 0x10},
	{Name: "mod_init", Type: elf.STT_FUNC, Bind: elf.STB_GLOBAL, Section: ".init.text", Value: 0x20, Size: 0x10},
	{Name: "mod_var", Type: elf.STT_OBJECT, Bind: elf.STB_GLOBAL, Section: ".data", Value: 0x8, Size: 8},
	{Name: "mod_abs", Type: elf.STT_FUNC, Bind: elf.STB_GLOBAL, Index: elf.SHN_ABS, Value: 0x40, Size: 4},
}

// writeModule writes f, compressed as comp says ("gz", "xz" or ""), and
// returns its path.
func writeModule(t testing.TB, f elfwrite.File, comp string) string {
	t.Helper()
	b, err := f.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	switch comp {
	case "gz":
		w := gzip.NewWriter(&buf)
		w.Write(b)
		w.Close()
		b = buf.Bytes()
	case "xz":
		w, err := xz.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
		w.Close()
		b = buf.Bytes()
	}
	path := filepath.Join(t.TempDir(), "mod.ko")
	if comp != "" {
		path += "." + comp
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReadModule checks a module's tables by perf 6.1's rules for a
// kmod DSO: symbols keyed by st_value plus their section's file offset,
// .text's fixed up (a zero-size symbol reaches the next; the last one the
// page after its start's), every other section's in a table of its own,
// absolute symbols dropped; the same whether the file is plain, gzip or
// xz, and a plain file read as it is under a compressed module's name.
func TestReadModule(t *testing.T) {
	id := []byte{9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}
	f := moduleFile(id, testModuleSyms)
	plain := writeModule(t, f, "")
	text := textOffset(t, plain)
	for _, tc := range []struct{ name, path, comp string }{
		{"plain", plain, ""},
		{"gz", writeModule(t, f, "gz"), "gz"},
		{"xz", writeModule(t, f, "xz"), "xz"},
		{"plain named .xz", plain, "xz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := ReadModule(tc.path, tc.comp, id)
			if err != nil {
				t.Fatal(err)
			}
			if v.Reloc != 0 || v.Text == nil || v.Text.Offset != text {
				t.Fatalf("Reloc %#x, Text %+v: want 0 and .text at offset %#x", v.Reloc, v.Text, text)
			}
			want := []Symbol{{Start: text + 0x10, End: text + 0x100, Name: "mod_a"}, {Start: text + 0x100, End: text + 0x180, Name: "mod_b"}}
			if got := v.Text.Table.Symbols(); !slices.Equal(got, want) {
				t.Errorf(".text symbols %v, want %v", got, want)
			}
			var names []string
			for _, s := range v.Sections {
				names = append(names, s.Name)
			}
			if !slices.Equal(names, []string{".init.text", ".data"}) {
				t.Fatalf("sections %q", names)
			}
			if got := v.Sections[0].Table.Symbols(); len(got) != 1 || got[0].Start != v.Sections[0].Offset+0x20 || got[0].Name != "mod_init" {
				t.Errorf(".init.text symbols %v (section at %#x)", got, v.Sections[0].Offset)
			}
			if got := v.Sections[1].Table.Symbols(); len(got) != 1 || !got[0].Object {
				t.Errorf(".data symbols %v: want the object", got)
			}
			if got := FileBuildID(tc.path, tc.comp); !bytes.Equal(got, id) {
				t.Errorf("FileBuildID = %x, want %x", got, id)
			}
		})
	}
}

// textOffset is the sh_offset of the .text of the ELF file at path.
func textOffset(t *testing.T, path string) uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return f.Section(".text").Offset
}

// TestReadModuleRefused checks the files symsrc__init and dso__load_sym
// refuse for a module, each an error naming the file.
func TestReadModuleRefused(t *testing.T) {
	id := []byte{1, 2, 3, 4}
	notELF := filepath.Join(t.TempDir(), "junk.ko")
	os.WriteFile(notELF, []byte("not an ELF file at all"), 0o644)
	badGzip := filepath.Join(t.TempDir(), "bad.ko.gz")
	os.WriteFile(badGzip, []byte{0x1f, 0x8b, 8, 0, 0, 0}, 0o644)
	for _, tc := range []struct {
		name, path, comp string
		id               []byte
		is               error  // errors.Is, when set
		says             string // in the message
	}{
		{"other build id", writeModule(t, moduleFile([]byte{1, 2, 3, 5}, testModuleSyms), ""), "", id, ErrBuildIDMismatch, ""},
		{"no build id", writeModule(t, moduleFile(nil, testModuleSyms), "xz"), "xz", id, ErrBuildIDMismatch, ""},
		{"stripped", writeModule(t, moduleFile(id, nil), "gz"), "gz", id, ErrStripped, ""},
		{"not ELF", notELF, "", nil, nil, "bad magic"},
		{"broken gzip", badGzip, "gz", nil, nil, "gz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadModule(tc.path, tc.comp, tc.id)
			var fe *FileError
			if !errors.As(err, &fe) || fe.File != tc.path {
				t.Fatalf("err = %v, want a *FileError naming %s", err, tc.path)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("err = %v, want it to say %q", err, tc.says)
			}
		})
	}
}

// A compressed module inflating past the bound is refused, not read
// whole.
func TestReadModuleBound(t *testing.T) {
	path := writeModule(t, moduleFile(nil, testModuleSyms), "xz")
	defer func(n int) { maxModuleBytes = n }(maxModuleBytes)
	maxModuleBytes = 1000
	if _, err := ReadModule(path, "xz", nil); err == nil || !strings.Contains(err.Error(), "more than 1000 bytes") {
		t.Fatalf("err = %v, want the bound named", err)
	}
}

// TestWithKallsyms checks the table of a module whose file's symbols
// came first, with kallsyms' symbols inserted after the file's fix-ups:
// none gives the file's table itself; ones overlapping the file's are
// found as perf's tree finds them (its descent meets the later
// insertion's node first here: the tree's root is the file's second
// symbol, and kallsyms' symbol lies right of it).
func TestWithKallsyms(t *testing.T) {
	path := writeModule(t, moduleFile(nil, testModuleSyms), "")
	v, err := ReadModule(path, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	text := textOffset(t, path)
	if got := v.Text.WithKallsyms(nil); got != v.Text.Table {
		t.Error("WithKallsyms(nil) made a new table")
	}
	var kb builder
	kb.insert(entry{start: text + 0x140, end: text + 0x200, name: "kallsyms_fn"})
	merged := v.Text.WithKallsyms(kb.table(nil))
	for _, tc := range []struct {
		addr uint64
		want string
	}{
		{text + 0x20, "mod_a"},
		{text + 0x120, "mod_b"},
		{text + 0x150, "mod_b"}, // both hold it: mod_b's node is met first
		{text + 0x190, "kallsyms_fn"},
		{text + 0x1ff, "kallsyms_fn"},
		{text + 0x200, ""}, // symbols__find goes right at an end that is not a start
	} {
		got, _ := merged.Find(tc.addr)
		if got.Name != tc.want {
			t.Errorf("Find(%#x) = %q, want %q", tc.addr, got.Name, tc.want)
		}
	}
	if i := merged.IndexOf(Symbol{Start: text + 0x140, End: text + 0x200, Name: "kallsyms_fn"}); i < 0 || merged.Symbol(i).Name != "kallsyms_fn" {
		t.Errorf("IndexOf(kallsyms_fn) = %d", i)
	}
	if i := merged.IndexOf(Symbol{Start: text + 0x140, Name: "other"}); i != -1 {
		t.Errorf("IndexOf(absent) = %d, want -1", i)
	}
}

// FuzzReadModule reads arbitrary bytes as a module file, plain or under a
// compressed module's name: an error or tables, never a panic, and never
// more than the bound inflated.
func FuzzReadModule(f *testing.F) {
	mod := moduleFile([]byte{1, 2, 3, 4}, testModuleSyms)
	for _, comp := range []string{"", "gz", "xz"} {
		b, err := os.ReadFile(writeModule(f, mod, comp))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, comp)
	}
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3}, "gz")
	f.Fuzz(func(t *testing.T, data []byte, comp string) {
		path := filepath.Join(t.TempDir(), "fuzz.ko")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		defer func(n int) { maxModuleBytes = n }(maxModuleBytes)
		maxModuleBytes = 1 << 20
		v, err := ReadModule(path, comp, nil)
		var fe *FileError
		if err != nil && !errors.As(err, &fe) {
			t.Fatalf("err %v is not a *FileError", err)
		}
		if err == nil && v.Text != nil {
			v.Text.Table.Find(v.Text.Offset)
			v.Text.WithKallsyms(v.Text.Table)
		}
		FileBuildID(path, comp)
	})
}

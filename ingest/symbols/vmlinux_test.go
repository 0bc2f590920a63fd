package symbols

import (
	"bytes"
	"debug/elf"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kmapindex/kmapindex/internal/elfwrite"
)

// vmlinuxFile is a small kernel image: .text at 0x1000 (file offset
// 0x200000), .init.text after it, a .data object and a build id note.
func vmlinuxFile(id []byte, syms []elfwrite.Symbol) elfwrite.File {
	f := elfwrite.File{Type: elf.ET_EXEC, Machine: elf.EM_X86_64, Sections: []elfwrite.Section{
		{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Addr: 0x1000, Size: 0x1000, Offset: 0x200000},
		{Name: ".init.text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Addr: 0x3000, Size: 0x100, Offset: 0x202000},
		{Name: ".data", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Addr: 0x5000, Size: 0x100, Offset: 0x204000},
		{Name: ".comment", Type: elf.SHT_PROGBITS, Data: []byte("x\x00")},
	}, Symbols: syms}
	if id != nil {
		f.Sections = append(f.Sections, elfwrite.Section{Name: ".notes", Type: elf.SHT_NOTE, Data: elfwrite.BuildIDNote(id)})
	}
	return f
}

func writeVmlinux(t *testing.T, f elfwrite.File) string {
	t.Helper()
	b, err := f.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "vmlinux")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var (
	testKernelID   = []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	testKernelSyms = []elfwrite.Symbol{
		{Name: "_text", Type: elf.STT_NOTYPE, Bind: elf.STB_GLOBAL, Section: ".text", Value: 0x1000},
		{Name: "b_func", Type: elf.STT_FUNC, Bind: elf.STB_GLOBAL, Section: ".text", Value: 0x1100, Size: 0x10},
		{Name: "a_func", Type: elf.STT_FUNC, Bind: elf.STB_LOCAL, Section: ".text", Value: 0x1000, Size: 0},
		{Name: "init_func", Type: elf.STT_FUNC, Bind: elf.STB_GLOBAL, Section: ".init.text", Value: 0x3010, Size: 0x20},
		{Name: "init_zero", Type: elf.STT_FUNC, Bind: elf.STB_GLOBAL, Section: ".init.text", Value: 0x3040},
		{Name: "an_object", Type: elf.STT_OBJECT, Bind: elf.STB_GLOBAL, Section: ".data", Value: 0x5008, Size: 8},
		{Name: "hidden", Type: elf.STT_NOTYPE, Bind: elf.STB_LOCAL, Other: uint8(elf.STV_HIDDEN), Section: ".text", Value: 0x1200},
		{Name: "data_label", Type: elf.STT_NOTYPE, Bind: elf.STB_LOCAL, Section: ".comment", Value: 1},
		{Name: "abs", Type: elf.STT_FUNC, Bind: elf.STB_GLOBAL, Index: elf.SHN_ABS, Value: 0x1300, Size: 4},
		{Name: "undef", Type: elf.STT_FUNC, Bind: elf.STB_GLOBAL},
	}
)

// TestReadVmlinux checks the tables and the relocation against what perf
// 6.1's dso__load_sym makes of the file by its rules: file offsets, the
// .text table fixed up (a zero-size symbol reaches the next; the last the
// next page), the other sections' tables not, and the symbols perf drops.
func TestReadVmlinux(t *testing.T) {
	path := writeVmlinux(t, vmlinuxFile(testKernelID, testKernelSyms))
	v, err := ReadVmlinux(path, testKernelID, "_text", 0xffffffff81000000)
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(0xffffffff81000000 - 0x1000); v.Reloc != want {
		t.Errorf("Reloc %#x, want %#x", v.Reloc, want)
	}
	if v.Symbols != 6 {
		t.Errorf("%d symbols kept, want 6 (_text, a_func, b_func, init_func, init_zero, an_object)", v.Symbols)
	}
	if v.Text == nil || v.Text.Addr != 0x1000 || v.Text.Offset != 0x200000 || v.Text.Size != 0x1000 {
		t.Fatalf("Text %+v, want .text at 0x1000, offset 0x200000, size 0x1000", v.Text)
	}
	lookups := []struct {
		table *Table
		off   uint64
		want  string
	}{
		{v.Text.Table, 0x200000, "a_func"}, // _text stays empty, a_func reaches b_func: the sized one wins
		{v.Text.Table, 0x2000ff, "a_func"}, // extended to b_func
		{v.Text.Table, 0x200100, "b_func"},
		{v.Text.Table, 0x20010f, "b_func"},
		{v.Text.Table, 0x200110, ""}, // past b_func's size: no symbol
		{v.Text.Table, 0x200200, ""}, // the hidden label is dropped
	}
	if len(v.Sections) != 2 || v.Sections[0].Name != ".init.text" || v.Sections[1].Name != ".data" {
		t.Fatalf("Sections %+v, want .init.text then .data", v.Sections)
	}
	init := v.Sections[0].Table
	lookups = append(lookups, []struct {
		table *Table
		off   uint64
		want  string
	}{
		{init, 0x202010, "init_func"},
		{init, 0x20202f, "init_func"},
		{init, 0x202030, ""},          // no fix-up in a section DSO
		{init, 0x202040, "init_zero"}, // a zero-size symbol: its own address only
		{init, 0x202041, ""},
		{v.Sections[1].Table, 0x204008, "an_object"},
	}...)
	for _, l := range lookups {
		got := ""
		if s, ok := l.table.Find(l.off); ok {
			got = s.Name
		}
		if got != l.want {
			t.Errorf("offset %#x: %q, want %q", l.off, got, l.want)
		}
	}
}

// TestReadVmlinuxRefused lists the files perf 6.1 passes over, and the
// malformed ones: each is an error naming the file.
func TestReadVmlinuxRefused(t *testing.T) {
	garbage := filepath.Join(t.TempDir(), "garbage")
	if err := os.WriteFile(garbage, []byte("not an ELF file at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	badIndex := append([]elfwrite.Symbol(nil), testKernelSyms...)
	badIndex = append(badIndex, elfwrite.Symbol{Name: "bad", Type: elf.STT_FUNC, Index: 200, Value: 0x1400})
	core := vmlinuxFile(testKernelID, testKernelSyms)
	core.Type = elf.ET_CORE
	for _, tc := range []struct {
		name string
		path string
		id   []byte
		ref  string
		is   error
	}{
		{"not ELF", garbage, nil, "", nil},
		{"missing", filepath.Join(t.TempDir(), "none"), nil, "", os.ErrNotExist},
		{"other build id", writeVmlinux(t, vmlinuxFile(testKernelID[1:], testKernelSyms)), testKernelID, "", ErrBuildIDMismatch},
		{"no build id in the file", writeVmlinux(t, vmlinuxFile(nil, testKernelSyms)), testKernelID, "", ErrBuildIDMismatch},
		{"stripped", writeVmlinux(t, vmlinuxFile(testKernelID, nil)), testKernelID, "", ErrStripped},
		{"section index out of range", writeVmlinux(t, vmlinuxFile(testKernelID, badIndex)), testKernelID, "", nil},
		{"ET_CORE unrelocated", writeVmlinux(t, core), testKernelID, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := ReadVmlinux(tc.path, tc.id, tc.ref, 0)
			var fe *FileError
			if !errors.As(err, &fe) || fe.File != tc.path {
				t.Fatalf("ReadVmlinux = %+v, %v; want a *FileError naming %s", v, err, tc.path)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v, want %v", err, tc.is)
			}
		})
	}
	// No build id recorded: any file will do, a build id or not.
	if _, err := ReadVmlinux(writeVmlinux(t, vmlinuxFile(nil, testKernelSyms)), nil, "", 0); err != nil {
		t.Errorf("without a recorded build id: %v", err)
	}
	// The recorded id may carry perf's zero padding.
	if _, err := ReadVmlinux(writeVmlinux(t, vmlinuxFile(testKernelID[:16], testKernelSyms)), append(testKernelID[:16:16], 0, 0, 0, 0), "", 0); err != nil {
		t.Errorf("a 16-byte id padded to 20: %v", err)
	}
}

// FuzzReadVmlinux: any bytes give a Vmlinux or an error, never a panic.
func FuzzReadVmlinux(f *testing.F) {
	b, err := (&elfwrite.File{Type: elf.ET_EXEC, Machine: elf.EM_X86_64, Sections: vmlinuxFile(testKernelID, nil).Sections, Symbols: testKernelSyms}).Bytes()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b, []byte(nil))
	f.Add(b, testKernelID)
	f.Fuzz(func(t *testing.T, data, id []byte) {
		ef, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			return
		}
		v, err := readVmlinux(ef, "fuzz", id, "_text", 0xffffffff81000000, false)
		if err == nil && v.Text != nil {
			v.Text.Table.Find(v.Text.Offset)
		}
	})
}

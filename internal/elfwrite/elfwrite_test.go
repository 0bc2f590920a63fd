package elfwrite

import (
	"bytes"
	"debug/elf"
	"testing"
)

// The file reads back through debug/elf as written.
func TestBytesReadBack(t *testing.T) {
	id := []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3}
	f := File{Type: elf.ET_EXEC, Machine: elf.EM_X86_64, Sections: []Section{
		{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Addr: 0x1000, Size: 0x500, Offset: 0x4000},
		{Name: ".data", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Addr: 0x2000, Data: []byte("hello")},
		{Name: ".notes", Type: elf.SHT_NOTE, Data: BuildIDNote(id)},
	}, Symbols: []Symbol{
		{Name: "f", Type: elf.STT_FUNC, Bind: elf.STB_GLOBAL, Section: ".text", Value: 0x1010, Size: 0x20},
		{Name: "d", Type: elf.STT_OBJECT, Bind: elf.STB_LOCAL, Other: uint8(elf.STV_HIDDEN), Section: ".data", Value: 0x2000, Size: 5},
		{Name: "a", Type: elf.STT_FUNC, Bind: elf.STB_WEAK, Index: elf.SHN_ABS, Value: 7},
	}}
	ef := readBack(t, f)
	if ef.Type != elf.ET_EXEC || ef.Machine != elf.EM_X86_64 || ef.Class != elf.ELFCLASS64 {
		t.Errorf("header %v %v %v", ef.Type, ef.Machine, ef.Class)
	}
	text := ef.Section(".text")
	if text == nil || text.Addr != 0x1000 || text.Size != 0x500 || text.Offset != 0x4000 {
		t.Errorf(".text %+v", text)
	}
	if data, err := ef.Section(".data").Data(); err != nil || string(data) != "hello" {
		t.Errorf(".data %q, %v", data, err)
	}
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	want := []elf.Symbol{
		{Name: "f", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC), Section: 1, Value: 0x1010, Size: 0x20},
		{Name: "d", Info: elf.ST_INFO(elf.STB_LOCAL, elf.STT_OBJECT), Other: uint8(elf.STV_HIDDEN), Section: 2, Value: 0x2000, Size: 5},
		{Name: "a", Info: elf.ST_INFO(elf.STB_WEAK, elf.STT_FUNC), Section: elf.SHN_ABS, Value: 7},
	}
	sameSymbols(t, syms, want)
	notes, _ := ef.Section(".notes").Data()
	if len(notes) != 12+4+8 || !bytes.Equal(notes[16:16+len(id)], id) {
		t.Errorf("note % x", notes)
	}
	if _, err := (&File{Symbols: []Symbol{{Name: "x", Section: ".none"}}}).Bytes(); err == nil {
		t.Error("a symbol in a missing section: no error")
	}
}

// Dynamic symbols read back as debug/elf's DynamicSymbols, beside the
// .symtab's.
func TestDynSymbolsReadBack(t *testing.T) {
	f := File{Type: elf.ET_DYN, Machine: elf.EM_X86_64, Sections: []Section{
		{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Addr: 0x1000, Size: 0x100},
	}, Symbols: []Symbol{
		{Name: "local", Type: elf.STT_FUNC, Bind: elf.STB_LOCAL, Section: ".text", Value: 0x1000, Size: 0x10},
	}, DynSymbols: []Symbol{
		{Name: "exported", Type: elf.STT_FUNC, Bind: elf.STB_GLOBAL, Section: ".text", Value: 0x1010, Size: 0x20},
		{Name: "bad", Type: elf.STT_OBJECT, Bind: elf.STB_GLOBAL, Index: 48, Value: 0, Size: 8},
	}}
	ef := readBack(t, f)
	syms, err := ef.Symbols()
	if err != nil || len(syms) != 1 || syms[0].Name != "local" {
		t.Errorf(".symtab %+v, %v", syms, err)
	}
	dyn, err := ef.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	want := []elf.Symbol{
		{Name: "exported", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC), Section: 1, Value: 0x1010, Size: 0x20},
		{Name: "bad", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_OBJECT), Section: 48, Size: 8},
	}
	for i := range dyn {
		dyn[i].Version, dyn[i].Library = "", "" // of no concern here
	}
	sameSymbols(t, dyn, want)
}

// sameSymbols compares symbols read back with those wanted, in order.
func sameSymbols(t *testing.T, got, want []elf.Symbol) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d symbols, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("symbol %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// readBack returns f's bytes read by debug/elf.
func readBack(t *testing.T, f File) *elf.File {
	t.Helper()
	b, err := f.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return ef
}

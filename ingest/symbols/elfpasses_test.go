package symbols

import (
	"debug/elf"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kmapindex/kmapindex/internal/elfwrite"
)

// TestELFLoadsSymtabThenDynsym checks perf 6.1's two passes of
// dso__load_sym: the .symtab's symbols, then the .dynsym's, each pass fixed
// up (ends, duplicates) when it completes; a symbol whose section perf
// cannot get stops the load where it is, unfixed, and fails it
// (LoadFailed). librustc_driver's BOLT-rewritten .dynsym has such an
// entry, and perf kept its identical-code-folded aliases unresolved.
func TestELFLoadsSymtabThenDynsym(t *testing.T) {
	text := func(name string, value uint64) elfwrite.Symbol {
		return elfwrite.Symbol{Name: name, Type: elf.STT_FUNC, Bind: elf.STB_GLOBAL, Section: ".text", Value: value, Size: 0x10}
	}
	bad := elfwrite.Symbol{Name: "rust_metadata", Type: elf.STT_OBJECT, Bind: elf.STB_GLOBAL, Index: 48, Size: 8}
	tests := []struct {
		name       string
		symtab     []elfwrite.Symbol
		dynsym     []elfwrite.Symbol
		want       []string // Symbols' names, in order
		loadFailed bool
	}{
		{"only .symtab", []elfwrite.Symbol{text("a", 0x1000)}, nil, []string{"a"}, false},
		{"only .dynsym", nil, []elfwrite.Symbol{text("a", 0x1000)}, []string{"a"}, false},
		{"a .dynsym duplicate loses to its .symtab twin",
			[]elfwrite.Symbol{text("a", 0x1000), text("b", 0x1100)},
			[]elfwrite.Symbol{text("b", 0x1100)},
			[]string{"a", "b"}, false},
		{"the .dynsym adds what the .symtab lacks",
			[]elfwrite.Symbol{text("a", 0x1000)},
			[]elfwrite.Symbol{text("a", 0x1000), text("extra", 0x1200)},
			[]string{"a", "extra"}, false},
		{"a .dynsym alias with a longer name wins",
			[]elfwrite.Symbol{text("a", 0x1000)},
			[]elfwrite.Symbol{text("a_longer", 0x1000)},
			[]string{"a_longer"}, false},
		{"a bad section index in the .dynsym stops its pass unfixed",
			[]elfwrite.Symbol{text("long_name", 0x1000), text("s", 0x1000)},
			[]elfwrite.Symbol{text("s", 0x1000), bad, text("extra", 0x1200)},
			[]string{"long_name", "s"}, true},
		{"a bad section index in the .symtab stops before the .dynsym",
			[]elfwrite.Symbol{text("a", 0x1000), bad, text("b", 0x1100)},
			[]elfwrite.Symbol{text("c", 0x1200)},
			[]string{"a"}, true},
		{"stopped at the first symbol: nothing loaded, nothing failed to find",
			[]elfwrite.Symbol{bad, text("a", 0x1000)}, nil,
			nil, false},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "lib.so")
			writeELF(t, path, elfwrite.File{Type: elf.ET_DYN, Machine: elf.EM_X86_64, Sections: []elfwrite.Section{
				{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Addr: 0x1000, Data: make([]byte, 0x300)},
			}, Symbols: tc.symtab, DynSymbols: tc.dynsym})
			tab, err := ELF(path)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range tab.Symbols() {
				got = append(got, s.Name)
			}
			if !slices.Equal(got, tc.want) || tab.LoadFailed() != tc.loadFailed {
				t.Errorf("case %d: symbols %q, LoadFailed %v; want %q, %v", i, got, tab.LoadFailed(), tc.want, tc.loadFailed)
			}
		})
	}
}

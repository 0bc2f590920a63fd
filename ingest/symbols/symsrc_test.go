package symbols

import (
	"debug/elf"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kmapindex/kmapindex/internal/elfwrite"
)

// TestSymbolCandidates checks the candidates' names and order, as
// dso__read_binary_type_filename makes them for binary_type_symtab.
func TestSymbolCandidates(t *testing.T) {
	symfs := t.TempDir()
	bin := "/usr/lib/x86_64-linux-gnu/libfoo.so.1"
	// The file below the symfs, with a debug link whose file lies in
	// its .debug directory.
	f := elfwrite.File{Type: elf.ET_DYN, Machine: elf.EM_X86_64, Sections: []elfwrite.Section{
		{Name: ".gnu_debuglink", Type: elf.SHT_PROGBITS, Data: []byte("libfoo.debug\x00\x00\x00\x00\x12\x34\x56\x78")},
	}}
	writeELF(t, symfs+bin, f)
	writeELF(t, symfs+"/usr/lib/x86_64-linux-gnu/.debug/libfoo.debug", elfwrite.File{Type: elf.ET_DYN, Machine: elf.EM_X86_64})
	id := []byte{0xab, 0xcd, 1, 2}
	cache := func(id []byte, entry string) string { return "CACHE/" + entry }
	want := []string{
		symfs + "/usr/lib/x86_64-linux-gnu/.debug/libfoo.debug",
		"CACHE/elf", "CACHE/debug",
		symfs + "/usr/lib/debug/usr/lib/x86_64-linux-gnu/libfoo.so.1.debug",
		symfs + "/usr/lib/debug/usr/lib/x86_64-linux-gnu/libfoo.so.1",
		symfs + "/usr/lib/debug/.build-id/ab/cd0102.debug",
		symfs + bin,
		symfs + "/usr/lib/x86_64-linux-gnu/.debug/libfoo.so.1",
		symfs + "/usr/lib/debug/lib/x86_64-linux-gnu/libfoo.so.1",
	}
	if got := SymbolCandidates(bin, symfs, id, cache); !slices.Equal(got, want) {
		t.Errorf("SymbolCandidates =\n%q\nwant\n%q", got, want)
	}
	// Without a build id: no cache entries, no .build-id path; outside
	// /usr/lib, no mixed-up Ubuntu path; without its file, no debug link.
	want = []string{"/usr/lib/debug/opt/x.debug", "/usr/lib/debug/opt/x", "/opt/x", "/opt/.debug/x"}
	if got := SymbolCandidates("/opt/x", "", nil, cache); !slices.Equal(got, want) {
		t.Errorf("SymbolCandidates without an id =\n%q\nwant\n%q", got, want)
	}
}

// TestSymbolSources checks perf's choice among candidates: the first
// with a .symtab gives the symbols, the first with a .dynsym is the
// runtime file, files of another build id or not ELF are passed over,
// and each stands in for the other when missing.
func TestSymbolSources(t *testing.T) {
	dir := t.TempDir()
	id := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	file := func(name string, id []byte, secs ...elfwrite.Section) string {
		if id != nil {
			secs = append(secs, elfwrite.Section{Name: ".note.gnu.build-id", Type: elf.SHT_NOTE, Data: elfwrite.BuildIDNote(id)})
		}
		p := filepath.Join(dir, name)
		writeELF(t, p, elfwrite.File{Type: elf.ET_DYN, Machine: elf.EM_X86_64, Sections: secs})
		return p
	}
	dynsym := elfwrite.Section{Name: ".dynsym", Type: elf.SHT_DYNSYM, Data: make([]byte, 48)}
	symtab := elfwrite.Section{Name: ".symtab", Type: elf.SHT_SYMTAB, Data: make([]byte, 48)}
	nobits := elfwrite.Section{Name: ".dynsym", Type: elf.SHT_NOBITS, Size: 48} // a debug file's
	stripped := file("stripped", id, dynsym)
	debug := file("debug", id, symtab, nobits)
	otherDebug := file("other", []byte{9, 9, 9}, symtab)
	full := file("full", id, dynsym, symtab)
	junk := filepath.Join(dir, "junk")
	os.WriteFile(junk, []byte("not ELF"), 0o644)
	for _, tc := range []struct {
		name          string
		cands         []string
		id            []byte
		runtime, syms string
		ok            bool
	}{
		{"debug file first", []string{junk, otherDebug, debug, stripped}, id, stripped, debug, true},
		{"runtime first", []string{stripped, debug}, id, stripped, debug, true},
		{"one file both", []string{full, debug}, id, full, full, true},
		{"dynsym only", []string{otherDebug, stripped}, id, stripped, stripped, true},
		{"symtab only", []string{"/nonexistent", debug}, id, debug, debug, true},
		{"no build id to check", []string{otherDebug, stripped}, nil, stripped, otherDebug, true},
		{"none", []string{junk, otherDebug, filepath.Join(dir, "missing")}, id, "", "", false},
	} {
		runtime, syms, ok := SymbolSources(tc.cands, tc.id)
		if runtime != tc.runtime || syms != tc.syms || ok != tc.ok {
			t.Errorf("%s: SymbolSources = %q, %q, %v; want %q, %q, %v", tc.name, runtime, syms, ok, tc.runtime, tc.syms, tc.ok)
		}
	}
}

func writeELF(t *testing.T, path string, f elfwrite.File) {
	t.Helper()
	if err := f.WriteFile(path); err != nil {
		t.Fatal(err)
	}
}

package symbols

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kmapindex/kmapindex/internal/testbuild"
)

// sameSymbols fails t unless elfSymbols gives f's symbols of section type
// typ as debug/elf does, in order, with the same error.
func sameSymbols(t *testing.T, name string, f *elf.File, typ elf.SectionType) {
	t.Helper()
	var want []elf.Symbol
	var wantErr error
	if typ == elf.SHT_DYNSYM {
		want, wantErr = f.DynamicSymbols()
	} else {
		want, wantErr = f.Symbols()
	}
	n, all, _, err := elfSymbols(f, typ)
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("%s %v: error %v, debug/elf's %v", name, typ, err, wantErr)
	}
	if err != nil {
		return
	}
	var got []elf.Symbol
	for s := range all {
		got = append(got, s)
	}
	if n != len(got) || len(got) != len(want) {
		t.Fatalf("%s %v: %d symbols (said %d), debug/elf's %d", name, typ, len(got), n, len(want))
	}
	for i := range want {
		w := want[i]
		w.HasVersion, w.VersionIndex, w.Version, w.Library = false, 0, "", "" // not read
		if got[i] != w {
			t.Fatalf("%s %v symbol %d: %+v, debug/elf's %+v", name, typ, i, got[i], w)
		}
	}
}

// TestELFSymbolsMatchDebugELF: the in-place symbol reader gives debug/elf's
// symbols on this machine's binaries and libraries, both tables each.
func TestELFSymbolsMatchDebugELF(t *testing.T) {
	paths := []string{"/proc/self/exe"}
	for _, glob := range []string{"/usr/lib/x86_64-linux-gnu/lib*.so*", "/usr/bin/*", "/usr/lib/debug/.build-id/*/*.debug"} {
		m, _ := filepath.Glob(glob)
		if len(m) > 40 {
			m = m[:40]
		}
		paths = append(paths, m...)
	}
	read := 0
	for _, p := range paths {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		sameSymbols(t, p, f, elf.SHT_SYMTAB)
		sameSymbols(t, p, f, elf.SHT_DYNSYM)
		f.Close()
		read++
	}
	if read == 0 {
		t.Skip("no ELF files found")
	}
}

// TestELFSymbolsDamaged: symbol tables whose names run off their string
// table, whose string-table link is wrong, or whose size is not a whole
// number of entries give debug/elf's answers and errors.
func TestELFSymbolsDamaged(t *testing.T) {
	dir := t.TempDir()
	src := testbuild.Source(t, dir, "s.c", "int v;\nint f(void) { return v; }\nint main(void) { return f(); }\n")
	bin := filepath.Join(dir, "s")
	if err := testbuild.Compile(t, "gcc", "-O1", "-o", bin, src); err != nil {
		t.Fatal(err)
	}
	img, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		t.Fatal(err)
	}
	tab := f.SectionByType(elf.SHT_SYMTAB)
	if tab == nil || f.Class != elf.ELFCLASS64 || f.ByteOrder != binary.LittleEndian {
		t.Skip("no little-endian 64-bit symbol table")
	}
	shdr := func(i int) int { return int(f.ByteOrder.Uint64(img[0x28:])) + i*64 }
	idx := slices.Index(f.Sections, tab)
	rng := rand.New(rand.NewPCG(7, 9))
	cases := []struct {
		name string
		edit func(b []byte)
	}{
		{"name offsets past the string table", func(b []byte) {
			for range 50 {
				off := int(tab.Offset) + elf.Sym64Size*(1+rng.IntN(int(tab.Size)/elf.Sym64Size-1))
				binary.LittleEndian.PutUint32(b[off:], 0xfffffff0-uint32(rng.IntN(64)))
			}
		}},
		{"string table without a last NUL", func(b []byte) {
			str := f.Sections[tab.Link]
			b[str.Offset+str.Size-1] = 'x'
		}},
		{"link to no section", func(b []byte) {
			binary.LittleEndian.PutUint32(b[shdr(idx)+0x28:], uint32(len(f.Sections)))
		}},
		{"link zero", func(b []byte) { binary.LittleEndian.PutUint32(b[shdr(idx)+0x28:], 0) }},
		{"size not whole entries", func(b []byte) {
			binary.LittleEndian.PutUint64(b[shdr(idx)+0x20:], tab.Size-5)
		}},
		{"size zero", func(b []byte) { binary.LittleEndian.PutUint64(b[shdr(idx)+0x20:], 0) }},
		{"past the file's end", func(b []byte) {
			binary.LittleEndian.PutUint64(b[shdr(idx)+0x18:], uint64(len(b))-8)
		}},
	}
	for _, c := range cases {
		b := slices.Clone(img)
		c.edit(b)
		df, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		sameSymbols(t, c.name, df, elf.SHT_SYMTAB)
	}
}

// FuzzELFSymbols: on any file debug/elf opens, the in-place symbol reader
// agrees with it, and never panics.
func FuzzELFSymbols(f *testing.F) {
	addELFSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		ef, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			return
		}
		sameSymbols(t, "fuzz", ef, elf.SHT_SYMTAB)
		sameSymbols(t, "fuzz", ef, elf.SHT_DYNSYM)
	})
}

package symbols

import (
	"debug/elf"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNamesKeptInPlace: a table that keeps its names in the ELF file's
// string table (releasing the .dynsym's) and searches the tree only among
// overlapping symbols (clusterBounds) answers as one that copies every
// name and searches the tree at every point (bounds), symbol for symbol
// and lookup for lookup, on the ELF files found here; and on the larger
// ones it does keep the names in place.
func TestNamesKeptInPlace(t *testing.T) {
	paths := []string{"/proc/self/exe"}
	if out, err := exec.Command("go", "env", "GOTOOLDIR").Output(); err == nil {
		paths = append(paths, filepath.Join(strings.TrimSpace(string(out)), "compile"))
	}
	for _, glob := range []string{"/usr/bin/node", "/usr/lib/x86_64-linux-gnu/lib*.so*", "/usr/bin/*"} {
		m, _ := filepath.Glob(glob)
		if len(m) > 30 {
			m = m[:30]
		}
		paths = append(paths, m...)
	}
	load := func(path string, inPlace bool) *Table {
		f, err := elf.Open(path)
		if err != nil {
			return nil
		}
		defer f.Close()
		var b builder
		nr, complete, err := loadSym(&b, f, f, path)
		if err != nil {
			return nil
		}
		if complete && nr > 0 {
			if err := synthesizePLT(&b, f); err != nil {
				return nil
			}
		}
		if inPlace {
			b.releaseNameTables()
			return b.table(nil)
		}
		b.nameTables = nil
		return b.table(func(*entry) bool { return true }) // bounds' way
	}
	read, inPlace := 0, 0
	for _, p := range paths {
		copied, kept := load(p, false), load(p, true)
		if copied == nil || kept == nil {
			continue
		}
		read++
		if kept.names != "" && len(kept.names) != len(copied.names) {
			inPlace++
		}
		want, got := copied.Symbols(), kept.Symbols()
		if !slices.Equal(want, got) {
			t.Errorf("%s: %d symbols in place, %d copied; first difference at %d", p, len(got), len(want), firstDiff(got, want))
			continue
		}
		for _, s := range want {
			for _, a := range []uint64{s.Start - 1, s.Start, s.End - 1, s.End} {
				w, wok := copied.Find(a)
				g, gok := kept.Find(a)
				if w != g || wok != gok {
					t.Fatalf("%s: Find(%#x) = %v %v in place, %v %v copied", p, a, g, gok, w, wok)
				}
			}
		}
	}
	if read == 0 {
		t.Skip("no ELF files found")
	}
	if inPlace == 0 {
		t.Errorf("none of %d tables kept its names in place", read)
	}
	t.Logf("%d tables, %d with names in place", read, inPlace)
}

func firstDiff(a, b []Symbol) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

package symbols

import (
	"debug/elf"
	"fmt"
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
		return tableWay(f, path, inPlace)
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
		if err := sameTables(kept, copied); err != nil {
			t.Errorf("%s: %v", p, err)
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

// tableWay is elfTable's table of f (its own symbol file), with the
// names kept in place and the tree searched by cluster (inPlace), or the
// names copied and the tree searched at every point; nil where the file
// cannot be read (or the loading panics: elfTable's recover).
func tableWay(f *elf.File, path string, inPlace bool) (t *Table) {
	defer func() {
		if recover() != nil {
			t = nil
		}
	}()
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

// sameTables says where two tables differ: their symbols, in order, and
// the lookups at each symbol's edges.
func sameTables(got, want *Table) error {
	gs, ws := got.Symbols(), want.Symbols()
	if !slices.Equal(gs, ws) {
		return fmt.Errorf("%d symbols against %d; first difference at %d", len(gs), len(ws), firstDiff(gs, ws))
	}
	for _, s := range ws {
		for _, a := range []uint64{s.Start - 1, s.Start, s.Start + 1, s.End - 1, s.End, s.End + 1} {
			g, gok := got.Find(a)
			w, wok := want.Find(a)
			if g != w || gok != wok {
				return fmt.Errorf("Find(%#x) = %v %v, want %v %v", a, g, gok, w, wok)
			}
		}
	}
	return nil
}

func firstDiff(a, b []Symbol) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

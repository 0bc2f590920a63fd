package dwarf_test

import (
	stddwarf "debug/dwarf"
	"debug/elf"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kmapindex/kmapindex/internal/dwarf"
	"github.com/kmapindex/kmapindex/internal/testbuild"
)

// TestLikeDebugDWARF reads units of real files, in a random order, with
// this package and with debug/dwarf: every entry, its ranges and its
// unit's line table are the same, also after ForgetAbbrevs halfway (the
// units read before are read again). Reading units out of order is what the
// lazy abbreviation tables must get right: each unit reads its table as
// far as its own entries need.
func TestLikeDebugDWARF(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	goSrc := testbuild.Source(t, dir, "main.go", "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hi\") }\n")
	if err := testbuild.Compile(t, "go", "build", "-o", filepath.Join(dir, "goprog"), goSrc); err != nil {
		t.Fatal(err)
	}
	files["Go program (DWARF 4, references across units)"] = filepath.Join(dir, "goprog")
	src := testbuild.Source(t, dir, "inl.c", `
static inline int sq(int x) { return x * x; }
struct pt { int x, y; };
__attribute__((noinline)) int dist(struct pt *p) { return sq(p->x) + sq(p->y); }
int main(int argc, char **argv) { struct pt p = {argc, argc + 1}; (void)argv; return dist(&p); }
`)
	if err := testbuild.Compile(t, "gcc", "-O2", "-g", "-o", filepath.Join(dir, "inl"), src); err != nil {
		t.Fatal(err)
	}
	files["gcc -O2 -g (DWARF 5)"] = filepath.Join(dir, "inl")
	if libc := testbuild.LibcDebugFile(); libc != "" && !testing.Short() {
		files["libc's debug file"] = libc
	}
	for name, path := range files {
		t.Run(name, func(t *testing.T) { compareFile(t, path) })
	}
}

// compareFile compares up to 300 of path's units, in a random order.
func compareFile(t *testing.T, path string) {
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want, err := f.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	got := lazyData(t, f)
	var units []stddwarf.Offset
	r := want.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			break
		}
		units = append(units, e.Offset)
		r.SkipChildren()
	}
	if len(units) == 0 {
		t.Fatal("no units")
	}
	rng := rand.New(rand.NewPCG(uint64(len(units)), 1))
	rng.Shuffle(len(units), func(i, j int) { units[i], units[j] = units[j], units[i] })
	entries := 0
	picked := units[:min(len(units), 300)]
	for i, u := range picked {
		if i > 0 && i == len(picked)/2 {
			// The tables read so far let go of (ForgetAbbrevs): the
			// units read before read theirs anew, as do the others.
			got.ForgetAbbrevs()
			for _, u := range picked[:i] {
				entries += compareUnit(t, want, got, u)
			}
		}
		entries += compareUnit(t, want, got, u)
	}
	t.Logf("%d of %d units, %d entries", min(len(units), 300), len(units), entries)
}

// compareUnit compares the entries of the unit at off, and the unit's
// line table; it returns the entries compared.
func compareUnit(t *testing.T, want *stddwarf.Data, got *dwarf.Data, off stddwarf.Offset) int {
	t.Helper()
	wr, gr := want.Reader(), got.Reader()
	wr.Seek(off)
	gr.Seek(dwarf.Offset(off))
	n := 0
	for depth := 0; ; n++ {
		we, werr := wr.Next()
		ge, gerr := gr.Next()
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("unit %#x entry %d: error %v, debug/dwarf's %v", off, n, gerr, werr)
		}
		if werr != nil || we == nil || ge == nil {
			if (we == nil) != (ge == nil) {
				t.Fatalf("unit %#x entry %d: %v, debug/dwarf's %v", off, n, ge, we)
			}
			break
		}
		if w, g := fmt.Sprint(entryOf(we)), fmt.Sprint(ge); w != g {
			t.Fatalf("unit %#x entry %d:\n got %s\nwant %s", off, n, g, w)
		}
		wrs, werr := want.Ranges(we)
		grs, gerr := got.Ranges(ge)
		if !reflect.DeepEqual(wrs, grs) || (werr == nil) != (gerr == nil) {
			t.Fatalf("unit %#x entry %#x: ranges %v (%v), debug/dwarf's %v (%v)", off, we.Offset, grs, gerr, wrs, werr)
		}
		if n == 0 {
			compareLines(t, want, got, we, ge)
		}
		switch {
		case we.Tag == 0:
			depth--
		case we.Children:
			depth++
		}
		if depth <= 0 {
			break
		}
	}
	return n
}

// compareLines compares the first rows of a unit's line tables.
func compareLines(t *testing.T, want *stddwarf.Data, got *dwarf.Data, we *stddwarf.Entry, ge *dwarf.Entry) {
	t.Helper()
	wl, werr := want.LineReader(we)
	gl, gerr := got.LineReader(ge)
	if (wl == nil) != (gl == nil) || (werr == nil) != (gerr == nil) {
		t.Fatalf("unit %#x: line reader %v, debug/dwarf's %v", we.Offset, gerr, werr)
	}
	if wl == nil {
		return
	}
	var wle stddwarf.LineEntry
	var gle dwarf.LineEntry
	for range 2000 {
		werr, gerr := wl.Next(&wle), gl.Next(&gle)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("unit %#x: line error %v, debug/dwarf's %v", we.Offset, gerr, werr)
		}
		if werr != nil {
			return
		}
		if wle.Address != gle.Address || wle.Line != gle.Line || wle.EndSequence != gle.EndSequence || wle.File.Name != gle.File.Name {
			t.Fatalf("unit %#x: line %+v, debug/dwarf's %+v", we.Offset, gle, wle)
		}
	}
}

// entryOf converts an entry of debug/dwarf's to this package's types, for
// printing both alike.
func entryOf(e *stddwarf.Entry) *dwarf.Entry {
	c := &dwarf.Entry{Offset: dwarf.Offset(e.Offset), Tag: dwarf.Tag(e.Tag), Children: e.Children}
	for _, f := range e.Field {
		v := f.Val
		if o, ok := v.(stddwarf.Offset); ok {
			v = dwarf.Offset(o)
		}
		c.Field = append(c.Field, dwarf.Field{Attr: dwarf.Attr(f.Attr), Val: v, Class: dwarf.Class(f.Class)})
	}
	return c
}

// lazyData reads f's DWARF sections into this package's Data, as
// elf.File.DWARF does for debug/dwarf (sections decompressed by Data).
func lazyData(t *testing.T, f *elf.File) *dwarf.Data {
	t.Helper()
	sec := func(name string) []byte {
		s := f.Section(".debug_" + name)
		if s == nil {
			return nil
		}
		b, err := s.Data()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	d, err := dwarf.New(sec("abbrev"), nil, nil, sec("info"), sec("line"), nil, sec("ranges"), sec("str"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"addr", "line_str", "str_offsets", "rnglists"} {
		if b := sec(name); b != nil {
			if err := d.AddSection(".debug_"+name, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	return d
}

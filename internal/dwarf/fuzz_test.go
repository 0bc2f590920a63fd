package dwarf_test

import (
	stddwarf "debug/dwarf"
	"debug/elf"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kmapindex/kmapindex/internal/dwarf"
	"github.com/kmapindex/kmapindex/internal/testbuild"
)

// FuzzLikeDebugDWARF mutates the .debug_info and .debug_abbrev of a
// small gcc -O2 -g program (the other sections kept) and reads every
// entry with this package and with debug/dwarf: this package never
// panics, and as far as debug/dwarf reads entries without an error, it
// reads the same entries and ranges, before and after ForgetAbbrevs.
// (Where debug/dwarf fails, this package may fail later or not at all:
// it reads a unit's abbreviations as the unit's entries need them,
// debug/dwarf all of them when it opens.)
func FuzzLikeDebugDWARF(f *testing.F) {
	dir := f.TempDir()
	src := testbuild.Source(f, dir, "inl.c", `
static inline int sq(int x) { return x * x; }
struct pt { int x, y; };
__attribute__((noinline)) int dist(struct pt *p) { return sq(p->x) + sq(p->y); }
int main(int argc, char **argv) { struct pt p = {argc, argc + 1}; (void)argv; return dist(&p); }
`)
	prog := filepath.Join(dir, "inl")
	if err := testbuild.Compile(f, "gcc", "-O2", "-g", "-o", prog, src); err != nil {
		f.Skip(err)
	}
	ef, err := elf.Open(prog)
	if err != nil {
		f.Fatal(err)
	}
	sections := map[string][]byte{}
	for _, s := range ef.Sections {
		if len(s.Name) > 7 && s.Name[:7] == ".debug_" {
			if b, err := s.Data(); err == nil {
				sections[s.Name[7:]] = b
			}
		}
	}
	ef.Close()
	f.Add(sections["abbrev"], sections["info"])
	f.Add(sections["abbrev"][:len(sections["abbrev"])/2], sections["info"])
	f.Add(sections["abbrev"], sections["info"][:len(sections["info"])/3])
	others := []string{"addr", "line_str", "str_offsets", "rnglists"}
	f.Fuzz(func(t *testing.T, abbrev, info []byte) {
		got, err := dwarf.New(abbrev, nil, nil, info, sections["line"], nil, sections["ranges"], sections["str"])
		if err != nil {
			return
		}
		want, wantErr := stddwarf.New(abbrev, nil, nil, info, sections["line"], nil, sections["ranges"], sections["str"])
		for _, name := range others {
			if b := sections[name]; b != nil {
				if err := got.AddSection(".debug_"+name, b); err != nil {
					return
				}
				if wantErr == nil {
					wantErr = want.AddSection(".debug_"+name, b)
				}
			}
		}
		if wantErr != nil {
			want = nil // this package alone: it must not panic
		}
		n := fuzzCompare(t, want, got)
		got.ForgetAbbrevs()
		if m := fuzzCompare(t, want, got); m != n {
			t.Fatalf("after ForgetAbbrevs: %d entries, %d before", m, n)
		}
	})
}

// fuzzCompare reads at most 5000 entries with got and, unless want is
// nil, want, in step, and returns how many got read before its end or an
// error.
func fuzzCompare(t *testing.T, want *stddwarf.Data, got *dwarf.Data) int {
	gr := got.Reader()
	var wr *stddwarf.Reader
	if want != nil {
		wr = want.Reader()
	}
	n := 0
	for ; n < 5000; n++ {
		ge, gerr := gr.Next()
		if gerr == nil && ge != nil {
			got.Ranges(ge)
			if n < 50 && ge.Tag == dwarf.TagCompileUnit {
				if lr, err := got.LineReader(ge); err == nil && lr != nil {
					var le dwarf.LineEntry
					for range 1000 {
						if lr.Next(&le) != nil {
							break
						}
					}
				}
			}
		}
		if wr != nil {
			we, werr := wr.Next()
			if werr != nil {
				wr = nil // debug/dwarf stops here; this package may go on
			} else {
				if gerr != nil {
					t.Fatalf("entry %d: error %v where debug/dwarf reads %v", n, gerr, we)
				}
				if (we == nil) != (ge == nil) {
					t.Fatalf("entry %d: %v, debug/dwarf's %v", n, ge, we)
				}
				if we != nil {
					if w, g := fmt.Sprint(entryOf(we)), fmt.Sprint(ge); w != g {
						t.Fatalf("entry %d:\n got %s\nwant %s", n, g, w)
					}
					wrs, werr := want.Ranges(we)
					grs, gerr := got.Ranges(ge)
					if werr == nil && (gerr != nil || !reflect.DeepEqual(wrs, grs)) {
						t.Fatalf("entry %#x: ranges %v (%v), debug/dwarf's %v", we.Offset, grs, gerr, wrs)
					}
				}
			}
		}
		if gerr != nil || ge == nil {
			break
		}
	}
	return n
}

package dwarf_test

import (
	stddwarf "debug/dwarf"
	"debug/elf"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/internal/dwarf"
	"github.com/kmapindex/kmapindex/internal/testbuild"
)

// FuzzLikeDebugDWARF mutates the .debug_info, .debug_abbrev and
// .debug_line of a small gcc -O2 -g program (the other sections kept)
// and reads every entry, and the units' line tables, with this package
// and with debug/dwarf: this package never panics, and as far as
// debug/dwarf reads without an error, it reads the same entries, ranges
// and line rows, before and after ForgetAbbrevs.
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
	line := sections["line"]
	f.Add(sections["abbrev"], sections["info"], line)
	f.Add(sections["abbrev"][:len(sections["abbrev"])/2], sections["info"], line)
	f.Add(sections["abbrev"], sections["info"][:len(sections["info"])/3], line)
	f.Add(sections["abbrev"], sections["info"], line[:len(line)/2])
	others := []string{"addr", "line_str", "str_offsets", "rnglists"}
	f.Fuzz(func(t *testing.T, abbrev, info, line []byte) {
		got, err := dwarf.New(abbrev, nil, nil, info, line, nil, sections["ranges"], sections["str"])
		if err != nil {
			return
		}
		want, wantErr := stddwarf.New(abbrev, nil, nil, info, line, nil, sections["ranges"], sections["str"])
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
		var grs [][2]uint64
		var grerr error
		if gerr == nil && ge != nil {
			grs, grerr = got.Ranges(ge)
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
					if wrs, werr := want.Ranges(we); werr == nil && (grerr != nil || !reflect.DeepEqual(wrs, grs)) {
						t.Fatalf("entry %#x: ranges %v (%v), debug/dwarf's %v", we.Offset, grs, grerr, wrs)
					}
					if n < 50 && we.Tag == stddwarf.TagCompileUnit {
						fuzzLines(t, want, got, we, ge)
					}
				}
			}
		}
		if wr == nil && gerr == nil && ge != nil && n < 50 && ge.Tag == dwarf.TagCompileUnit {
			fuzzLines(t, nil, got, nil, ge) // this package alone
		}
		if gerr != nil || ge == nil {
			break
		}
	}
	return n
}

// fuzzLines reads up to 1000 rows of the line table of unit ge with got
// and, unless want is nil, of we with want, in step: the same rows as far
// as debug/dwarf reads them without an error.
func fuzzLines(t *testing.T, want *stddwarf.Data, got *dwarf.Data, we *stddwarf.Entry, ge *dwarf.Entry) {
	gl, gerr := got.LineReader(ge)
	if gerr != nil && strings.Contains(gerr.Error(), " entries ") {
		return // refused as addr2line refuses it (entryCount), where debug/dwarf goes on
	}
	var wl *stddwarf.LineReader
	if want != nil {
		var werr error
		if wl, werr = want.LineReader(we); werr != nil {
			wl = nil
		} else if gerr != nil || (wl == nil) != (gl == nil) {
			t.Fatalf("unit %#x: line reader %v (%v), debug/dwarf's %v", ge.Offset, gl, gerr, wl)
		}
	}
	if gl == nil {
		return
	}
	var wle stddwarf.LineEntry
	var gle dwarf.LineEntry
	for range 1000 {
		gerr := gl.Next(&gle)
		if wl != nil {
			if werr := wl.Next(&wle); werr != nil {
				wl = nil
			} else if gerr != nil || wle.Address != gle.Address || wle.Line != gle.Line || wle.EndSequence != gle.EndSequence || !sameFile(wle.File, gle.File) {
				wn, gn := fileNames(wle.File, gle.File)
				t.Fatalf("unit %#x: line %+v %q (%v), debug/dwarf's %+v %q", ge.Offset, gle, gn, gerr, wle, wn)
			}
		}
		if gerr != nil {
			return
		}
	}
}

// sameFile reports whether two line rows' files have one name (or none).
func sameFile(w *stddwarf.LineFile, g *dwarf.LineFile) bool {
	wn, gn := fileNames(w, g)
	return wn == gn
}

// fileNames are the names of two line rows' files, "" for none.
func fileNames(w *stddwarf.LineFile, g *dwarf.LineFile) (string, string) {
	var wn, gn string
	if w != nil {
		wn = w.Name
	}
	if g != nil {
		gn = g.Name
	}
	return wn, gn
}

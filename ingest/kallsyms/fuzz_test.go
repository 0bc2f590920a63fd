package kallsyms

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	f.Add([]byte("ffffffff81000000 T _text\nffffffffc0a00000 t f\t[nf_tables]\n"))
	f.Add([]byte("0 T _text\n"))
	f.Add([]byte("10 T " + strings.Repeat("n", 600) + "\n"))
	f.Add([]byte(strings.Repeat("f", 5000) + " T x\n1 A _text"))
	if data, err := os.ReadFile("testdata/kallsyms.excerpt"); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		syms, err := ReadAll(bytes.NewReader(data))
		// ReadAll (whole input, names sliced from one string) and Parse
		// (streaming) are one parser: same symbols, same errors.
		var streamed []Symbol
		serr := Parse(bytes.NewReader(data), func(s Symbol) error { streamed = append(streamed, s); return nil })
		if (err == nil) != (serr == nil) || (err != nil && err.Error() != serr.Error()) {
			t.Fatalf("ReadAll error %v, Parse error %v", err, serr)
		}
		// Lines across the chunks ReadAll reads ahead parse the same.
		for _, chunk := range []int{1, 7, 100} {
			chunked, cerr := readList(bytes.NewReader(data), chunk)
			got := chunked.Symbols()
			if fmt.Sprint(cerr) != fmt.Sprint(err) || !slices.Equal(got, syms) {
				t.Fatalf("in chunks of %d: %d symbols, error %v; whole: %d symbols, error %v", chunk, len(got), cerr, len(syms), err)
			}
		}
		if err != nil {
			return
		}
		if len(syms) != len(streamed) {
			t.Fatalf("ReadAll %d symbols, Parse %d", len(syms), len(streamed))
		}
		for i := range syms {
			if syms[i] != streamed[i] {
				t.Fatalf("symbol %d: ReadAll %+v, Parse %+v", i, syms[i], streamed[i])
			}
		}

		// A List made from the symbols holds the same symbols, names them
		// as perf keeps them, and answers as the slice does.
		l := NewList(syms)
		if got := l.Symbols(); !slices.Equal(got, syms) {
			t.Fatalf("NewList: %d symbols %v, want %v", len(got), got, syms)
		}
		for i, s := range syms {
			want := s.Name
			if s.Module != "" {
				want += "\t[" + s.Module + "]"
			}
			if got := l.TaggedName(i); got != want {
				t.Fatalf("TaggedName(%d) = %q, want %q", i, got, want)
			}
		}
		if l.Landmarks() != Landmarks(syms) || l.Restricted() != Restricted(syms) {
			t.Fatalf("List landmarks %+v restricted %v; slice %+v %v", l.Landmarks(), l.Restricted(), Landmarks(syms), Restricted(syms))
		}
		for _, s := range syms {
			a, ok := l.FunctionStart(s.Name)
			if b, okb := FunctionStart(syms, s.Name); a != b || ok != okb {
				t.Fatalf("FunctionStart(%q): List %#x %v, slice %#x %v", s.Name, a, ok, b, okb)
			}
		}
		// Every accepted symbol formats back to a line that parses to itself,
		// unless its name holds a tab or newline (which the format cannot carry).
		for _, s := range syms {
			if strings.ContainsAny(s.Name, "\t\n") || strings.ContainsAny(s.Module, "\n") ||
				s.Type == '\n' || (s.Module != "" && strings.HasPrefix(s.Module, "[") && strings.HasSuffix(s.Module, "]")) ||
				len(s.Name)+len(s.Module)+3 >= KsymNameLen { // the brackets String adds may pass the limit

				continue
			}
			again, err := ReadAll(strings.NewReader(s.String()))
			if err != nil {
				t.Fatalf("%q: reparse: %v", s.String(), err)
			}
			if len(again) != 1 || again[0] != s {
				t.Fatalf("%q: reparsed as %+v, want %+v", s.String(), again, s)
			}
		}
	})
}

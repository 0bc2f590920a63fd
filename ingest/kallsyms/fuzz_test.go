package kallsyms

import (
	"bytes"
	"os"
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
		if err != nil {
			return
		}
		_ = Landmarks(syms)
		_ = Restricted(syms)
		// Every accepted symbol formats back to a line that parses to itself,
		// unless its name holds a tab or newline (which the format cannot carry).
		for _, s := range syms {
			if strings.ContainsAny(s.Name, "\t\n") || strings.ContainsAny(s.Module, "\n") ||
				s.Type == '\n' || (s.Module != "" && strings.HasPrefix(s.Module, "[") && strings.HasSuffix(s.Module, "]")) {
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

package corpus

import (
	"os"
	"testing"
	"testing/fstest"
)

// FuzzLoadFS feeds arbitrary file contents to the loader: it must return
// a corpus or an error, never panic, and what it returns must be sane.
func FuzzLoadFS(f *testing.F) {
	read := func(name string) []byte {
		b, err := os.ReadFile("default/" + name)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	f.Add(read("kallsyms"), read("modules"), read("kcore"), []byte(readelfK1), read("corpus.json"))
	f.Add([]byte("0 T _text\n"), []byte("m 1 0 - Live 0x0\n"), []byte("\x7fELF"), []byte(""), []byte("{}"))
	f.Fuzz(func(t *testing.T, ksyms, mods, kc, readelf, meta []byte) {
		fsys := fstest.MapFS{
			"c/kallsyms":      {Data: ksyms},
			"c/modules":       {Data: mods},
			"c/kcore":         {Data: kc},
			"c/kcore.readelf": {Data: readelf},
			"c/corpus.json":   {Data: meta},
		}
		c, err := LoadFS(fsys, "c")
		if err != nil {
			return
		}
		for _, m := range c.BPF {
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range c.Segments {
			if s.Size == 0 || s.Vaddr+s.Size < s.Vaddr {
				t.Fatalf("bad segment %v", s)
			}
		}
	})
}

package symbols

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkELFTable loads the symbol tables of large binaries as a report
// does at a DSO's first sample: the Go compiler (29 k symbols, many Go
// names with parentheses), libstdc++ (mangled C++ names) and libc with
// its debug file when installed. Missing files are skipped.
func BenchmarkELFTable(b *testing.B) {
	var compile string
	if out, err := exec.Command("go", "env", "GOTOOLDIR").Output(); err == nil {
		compile = filepath.Join(strings.TrimSpace(string(out)), "compile")
	}
	first := func(glob string) string {
		m, _ := filepath.Glob(glob)
		if len(m) == 0 {
			return ""
		}
		return m[0]
	}
	for _, c := range []struct{ name, path string }{
		{"go-compile", compile},
		{"libstdc++", first("/usr/lib/x86_64-linux-gnu/libstdc++.so.6.*")},
		{"libc", first("/usr/lib/x86_64-linux-gnu/libc.so.6")},
		// A large C++ program whose .dynsym repeats its .symtab: 182 k
		// symbols, both loaded as perf 6.1 loads them.
		{"node", first("/usr/bin/node")},
	} {
		b.Run(c.name, func(b *testing.B) {
			if c.path == "" {
				b.Skip("not installed")
			}
			debug := FindDebug(c.path)
			t, err := ELFWithDebug(c.path, debug)
			if err != nil {
				b.Skip(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ELFWithDebug(c.path, debug); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*t.Len()), "ns/symbol")
		})
	}
}

package attrib_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/internal/linediff"
)

// copyCorpus copies the kernel files and perf.data of dir into a new
// directory, the kallsyms file under the name ksName.
func copyCorpus(t *testing.T, dir, ksName string, files ...string) string {
	out := t.TempDir()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		name := f
		if f == "kallsyms" {
			name = ksName
		}
		if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// editFile replaces the first match of re in dir/name by repl.
func editFile(t *testing.T, dir, name, re, repl string) {
	p := filepath.Join(dir, name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	rx := regexp.MustCompile(re)
	loc := rx.FindIndex(b)
	if loc == nil {
		t.Fatalf("%s: no match for %s", p, re)
	}
	b = append(b[:loc[0]:loc[0]], append([]byte(rx.ReplaceAllString(string(b[loc[0]:loc[1]]), repl)), b[loc[1]:]...)...)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestKcoreRefused checks the inputs on which perf 6.1 does not use the
// kcore beside kallsyms, each on an x86_64 and an arm64 corpus: kbench
// must not use it either, must say why, and must print what perf script
// prints (line for line when perf is installed; else what it prints for
// the same files with no kcore at all, which is what perf falls back to).
func TestKcoreRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("generates corpora")
	}
	all := []string{"kallsyms", "kcore", "modules", "perf.data"}
	for _, arch := range []string{"x86_64", "aarch64"} {
		src := kcoreCase{arch: arch, seed: 7, callchains: true}.generate(t)
		for _, tc := range []struct {
			name   string
			ksName string
			files  []string
			edit   func(t *testing.T, dir string)
			why    string
		}{
			// The kernel MMAP's pgoff is _text's address at record time.
			{name: "reference symbol moved", ksName: "kallsyms", files: all, why: "reference symbol _text at",
				edit: func(t *testing.T, dir string) {
					editFile(t, dir, "kallsyms", `(?m)^([0-9a-f]{12})([0-9a-f]{4}) T _text$`, "${1}dead T _text")
				}},
			{name: "module moved", ksName: "kallsyms", files: all, why: "not in",
				edit: func(t *testing.T, dir string) {
					editFile(t, dir, "modules", `(?m) 0x([0-9a-f]+)000$`, " 0x${1}800")
				}},
			{name: "modules missing", ksName: "kallsyms", files: []string{"kallsyms", "kcore", "perf.data"}, why: "modules"},
			{name: "not named kallsyms", ksName: "kallsyms.txt", files: all},
			{name: "kcore not ELF", ksName: "kallsyms", files: all, why: "kcore",
				edit: func(t *testing.T, dir string) {
					if err := os.WriteFile(filepath.Join(dir, "kcore"), []byte("not an ELF file\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}},
		} {
			t.Run(arch+"/"+tc.name, func(t *testing.T) {
				dir := copyCorpus(t, src, tc.ksName, tc.files...)
				if tc.edit != nil {
					tc.edit(t, dir)
				}
				ks := filepath.Join(dir, tc.ksName)
				want, havePerf := perfScriptKallsyms(t, dir, ks)
				if !havePerf {
					// perf falls back to kallsyms alone: the same files
					// without kcore.
					bare := copyCorpus(t, dir, tc.ksName, tc.ksName, "perf.data")
					want, _ = kbenchScriptKallsyms(t, bare, filepath.Join(bare, tc.ksName), arch, mapset.BTree)
				}
				for _, impl := range mapset.All {
					got, res := kbenchScriptKallsyms(t, dir, ks, arch, impl)
					if strings.HasPrefix(res.KernelSymbols, "kcore") || !strings.Contains(res.KernelSymbols, tc.why) {
						t.Errorf("%s: kernel symbols from %q; want kallsyms, kcore refused (%q)", impl.Name, res.KernelSymbols, tc.why)
					}
					if got != want {
						t.Errorf("%s: differs from perf script: %s", impl.Name, linediff.First(got, want))
					}
				}
			})
		}
	}
}

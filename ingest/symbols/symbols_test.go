package symbols

import (
	"bytes"
	"debug/elf"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/internal/testbuild"
)

func mustKallsyms(t *testing.T, text string) []kallsyms.Symbol {
	t.Helper()
	syms, err := kallsyms.ReadAll(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return syms
}

type lookup struct {
	addr uint64
	want string // "name+0xoff" or Unknown
}

func (l lookup) check(t *testing.T, tb *Table) {
	t.Helper()
	s, ok := tb.Find(l.addr)
	if got := format(s, ok, l.addr); got != l.want {
		t.Errorf("Find(%#x) = %q, want %q", l.addr, got, l.want)
	}
}

func TestKernel(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		modules []index.Map
		kernel  []lookup
		mods    map[string][]lookup
	}{
		{
			// The real head of this VM's kallsyms: four names at _text.
			// symbols__fixup_end runs first and leaves all but the last of
			// them zero-size, so choose_best_symbol's first rule (non-zero
			// size) keeps the last one in file order.
			name: "duplicates at _text",
			in: "ffffffff81000000 T srso_alias_untrain_ret\nffffffff81000000 T _stext\n" +
				"ffffffff81000000 T _text\nffffffff81000000 T __pi__text\nffffffff81000010 T __entry_text_start\n",
			kernel: []lookup{{0xffffffff81000000, "__pi__text+0x0"}, {0xffffffff8100000f, "__pi__text+0xf"},
				{0xffffffff81000010, "__entry_text_start+0x0"}},
		},
		{
			// Every duplicate but the last in file order is zero-size after
			// symbols__fixup_end, so for kallsyms the size rule decides.
			name: "duplicates: the last in file order wins, whatever the type",
			in: "1000 t local_one\n1000 T __glob\n1000 T glob\n2000 T x\n2000 T xy\n" +
				"3000 W weak\n3000 t loc\n4000 T end\n",
			kernel: []lookup{{0x1000, "glob+0x0"}, {0x1fff, "glob+0xfff"}, {0x2000, "xy+0x0"}, {0x3000, "loc+0x0"}},
		},
		{
			name:   "below the first symbol, data symbols kept, other types dropped",
			in:     "ffffffff81000000 T _text\nffffffff81000100 r rodata_sym\nffffffff81000200 D data_sym\nffffffff81000300 b bss_sym\nffffffff81000400 A abs_sym\n",
			kernel: []lookup{{0xffffffff80ffffff, Unknown}, {0xffffffff81000150, "_text+0x150"}, {0xffffffff81000250, "data_sym+0x50"}, {0xffffffff81000350, "bss_sym+0x50"}},
		},
		{
			name:   "last symbol ends at roundup(start, 4096) + 4096",
			in:     "ffffffff81000000 T _text\nffffffff81000010 T last\n",
			kernel: []lookup{{0xffffffff81001fff, "last+0x1fef"}, {0xffffffff81002000, Unknown}},
		},
		{
			name: "last kernel symbol before modules ends at roundup(start+4096, 4096); module symbols rebased",
			in: "ffffffff81000000 T _text\nffffffff81000800 T before_mod\n" +
				"ffffffffc0000000 t m_a\t[mymod]\nffffffffc0000100 t m_b\t[mymod]\n" +
				"ffffffffc0001000 t other\t[gone]\nffffffffc0002000 t bpf_prog_x\t[bpf]\n",
			modules: []index.Map{{Start: 0xffffffffc0000000, End: 0xffffffffc0001000, DSO: "[mymod]", Kind: index.KindModule}},
			kernel: []lookup{{0xffffffff81001fff, "before_mod+0x17ff"}, {0xffffffff81002000, Unknown},
				{0xffffffffc0000000, Unknown}},
			mods: map[string][]lookup{"mymod": {{0x0, "m_a+0x0"}, {0xff, "m_a+0xff"}, {0x100, "m_b+0x0"},
				{0xeff, "m_b+0xdff"}, {0xf00, "m_b+0xe00"}}},
		},
		{
			// Ends are fixed up before the split drops the trampoline, so
			// its range stays a hole; $x never enters the tree.
			name:   "x86_64 entry trampoline dropped, ARM $ symbols dropped",
			in:     "1000 T a\n2000 T __entry_SYSCALL_64_trampoline\n3000 t $x\n4000 T b\n",
			kernel: []lookup{{0x1fff, "a+0xfff"}, {0x2500, Unknown}, {0x3500, Unknown}, {0x4000, "b+0x0"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kt := Kernel(mustKallsyms(t, tt.in), tt.modules)
			for _, l := range tt.kernel {
				l.check(t, kt.Kernel)
			}
			for mod, ls := range tt.mods {
				tb := kt.Modules[mod]
				if tb == nil {
					t.Fatalf("no table for module %s; have %v", mod, kt.Modules)
				}
				for _, l := range ls {
					l.check(t, tb)
				}
			}
			if len(tt.mods) == 0 && len(kt.Modules) != 0 {
				t.Errorf("unexpected module tables %v", kt.Modules)
			}
		})
	}
}

func TestKernelRange(t *testing.T) {
	kt := Kernel(mustKallsyms(t, "ffffffff81000000 T _text\nffffffff81000010 T a\n"), nil)
	if kt.Start != 0xffffffff81000000 || kt.End != 0xffffffff81002000 {
		t.Errorf("range [%#x,%#x)", kt.Start, kt.End)
	}
}

func TestBuild(t *testing.T) {
	tb := Build([]Symbol{{Start: 0x100, End: 0x100, Name: "zero"}, {Start: 0x200, End: 0x210, Name: "sized"},
		{Start: 0x300, End: 0x400, Name: "outer"}, {Start: 0x320, End: 0x330, Name: "inner"}})
	for _, l := range []lookup{
		{0xff, Unknown}, {0x100, "zero+0x0"}, {0x1ff, "zero+0xff"}, {0x20f, "sized+0xf"}, {0x210, Unknown},
		{0x31f, "outer+0x1f"}, {0x3ff, "outer+0xff"}, {0x400, Unknown},
	} {
		l.check(t, tb)
	}
	// 0x320..0x32f lies in both outer and inner: the answer is whichever
	// the tree search meets first, as in perf.
	if s, ok := tb.Find(0x325); !ok || (s.Name != "outer" && s.Name != "inner") {
		t.Errorf("Find(0x325) = %v, %v", s, ok)
	}
	var nilTable *Table
	if _, ok := nilTable.Find(1); ok || nilTable.Len() != 0 || nilTable.Name(1) != Unknown {
		t.Error("nil table not empty")
	}
}

func TestBPF(t *testing.T) {
	m := index.Map{Start: 0xffff800082545aac, End: 0xffff800082545c94, DSO: "bpf_prog_6deef7357e7b4530_sd_fw_egress", Kind: index.KindBPFProg}
	tb := BPF(m)
	lookup{m.MapIP(0xffff800082545b00), "bpf_prog_6deef7357e7b4530_sd_fw_egress+0x54"}.check(t, tb)
	lookup{m.MapIP(m.End), Unknown}.check(t, tb)
}

func TestOCamlDemangle(t *testing.T) {
	for in, want := range map[string]string{"camlStdlib__list__map_123": "Stdlib.list.map_123", "camlFoo$2dbar": "Foo-bar"} {
		if got, ok := ocamlDemangle(in); !ok || got != want {
			t.Errorf("%s: %q %v", in, got, ok)
		}
	}
	if _, ok := ocamlDemangle("camlfoo"); ok {
		t.Error("lower case after caml demangled")
	}
}

const cProgram = `
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) int spin(int n) { volatile int x = 0; for (int i = 0; i < n; i++) x += i; return x; }
__attribute__((noinline)) static int helper(int n) { return spin(n) + 1; }
int main(int argc, char **argv) { printf("%d\n", helper(argc > 1 ? atoi(argv[1]) : 10)); return 0; }
`

// buildC compiles cProgram with gcc, or skips.
func buildC(t *testing.T, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	src := testbuild.Source(t, dir, "prog.c", cProgram)
	bin := filepath.Join(dir, "prog")
	if err := testbuild.Compile(t, "gcc", append([]string{"-O1", "-rdynamic", "-o", bin, src}, extra...)...); err != nil {
		t.Fatal(err)
	}
	return bin
}

func TestELFStrippedFallsBackToDynsym(t *testing.T) {
	bin := buildC(t)
	full, err := ELF(bin)
	if err != nil {
		t.Fatal(err)
	}
	stripped := bin + ".stripped"
	if out, err := exec.Command("strip", "-o", stripped, bin).CombinedOutput(); err != nil {
		t.Skipf("strip: %v\n%s", err, out)
	}
	dyn, err := ELF(stripped)
	if err != nil {
		t.Fatal(err)
	}
	names := func(tb *Table) map[string]Symbol {
		m := map[string]Symbol{}
		for _, s := range tb.Symbols() {
			m[s.Name] = s
		}
		return m
	}
	fn, dn := names(full), names(dyn)
	// spin and main are exported (-rdynamic): both tables have them at the
	// same file offset; the static helper exists only in .symtab.
	for _, n := range []string{"spin", "main"} {
		if fn[n] != dn[n] || fn[n].Name == "" {
			t.Errorf("%s: symtab %v, dynsym %v", n, fn[n], dn[n])
		}
	}
	if _, ok := fn["helper"]; !ok {
		t.Error("helper missing from .symtab table")
	}
	if _, ok := dn["helper"]; ok {
		t.Error("helper present in .dynsym table")
	}
	if _, ok := dn["printf@plt"]; !ok {
		t.Errorf("no synthesised printf@plt in %v", dyn.Symbols())
	}
	// A debug file that is the unstripped binary gives the full table.
	withDebug, err := ELFWithDebug(stripped, bin)
	if err != nil {
		t.Fatal(err)
	}
	if withDebug.Len() != full.Len() {
		t.Errorf("with debug file: %d symbols, want %d", withDebug.Len(), full.Len())
	}
}

func TestELFErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("\x7fELF\x02\x01\x01garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "missing"), bad} {
		if _, err := ELF(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("ELF(%s) error %v does not name the file", p, err)
		}
	}
	if got := FindDebug(filepath.Join(dir, "missing")); got != "" {
		t.Errorf("FindDebug(missing) = %q", got)
	}
}

// addELFSeeds gives an ELF fuzz target its seeds: the head of this test
// binary and a bare ELF identification.
func addELFSeeds(f *testing.F) {
	if b, err := os.ReadFile("/proc/self/exe"); err == nil && len(b) > 0 {
		f.Add(b[:min(len(b), 1<<16)])
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"))
}

func FuzzELF(f *testing.F) {
	addELFSeeds(f)
	// The file's bytes go to the table builder through debug/elf directly:
	// writing a file per input made this target ten times slower.
	f.Fuzz(func(t *testing.T, data []byte) {
		ef, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			return
		}
		tb, err := elfTable(ef, ef, "fuzz", "fuzz")
		if err == nil {
			_, _ = tb.Find(0x1000)
		}
		// Names kept in place and the tree searched by cluster give the
		// table names copied and the tree searched at every point give.
		kept, copied := tableWay(ef, "fuzz", true), tableWay(ef, "fuzz", false)
		if (kept == nil) != (copied == nil) {
			t.Fatalf("one way loads (%v), the other not (%v)", kept != nil, copied != nil)
		}
		if kept != nil {
			if err := sameTables(kept, copied); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// The bucket index of large tables answers as a search of all the bounds.
func TestFindIndexBuckets(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	indexed := 0
	for iter := range 40 {
		var syms []Symbol
		addr := uint64(rng.IntN(1 << 20))
		for i := range 300 + rng.IntN(3000) {
			addr += uint64(1 + rng.IntN(1<<uint(1+iter%12)))
			size := uint64(rng.IntN(64))
			syms = append(syms, Symbol{Start: addr, End: addr + size, Name: fmt.Sprint("s", i)})
		}
		tab := Build(syms)
		if tab.buckets == nil {
			if len(tab.bounds) >= 256 {
				t.Fatalf("iter %d: %d bounds and no bucket index", iter, len(tab.bounds))
			}
			continue
		}
		indexed++
		flat := &Table{names: tab.names, syms: tab.syms, bounds: tab.bounds, which: tab.which}
		for range 20000 {
			a := syms[0].Start - 100 + rng.Uint64N(addr-syms[0].Start+200)
			if got, want := tab.FindIndex(a), flat.FindIndex(a); got != want {
				t.Fatalf("iter %d addr %#x: %d with buckets, %d without", iter, a, got, want)
			}
		}
	}
	if indexed < 20 {
		t.Fatalf("only %d of 40 tables were large enough for a bucket index", indexed)
	}
}

// An ELF object (STT_OBJECT: a global variable) is an object symbol, a
// function is not.
func TestELFObjects(t *testing.T) {
	dir := t.TempDir()
	src := testbuild.Source(t, dir, "data.c", "int counter = 1;\nconst char table[64] = {1};\nint get(int i) { return table[i] + counter; }\nint main(void) { return get(0); }\n")
	bin := filepath.Join(dir, "data")
	if err := testbuild.Compile(t, "gcc", "-O1", "-o", bin, src); err != nil {
		t.Fatal(err)
	}
	tb, err := ELF(bin)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"counter": true, "table": true, "get": false, "main": false}
	for _, s := range tb.Symbols() {
		if object, ok := want[s.Name]; ok {
			if s.Object != object {
				t.Errorf("%s: Object %v, want %v", s.Name, s.Object, object)
			}
			delete(want, s.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("missing symbols %v", want)
	}
}

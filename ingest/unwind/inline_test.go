package unwind

import (
	"bufio"
	"debug/elf"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/internal/testbuild"
)

// inlineSrc has functions gcc inlines at -O2 (nested twice), static ones
// it renames (.constprop, .isra) and an ordinary call.
const inlineSrc = `
#include <stdio.h>
#include <stdlib.h>
static inline int sq(int x) { return x * x; }
static inline int sum_sq(int a, int b) { return sq(a) + sq(b); }
static int __attribute__((noinline)) scale(int x, int k) { return x * k + sum_sq(x, k); }
int __attribute__((noinline)) work(int n) {
	int s = 0;
	for (int i = 0; i < n; i++) s += sum_sq(i, n) + scale(i, 3);
	return s;
}
int main(int argc, char **argv) { printf("%d\n", work(argc > 1 ? atoi(argv[1]) : 1000)); return 0; }
`

// TestInlinesAddr2line compares Funcs with binutils' addr2line -i -f, as
// perf 6.1 runs it, at addresses all over a program built at test time
// with -g -O2, and over the C library's debug file when there is one.
func TestInlinesAddr2line(t *testing.T) {
	if _, err := exec.LookPath("addr2line"); err != nil {
		t.Skip("addr2line not installed")
	}
	dir := t.TempDir()
	src := testbuild.Source(t, dir, "inl.c", inlineSrc)
	bin := filepath.Join(dir, "inl")
	if err := testbuild.Compile(t, "gcc", "-g", "-O2", "-fomit-frame-pointer", "-o", bin, src); err != nil {
		t.Fatal(err)
	}
	compareAddr2line(t, bin, 1, nil)
	cxxSrc := testbuild.Source(t, dir, "inl.cc", testbuild.CxxSort)
	cxx := filepath.Join(dir, "inl-cxx")
	if err := testbuild.Compile(t, "g++", "-g", "-O2", "-o", cxx, cxxSrc); err != nil {
		t.Fatal(err)
	}
	// In address order and in two random orders, each in a fresh
	// process and a fresh Inlines: the answers depend on the order.
	compareAddr2line(t, cxx, 1, nil)
	compareAddr2line(t, cxx, 1, rand.New(rand.NewPCG(1, 2)))
	compareAddr2line(t, cxx, 1, rand.New(rand.NewPCG(3, 4)))
	stripped := filepath.Join(dir, "inl-stripped")
	if err := testbuild.Compile(t, "gcc", "-O2", "-s", "-shared", "-fPIC", "-o", stripped, src); err != nil {
		t.Fatal(err)
	}
	compareAddr2line(t, stripped, 1, nil) // dynamic symbols only
	if libc := testbuild.LibcDebugFile(); libc != "" && !testing.Short() {
		compareAddr2line(t, libc, 997, nil)
	}
}

// compareAddr2line asks one addr2line process about every stride-th
// address of path's .text, in address order or shuffled by rng, and
// compares its answers with those of Funcs asked in the same order.
func compareAddr2line(t *testing.T, path string, stride uint64, rng *rand.Rand) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	text := f.Section(".text")
	f.Close()
	if text == nil {
		t.Fatalf("%s: no .text", path)
	}
	in, err := OpenInlines(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var addrs []uint64
	for a := text.Addr; a < text.Addr+text.Size; a += stride {
		addrs = append(addrs, a)
	}
	if rng != nil {
		rng.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
	}
	var req strings.Builder
	for _, a := range addrs {
		fmt.Fprintf(&req, "%016x\n,\n", a) // perf's request and sentinel
	}
	cmd := exec.Command("addr2line", "-e", path, "-i", "-f")
	cmd.Stdin = strings.NewReader(req.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	record := func() (fn, loc string) {
		sc.Scan()
		fn = sc.Text()
		sc.Scan()
		return fn, sc.Text()
	}
	bad := 0
	for _, a := range addrs {
		var want []string
		fn, loc := record()
		ok := loc != "??:0"
		if ok {
			for ; fn != "??" || loc != "??:0"; fn, loc = record() {
				want = append(want, fn)
			}
		} else {
			record() // the sentinel's answer
		}
		got, gotOK := in.Funcs(a)
		if gotOK != ok || strings.Join(got, ";") != strings.Join(want, ";") {
			if bad++; bad <= 10 {
				t.Errorf("%s %#x: Funcs %q %v, addr2line %q %v", filepath.Base(path), a, got, gotOK, want, ok)
			}
		}
	}
	t.Logf("%s: %d of %d addresses differ from addr2line", filepath.Base(path), bad, len(addrs))
}

// TestSymbolNameMatchesScan checks symbolName's search against bfd's
// scan of the whole table in symbol-table order, on random tables with
// many ties of value and size.
func TestSymbolNameMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		in := &Inlines{secs: []elf.SectionHeader{
			{Flags: elf.SHF_ALLOC, Addr: 0x1000, Size: 0x100},
			{Flags: 0, Addr: 0x1100, Size: 0x100}, // not allocated
			{Flags: elf.SHF_ALLOC, Addr: 0x1200, Size: 0x100},
		}}
		var table []bfdSym // in symbol-table order
		for i := range rng.IntN(40) {
			sec := rng.IntN(len(in.secs))
			table = append(table, bfdSym{
				name:  fmt.Sprintf("s%d", i),
				value: in.secs[sec].Addr + uint64(rng.IntN(0x100)&^0xf),
				size:  uint64(1 + rng.IntN(3)),
				sec:   sec,
				index: i,
			})
		}
		in.syms = slices.Clone(table)
		sortSyms(in.syms)
		for addr := uint64(0xff0); addr < 0x1310; addr++ {
			want, wantOK := scanSymbolName(in.secs, table, addr)
			got, ok := in.symbolName(addr)
			if got != want || ok != wantOK {
				t.Fatalf("round %d, %#x: symbolName = %q, %v; the scan gives %q, %v", round, addr, got, ok, want, wantOK)
			}
		}
	}
}

// scanSymbolName is bfd's _bfd_elf_find_function as it reads: every
// symbol of addr's allocated section, in table order.
func scanSymbolName(secs []elf.SectionHeader, table []bfdSym, addr uint64) (string, bool) {
	sec := slices.IndexFunc(secs, func(s elf.SectionHeader) bool {
		return s.Flags&elf.SHF_ALLOC != 0 && addr >= s.Addr && addr-s.Addr < s.Size
	})
	best := -1
	for i, s := range table {
		if sec < 0 || s.sec != sec || s.value > addr {
			continue
		}
		if best < 0 || s.value > table[best].value || s.value == table[best].value && s.size > table[best].size {
			best = i
		}
	}
	if best < 0 {
		return "", false
	}
	return table[best].name, true
}

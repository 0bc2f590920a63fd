package attrib

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/ingest/symbols"
	"github.com/kmapindex/kmapindex/internal/perftest"
	"github.com/kmapindex/kmapindex/internal/testbuild"
)

// cxxSource exercises what perf's demangling has to get right: templates,
// operators, constructors and destructors, virtual thunks, lambdas, local
// classes, anonymous namespaces, GCC clones (.constprop, .isra, .part,
// .cold), static data and PLT calls into libstdc++.
const cxxSource = `
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>
#include <functional>
#include <algorithm>
#include <iostream>
#include <sstream>

volatile unsigned long sink;

namespace ns {
template <typename T, int N> struct Box {
	T v[N];
	Box() { for (int i = 0; i < N; i++) v[i] = T(i); }
	~Box() { sink += N; }
	T operator()(int i) const { return v[i % N]; }
	Box &operator+=(const Box &o) { for (int i = 0; i < N; i++) v[i] += o.v[i]; return *this; }
	bool operator<(const Box &o) const { return v[0] < o.v[0]; }
};
struct Base { virtual ~Base() {} virtual unsigned long work(int n) = 0; };
struct Left : virtual Base { unsigned long work(int n) override; };
struct Right : virtual Base { unsigned long work(int n) override { return n * 3; } };
struct Both : Left, Right { unsigned long work(int n) override; };
__attribute__((noinline)) unsigned long Left::work(int n) { unsigned long s = 0; for (int i = 0; i < n; i++) s += i ^ (s >> 3); return s; }
__attribute__((noinline)) unsigned long Both::work(int n) { return Left::work(n) + Right::work(n); }
namespace {
__attribute__((noinline)) unsigned long anon_spin(unsigned long n) { unsigned long s = 0; for (unsigned long i = 0; i < n; i++) s += i * i; return s; }
}
template <typename F> __attribute__((noinline)) unsigned long apply(F f, int n) { unsigned long s = 0; for (int i = 0; i < n; i++) s += f(i); return s; }
__attribute__((noinline)) unsigned long spin(unsigned long n, int unused_constant) {
	unsigned long s = 0;
	for (unsigned long i = 0; i < n; i++) s += (i << 1) ^ (s >> 5) ^ unused_constant;
	return s;
}
__attribute__((noinline, cold)) void rare(const char *why) { std::fprintf(stderr, "%s\n", why); std::abort(); }
__attribute__((noinline)) unsigned long checked(unsigned long n) { if (n == 12345678901ul) rare("bad"); return anon_spin(n); }
}

static __attribute__((noinline)) unsigned long local_static(const std::vector<int> &v) {
	struct Local { static unsigned long go(const std::vector<int> &v) { unsigned long s = 0; for (int x : v) s += x * x; return s; } };
	return Local::go(v);
}

unsigned long run(int rounds) {
	unsigned long total = 0;
	for (int r = 0; r < rounds; r++) {
		ns::Box<double, 8> a, b;
		a += b;
		total += (unsigned long)a(r);
		ns::Both both;
		ns::Base *base = &both;
		total += base->work(20000);
		total += ns::spin(200000, 7);
		total += ns::checked(100000);
		total += ns::apply([r](int i) { return (unsigned long)(i * r) >> 2; }, 50000);
		std::vector<int> v(20000);
		for (int i = 0; i < 20000; i++) v[i] = (i * 7919) % 1000;
		std::sort(v.begin(), v.end());
		total += local_static(v);
		std::map<std::string, int> m;
		for (int i = 0; i < 300; i++) m[std::to_string(i)] += i;
		total += m.size();
		std::ostringstream os;
		for (int i = 0; i < 300; i++) os << i << ' ';
		total += os.str().size();
		std::function<unsigned long(int)> fn = [&](int i) { return total + i; };
		total += fn(r);
	}
	return total;
}

int main(int argc, char **argv) {
	int rounds = argc > 1 ? std::atoi(argv[1]) : 200;
	sink = run(rounds);
	std::cout << sink << std::endl;
	return 0;
}
`

// buildCxx compiles cxxSource with g++ -O2 into dir, or skips.
func buildCxx(t *testing.T, dir string) string {
	t.Helper()
	src := testbuild.Source(t, dir, "cxx.cc", cxxSource)
	bin := filepath.Join(dir, "cxx")
	if err := testbuild.Compile(t, "g++", "-O2", "-g0", "-o", bin, src); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestCxxAgainstPerfScriptLive records the C++ program with callchains and
// requires every line of our script output to equal perf script's.
func TestCxxAgainstPerfScriptLive(t *testing.T) {
	if testing.Short() {
		t.Skip("records a program")
	}
	dir := t.TempDir()
	bin := buildCxx(t, dir)
	data := filepath.Join(dir, "cxx.data")
	if err := perftest.Record(data, []string{"-g", "-e", "cpu-clock", "-F", "4000"}, bin, "150"); err != nil {
		t.Skip(err)
	}
	ks, err := kallsyms.ReadFile("/proc/kallsyms")
	if err != nil || kallsyms.Restricted(ks) {
		t.Skip("no readable /proc/kallsyms")
	}
	want := perfScript(t, data, "--kallsyms", "/proc/kallsyms")
	got, _ := ourScript(t, data, ks, mapset.BTree, false)
	if !bytes.Equal(got, want) {
		compareLines(t, "cxx.data", got, want)
		return
	}
	n := bytes.Count(want, []byte("\n"))
	if !bytes.Contains(want, []byte("ns::")) {
		t.Errorf("no demangled ns:: frame among %d lines; the test program did not exercise demangling", n)
	}
	t.Logf("cxx.data: %d/%d lines equal perf script", n, n)
}

// TestDemangleAllSymbolsLive writes a recording with one sample at the
// start of every symbol of each DSO (the C++ test program, libstdc++ and,
// when rustc is installed, Rust programs with legacy and v0 mangling)
// and requires our names to equal those perf script prints.
func TestDemangleAllSymbolsLive(t *testing.T) {
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf not installed")
	}
	dir := t.TempDir()
	dsos := []string{buildCxx(t, dir)}
	for _, lib := range []string{"/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/usr/lib64/libstdc++.so.6"} {
		if p, err := filepath.EvalSymlinks(lib); err == nil {
			dsos = append(dsos, p)
			break
		}
	}
	dsos = append(dsos, buildRust(t, dir)...)
	dsos = append(dsos, bigDSOs(t)...)
	for _, dso := range dsos {
		t.Run(filepath.Base(dso), func(t *testing.T) {
			data := filepath.Join(dir, filepath.Base(dso)+".data")
			n := writeSymbolSamples(t, data, dso)
			if n == 0 {
				t.Skip("no symbols in executable segments")
			}
			want := perfScript(t, data)
			got, _ := ourScript(t, data, nil, mapset.BTree, false)
			if bytes.Equal(got, want) {
				t.Logf("%d symbols: all names equal perf script", n)
				return
			}
			compareLines(t, filepath.Base(dso), got, want)
		})
	}
}

const rustSource = `
use std::collections::HashMap;
use std::fmt;

pub struct Point<T> { x: T, y: T }

impl<T: fmt::Display> fmt::Display for Point<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { write!(f, "({}, {})", self.x, self.y) }
}

trait Shape { fn area(&self) -> f64; }
impl Shape for Point<f64> { fn area(&self) -> f64 { self.x * self.y } }

#[inline(never)]
fn spin<F: Fn(u64) -> u64>(n: u64, f: F) -> u64 { (0..n).map(|i| f(i)).fold(0, |a, b| a ^ b.wrapping_mul(31)) }

fn main() {
    let mut m: HashMap<String, Vec<Point<f64>>> = HashMap::new();
    for i in 0..2000u32 {
        m.entry(format!("k{}", i % 37)).or_default().push(Point { x: i as f64, y: 1.5 });
    }
    let shapes: Vec<Box<dyn Shape>> = m.values().flatten().map(|p| Box::new(Point { x: p.x, y: p.y }) as Box<dyn Shape>).collect();
    let total: f64 = shapes.iter().map(|s| s.area()).sum();
    println!("{} {} {}", total, spin(1_000_000, |i| i * i), Point { x: 1, y: 2 });
}
`

// buildRust compiles rustSource with legacy and v0 symbol mangling; none
// when rustc is missing.
func buildRust(t *testing.T, dir string) []string {
	t.Helper()
	if _, err := testbuild.Tool("rustc"); err != nil {
		t.Log("rustc not installed: Rust names not compared")
		return nil
	}
	src := testbuild.Source(t, dir, "rs.rs", rustSource)
	var bins []string
	for _, v := range []string{"legacy", "v0"} {
		bin := filepath.Join(dir, "rust_"+v)
		args := []string{"-O", "-o", bin, src}
		if v != "legacy" { // the default (v0 too for rustc 1.95); naming legacy is unstable
			args = append(args, "-C", "symbol-mangling-version="+v)
		}
		if err := testbuild.Compile(t, "rustc", args...); err != nil {
			t.Logf("%s mangling: %v", v, err)
			continue
		}
		bins = append(bins, bin)
	}
	return bins
}

// bigDSOs returns large DSOs of other compilers' output, when installed:
// node's binary (V8's C++, whose template argument packs libiberty prints
// its own way) and the Rust toolchain's librustc_driver (v0 Rust names,
// identical-code-folded aliases, and a BOLT rewrite whose .dynsym has an
// entry with a bad section index, at which perf stops loading: see
// symbols.Table.LoadFailed).
//
// KBENCH_SYMBOL_DSOS, a list of paths separated by colons, adds others.
func bigDSOs(t *testing.T) []string {
	t.Helper()
	var dsos []string
	if more := os.Getenv("KBENCH_SYMBOL_DSOS"); more != "" {
		dsos = append(dsos, filepath.SplitList(more)...)
	}
	if p, err := filepath.EvalSymlinks("/usr/bin/node"); err == nil {
		dsos = append(dsos, p)
	}
	if rustc, err := testbuild.Tool("rustc"); err == nil {
		if out, err := exec.Command(rustc, "--print", "sysroot").Output(); err == nil {
			libs, _ := filepath.Glob(filepath.Join(string(bytes.TrimSpace(out)), "lib", "librustc_driver-*.so"))
			dsos = append(dsos, libs...)
		}
	}
	return dsos
}

// writeSymbolSamples writes a recording in which pid 4242 maps the
// executable PT_LOAD segments of dso and takes one user-mode sample at
// the start of every symbol of our table for it (PLT entries included),
// and returns the number of samples.
func writeSymbolSamples(t *testing.T, data, dso string) int {
	t.Helper()
	tab, err := symbols.ELFWithDebug(dso, symbols.FindDebug(dso))
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(dso)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out, err := os.Create(data)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w, err := perfdata.NewWriter(out, perfdata.WriterOptions{Hostname: "test", OSRelease: "6.1.0", Arch: "x86_64", Version: "6.1", Cmdline: []string{"test"}})
	if err != nil {
		t.Fatal(err)
	}
	const pid, base = 4242, 0x5500_0000_0000
	id := perfdata.SampleID{Pid: pid, Tid: pid, Time: 1}
	if err := w.WriteComm(&perfdata.Comm{Info: perfdata.Info{Misc: perfdata.MiscCommExec}, Pid: pid, Tid: pid, Comm: filepath.Base(dso), SampleID: id}); err != nil {
		t.Fatal(err)
	}
	var segs []*elf.Prog
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || p.Flags&elf.PF_X == 0 || p.Filesz == 0 {
			continue
		}
		segs = append(segs, p)
		start := p.Vaddr &^ 0xfff
		end := (p.Vaddr + p.Filesz + 0xfff) &^ 0xfff
		m := &perfdata.Mmap{Info: perfdata.Info{Misc: uint16(perfdata.CPUModeUser)}, Pid: pid, Tid: pid,
			Addr: base + start, Len: end - start, Pgoff: p.Off &^ 0xfff, Prot: 5, Flags: 2, Filename: dso, SampleID: id}
		if err := w.WriteMmap(m); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, s := range tab.Symbols() {
		for _, p := range segs {
			if s.Start < p.Off || s.Start >= p.Off+p.Filesz {
				continue
			}
			smp := &perfdata.Sample{Info: perfdata.Info{Misc: uint16(perfdata.CPUModeUser)}, IP: base + p.Vaddr + (s.Start - p.Off),
				Pid: pid, Tid: pid, Time: uint64(2 + n), Period: 1}
			if err := w.WriteSample(smp); err != nil {
				t.Fatal(err)
			}
			n++
			break
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return n
}

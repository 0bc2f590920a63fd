package unwind

import (
	"github.com/kmapindex/kmapindex/internal/dwarf"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kmapindex/kmapindex/internal/testbuild"
)

// scanSrc has what scanUnit skips without reading (structures, unions,
// enumerations, arrays, function types, call sites) around functions,
// inlined ones among them; scanCxxSrc adds member functions, defined in
// their classes and in local ones, lambdas and templates.
const (
	scanSrc = `
#include <stdio.h>
#include <stdlib.h>
struct pt { int x, y; struct { int a[4]; } in; };
union u { int i; float f; };
enum color { RED, GREEN = 3 };
typedef int (*op)(int, int);
static inline int add(int a, int b) { return a + b; }
static inline int twice(struct pt *p) { return add(p->x, p->y) * 2; }
int __attribute__((noinline)) run(op f, int n) {
	struct pt p = {n, n + 1, {{1, 2, 3, 4}}};
	union u v = {n};
	enum color c = n > 2 ? GREEN : RED;
	return f(twice(&p), v.i + c + p.in.a[n & 3]);
}
int main(int argc, char **argv) { printf("%d\n", run(add, argc > 1 ? atoi(argv[1]) : 3)); return 0; }
`
	scanCxxSrc = `
#include <cstdio>
#include <vector>
#include <algorithm>
struct Acc {
	int total = 0;
	void add(int v) { total += v * weight(); }
	int weight() const { return 2; }
};
template <typename T> T sum(const std::vector<T> &v) {
	T s{};
	for (const T &x : v) s += x;
	return s;
}
enum class Mode { Fast, Slow };
int __attribute__((noinline)) work(int n, Mode m) {
	struct Local { int k; int get() const { return k * 3; } };
	std::vector<int> v;
	for (int i = 0; i < n; i++) v.push_back(i);
	std::sort(v.begin(), v.end(), [](int a, int b) { return a > b; });
	Acc acc;
	for (int x : v) acc.add(x + Local{x}.get());
	return acc.total + sum(v) + (m == Mode::Fast);
}
int main(int argc, char **argv) { std::printf("%d\n", work(argc + 5, Mode::Fast)); }
`
)

// TestScanUnitShortcuts: the function tables scanUnit makes, skipping the
// DIEs that hold no functions and keeping names by DIE, are the ones it
// makes reading every DIE, for C and C++ programs built at test time and
// the C library's debug file.
func TestScanUnitShortcuts(t *testing.T) {
	dir := t.TempDir()
	for _, b := range []struct{ compiler, file, src string }{
		{"gcc", "scan.c", scanSrc},
		{"g++", "scan.cc", scanCxxSrc},
	} {
		t.Run(b.compiler, func(t *testing.T) {
			src := testbuild.Source(t, dir, b.file, b.src)
			bin := filepath.Join(dir, b.file+".bin")
			if err := testbuild.Compile(t, b.compiler, "-g", "-O2", "-o", bin, src); err != nil {
				t.Fatal(err)
			}
			compareScans(t, bin)
		})
	}
	if libc := testbuild.LibcDebugFile(); libc != "" && !testing.Short() {
		compareScans(t, libc)
	}
}

// compareScans compares every unit's table, scanned both ways.
func compareScans(t *testing.T, path string) {
	t.Helper()
	fast, err := OpenInlines(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	all, err := OpenInlines(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	all.readAll = true
	if fast.d == nil {
		t.Fatalf("%s: no DWARF", path)
	}
	offs := append([]dwarf.Offset(nil), fast.noRanges...)
	for _, c := range fast.cus {
		offs = append(offs, c.off)
	}
	funcs := 0
	for _, off := range offs {
		a, b := fast.scanUnit(off), all.scanUnit(off)
		if a == nil || b == nil {
			if a != b {
				t.Fatalf("%s: unit %#x read one way only", path, off)
			}
			continue
		}
		if !reflect.DeepEqual(a.fns, b.fns) || !reflect.DeepEqual(a.seqs, b.seqs) || a.bfdFails != b.bfdFails {
			t.Fatalf("%s: unit %#x: %d functions, %d reading every DIE", path, off, len(a.fns), len(b.fns))
		}
		funcs += len(a.fns)
	}
	if funcs == 0 {
		t.Errorf("%s: no functions found", path)
	}
}

// Package testbuild compiles the small C, C++ and Rust programs that the
// tests read symbols from and record: one place that finds the compilers
// and runs them, and the system's debug files the tests read.
package testbuild

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// ErrMissing is returned by Tool for a compiler that is not installed.
var ErrMissing = errors.New("compiler not installed")

// Tool returns the path of the compiler name (gcc, g++, rustc, …): from
// $PATH, and for rustc also from ~/.cargo/bin, where rustup installs it.
func Tool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if name == "rustc" {
		if home, err := os.UserHomeDir(); err == nil {
			p := filepath.Join(home, ".cargo", "bin", name)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				return p, nil
			}
		}
	}
	return "", ErrMissing
}

// Source writes src to dir/file and returns its path.
func Source(t testing.TB, dir, file, src string) string {
	t.Helper()
	p := filepath.Join(dir, file)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Compile runs the compiler name with args. It skips t when the compiler
// is missing, and returns its error, with its output, when it fails.
func Compile(t testing.TB, name string, args ...string) error {
	t.Helper()
	tool, err := Tool(name)
	if err != nil {
		t.Skipf("%s: %v", name, err)
	}
	if out, err := exec.Command(tool, args...).CombinedOutput(); err != nil {
		return &Error{Name: name, Err: err, Output: string(out)}
	}
	return nil
}

// Error is a compiler's failure and what it printed.
type Error struct {
	Name, Output string
	Err          error
}

func (e *Error) Error() string { return e.Name + ": " + e.Err.Error() + "\n" + e.Output }

func (e *Error) Unwrap() error { return e.Err }

// LibcDebugFile returns the path of the running system's libc debug file
// (Debian's libc6-dbg, by build id), or "" when it is not installed.
func LibcDebugFile() string {
	f, err := elf.Open("/usr/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		return ""
	}
	defer f.Close()
	s := f.Section(".note.gnu.build-id")
	if s == nil {
		return ""
	}
	b, err := s.Data()
	if err != nil || len(b) < 16+20 {
		return ""
	}
	id := fmt.Sprintf("%x", b[16:])
	p := "/usr/lib/debug/.build-id/" + id[:2] + "/" + id[2:] + ".debug"
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// CxxSort is a C++ program whose inlined functions addr2line names by their
// DW_AT_name (a C++ inlined function has no linkage name), and by the
// symbol's name the first time it is asked about each: std::sort with a
// lambda (partitions inlined into a recursive __introsort_loop), std::map,
// std::function. It runs for about a second; tests that only read its
// binary build it with g++ -g -O2 too.
const CxxSort = `
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>
template <typename T> struct Acc { std::vector<T> v; void add(T x) { v.push_back(x); } T sum() const { T s{}; for (auto &x : v) s += x; return s; } };
static long work(int n) {
	std::map<std::string, long> m;
	Acc<long> a;
	for (int i = 0; i < n; i++) { m[std::to_string(i % 997)] += i; a.add(i); }
	std::vector<int> v(n);
	for (int i = 0; i < n; i++) v[i] = (i * 7919) % n;
	std::sort(v.begin(), v.end(), [](int x, int y) { return x > y; });
	std::function<long(long)> f = [&](long x) { return x + a.sum() % 7; };
	return f(m.size()) + v[0];
}
int main() { long s = 0; for (int r = 0; r < 12; r++) s += work(200000); printf("%ld\n", s); }
`

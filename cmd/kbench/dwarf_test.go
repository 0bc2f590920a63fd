package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/internal/linediff"
	"github.com/kmapindex/kmapindex/internal/perftest"
	"github.com/kmapindex/kmapindex/internal/testbuild"
)

// Programs for --call-graph dwarf recordings: deep enough stacks in the
// main binary, libc reached through the PLT (strlen, strspn, sqrt), a
// call through the PLT into a shared library of our own in the hot loop,
// and a signal handler interrupting it.
const (
	dwarfMathC = `
#include <stdio.h>
#include <string.h>
#include <math.h>
__attribute__((noinline)) static double leaf(double x, int n) {
	double s = 0;
	for (int i = 0; i < n; i++) s += sqrt(x + i) * 1.0000001;
	return s;
}
__attribute__((noinline)) double mid(double x) { return leaf(x, 2000) + leaf(x * 2, 1000); }
__attribute__((noinline)) double top(int k) { double s = 0; for (int i = 0; i < k; i++) s += mid(i); return s; }
__attribute__((noinline)) size_t strs(int k) {
	char buf[256]; size_t t = 0;
	memset(buf, 'a', 255); buf[255] = 0;
	for (int i = 0; i < k; i++) { buf[i % 255] = 'a' + (i % 7); t += strlen(buf) + strspn(buf, "abc"); }
	return t;
}
int main(void) {
	double s = 0; size_t t = 0;
	for (int r = 0; r < 20; r++) { s += top(2000); t += strs(200000); }
	printf("%f %zu\n", s, t);
	return 0;
}
`
	dwarfLibC = `int foo(int x) { return x * 3 + 1; }
`
	dwarfPLTC = `
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>
int foo(int x);
static volatile long hits;
__attribute__((noinline)) static void spin(void) { for (volatile int i = 0; i < 20000; i++) hits += i; }
static void handler(int sig) { (void)sig; spin(); }
__attribute__((noinline)) long loop(long n) { long s = 0; for (long i = 0; i < n; i++) s += foo((int)i); return s; }
int main(void) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sigaction(SIGALRM, &sa, 0);
	struct itimerval it = {{0, 2000}, {0, 2000}};
	setitimer(ITIMER_REAL, &it, 0);
	long s = 0;
	for (int r = 0; r < 6; r++) s += loop(50000000);
	printf("%ld %ld\n", s, hits);
	return 0;
}
`
)

// dwarfGoSrc is a Go program: Go binaries have no .eh_frame_hdr, so
// perf (without libunwind's debug-frame support) reports only the
// sampled IP of their samples, and addr2line cannot read their line
// tables, so it names no inlined functions there.
const dwarfGoSrc = `package main

import (
	"crypto/sha256"
	"fmt"
	"sort"
)

//go:noinline
func work(n int) [32]byte {
	b := make([]byte, 4096)
	var h [32]byte
	for i := 0; i < n; i++ {
		b[i%4096] = byte(i)
		h = sha256.Sum256(b)
	}
	return h
}

//go:noinline
func sorter(n int) int {
	s := make([]int, n)
	for i := range s {
		s[i] = (i * 7919) % n
	}
	sort.Ints(s)
	return s[n/2]
}

func main() {
	t := 0
	for r := 0; r < 10; r++ {
		t += int(work(3000)[0]) + sorter(200000)
	}
	fmt.Println(t)
}
`

// TestReportDwarfGoLive is TestReportDwarfLive for a Go program.
func TestReportDwarfGoLive(t *testing.T) {
	if testing.Short() {
		t.Skip("records a program for seconds")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	dir := t.TempDir()
	testbuild.Source(t, dir, "main.go", dwarfGoSrc)
	testbuild.Source(t, dir, "go.mod", "module dwarfgo\n\ngo 1.22\n")
	bin := filepath.Join(dir, "dwarfgo")
	cmd := exec.Command(goTool, "build", "-o", bin, ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("go build: %v\n%s", err, out)
	}
	compareDwarfRecording(t, "go", bin)
}

// TestReportDwarfLive records programs built now without frame pointers
// (-O2 -fomit-frame-pointer, with and without -g) with perf record
// --call-graph dwarf and compares kbench report -format script with perf
// script -F ip,sym,dso line for line: frames unwound from the binaries'
// CFI, PLT entries, a signal frame, and the inlined frames perf names
// with addr2line. It skips without perf, gcc or perf_event_open.
func TestReportDwarfLive(t *testing.T) {
	if testing.Short() {
		t.Skip("records programs for seconds")
	}
	dir := t.TempDir()
	math := testbuild.Source(t, dir, "math.c", dwarfMathC)
	lib := testbuild.Source(t, dir, "foo.c", dwarfLibC)
	plt := testbuild.Source(t, dir, "plt.c", dwarfPLTC)
	cxx := testbuild.Source(t, dir, "sort.cc", testbuild.CxxSort)
	for _, tc := range []struct {
		name  string
		build func(t *testing.T, bin string, flags []string) error
	}{
		{"math", func(t *testing.T, bin string, flags []string) error {
			return testbuild.Compile(t, "gcc", append(flags, "-o", bin, math, "-lm")...)
		}},
		{"plt+signal", func(t *testing.T, bin string, flags []string) error {
			so := bin + "-lib/libfoo.so"
			if err := os.MkdirAll(filepath.Dir(so), 0o755); err != nil {
				return err
			}
			if err := testbuild.Compile(t, "gcc", append(flags, "-shared", "-fPIC", "-o", so, lib)...); err != nil {
				return err
			}
			return testbuild.Compile(t, "gcc", append(flags, "-o", bin, plt, "-L"+filepath.Dir(so), "-lfoo", "-Wl,-rpath,"+filepath.Dir(so))...)
		}},
		{"c++", func(t *testing.T, bin string, flags []string) error {
			return testbuild.Compile(t, "g++", append(flags, "-o", bin, cxx)...)
		}},
	} {
		for _, debug := range []bool{false, true} {
			name := tc.name
			flags := []string{"-O2", "-fomit-frame-pointer"}
			if debug {
				name += " -g"
				flags = append(flags, "-g")
			}
			t.Run(name, func(t *testing.T) {
				bin := filepath.Join(dir, strings.NewReplacer(" ", "", "+", "-").Replace(name))
				if err := tc.build(t, bin, flags); err != nil {
					t.Fatal(err)
				}
				compareDwarfRecording(t, name, bin)
			})
		}
	}
}

// compareDwarfRecording records bin with --call-graph dwarf and compares
// the two scripts, logging how many lines match.
func compareDwarfRecording(t *testing.T, name, bin string) {
	t.Helper()
	file := bin + ".data"
	perfRecordOrSkip(t, file, []string{"--call-graph", "dwarf", "-F", "999"}, bin)
	want, err := perftest.Script(file, "--kallsyms", "/proc/kallsyms")
	if err != nil {
		t.Skip(err)
	}
	got := mustReport(t, nil, "-format", "script", "-kallsyms", "/proc/kallsyms", file)
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	match, shown := 0, 0
	for i := range min(len(gl), len(wl)) {
		if gl[i] == wl[i] {
			match++
		} else if shown++; shown <= 8 {
			t.Errorf("%s line %d:\n got %q\nwant %q", name, i+1, gl[i], wl[i])
		}
	}
	if len(gl) != len(wl) {
		t.Errorf("%s: %d lines, perf script %d", name, len(gl), len(wl))
	}
	if !strings.Contains(want, "\n\t") {
		t.Errorf("%s: perf script printed no callchain: the test tests nothing", name)
	}
	t.Logf("%s: %d/%d lines equal perf script", name, match, len(wl))
	// Folded stacks name an inlined frame by its function, as
	// stackcollapse-perf.pl folds perf script's "name (inlined)" line.
	folded := mustReport(t, nil, "-format", "folded", "-kallsyms", "/proc/kallsyms", file)
	for _, line := range strings.Split(want, "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] != "(inlined)" {
			continue
		}
		fn := f[1]
		if i := strings.IndexByte(fn, '('); i > 0 {
			fn = fn[:i] // stackcollapse-perf.pl's tidying: C++'s "operator()" folds as "operator"
		}
		if !strings.Contains(folded, ";"+fn+";") && !strings.Contains(folded, ";"+fn+" ") {
			t.Errorf("%s: inlined frame %s is in no folded stack", name, f[1])
			break
		}
	}
	// The tables take the unwound frames too: the Children column
	// cumulates them (inlined frames are entries of their own), in caller
	// order, by the sort keys.
	for _, tc := range []struct{ kbench, perf []string }{
		{nil, nil},
		{[]string{"-children"}, []string{"--children"}},
		{[]string{"-children", "-sort", "comm,dso,sym"}, []string{"--children", "--sort", "comm,dso,sym"}},
		{[]string{"-sort", "pid,sym"}, []string{"--sort", "pid,sym"}},
	} {
		want, err := perftest.ReportTable(file, append([]string{"--kallsyms", "/proc/kallsyms"}, tc.perf...)...)
		if err != nil {
			t.Fatal(err)
		}
		got := mustReport(t, nil, append(append([]string{"-kallsyms", "/proc/kallsyms"}, tc.kbench...), file)...)
		g, w := linediff.ReportRows(got), linediff.ReportRows(want)
		if d := linediff.First(strings.Join(g, "\n"), strings.Join(w, "\n")); d != "" {
			t.Errorf("%s %q: table differs from perf report: %s%s", name, tc.perf, d, keepRecording(file, bin))
		}
		t.Logf("%s %q: %d rows", name, tc.perf, len(w))
	}
}

// keepRecording copies a live recording whose views differ from perf's,
// and its program, out of the test's temporary directory, so that a
// difference seen once (on a loaded machine) can be looked into; it
// returns a note naming the copies, or why there are none.
func keepRecording(file, bin string) string {
	dir, err := os.MkdirTemp("", "kbench-differs-")
	if err != nil {
		return "; not kept: " + err.Error()
	}
	for _, f := range []string{file, bin} {
		b, err := os.ReadFile(f)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o755)
		}
		if err != nil {
			return "; not kept: " + err.Error()
		}
	}
	return "; recording and program kept in " + dir
}

// TestReportDwarfOtherBuildLive reads a --call-graph dwarf recording as
// another machine would: its program is rebuilt at the same path (other
// optimization, so other code, CFI and build id) after the recording,
// and neither tool has a build-id cache. perf unwinds through the file at
// the recorded path all the same (dso__data_fd's SYSTEM_PATH_DSO: no
// build-id check) though its symbols refuse it, so its frames come out
// unnamed, some of them wrong: kbench must print the same, in the script
// and in the children table.
func TestReportDwarfOtherBuildLive(t *testing.T) {
	if testing.Short() {
		t.Skip("records a program for seconds")
	}
	dir := t.TempDir()
	src := testbuild.Source(t, dir, "math.c", dwarfMathC)
	bin := filepath.Join(dir, "math")
	if err := testbuild.Compile(t, "gcc", "-O2", "-fomit-frame-pointer", "-o", bin, src, "-lm"); err != nil {
		t.Fatal(err)
	}
	file := bin + ".data"
	perfRecordOrSkip(t, file, []string{"--call-graph", "dwarf", "-F", "999", "--no-buildid-cache"}, bin)
	if err := testbuild.Compile(t, "gcc", "-O1", "-fomit-frame-pointer", "-o", bin, src, "-lm"); err != nil {
		t.Fatal(err)
	}
	noCache := perftest.Options{NoBuildIDCache: true}
	for _, tc := range []struct{ kbench, perf []string }{
		{[]string{"-format", "script"}, []string{"script", "-F", "ip,sym,dso"}},
		{[]string{"-children"}, []string{"report", "--stdio", "--sort", "dso,sym", "--children", "-n", "-g", "none"}},
	} {
		want, _, err := perftest.Run(noCache, append(tc.perf, "-i", file, "--kallsyms", "/proc/kallsyms")...)
		if err != nil {
			t.Fatal(err)
		}
		got := mustReport(t, nil, append(append([]string{"-debugdir", "-", "-kallsyms", "/proc/kallsyms"}, tc.kbench...), file)...)
		if tc.perf[0] == "report" {
			got, want = strings.Join(linediff.ReportRows(got), "\n"), strings.Join(linediff.ReportRows(want), "\n")
		} else if !strings.Contains(want, "\n\t") {
			t.Fatal("perf script printed no callchain: the test tests nothing")
		}
		if d := linediff.First(got, want); d != "" {
			t.Errorf("kbench %q differs from perf %q: %s", tc.kbench, tc.perf[0], d)
		}
	}
}

// TestReportDwarfManyProcessesLive unwinds the stacks of many short
// processes (a shell loop of ls), where frames land in libraries' data
// (object symbols, named by the entries merged into a row) and perf's
// tree of entries keeps rows of one key apart (ordered as its tree has
// them): script, flat and children tables must equal perf's.
func TestReportDwarfManyProcessesLive(t *testing.T) {
	if testing.Short() {
		t.Skip("records for seconds")
	}
	file := filepath.Join(t.TempDir(), "many.data")
	args := []string{"--call-graph", "dwarf", "-F", "2999", "--user-regs=ip,sp,bp", "--no-buildid-cache"}
	perfRecordOrSkip(t, file, args, "sh", "-c", "for i in $(seq 150); do ls / >/dev/null; cat /proc/self/maps >/dev/null; done")
	compareWithPerf(t, file, "/proc/kallsyms", []perfComparison{
		{[]string{"-format", "script"}, []string{"script", "-F", "ip,sym,dso"}},
		{[]string{"-no-children"}, []string{"report", "--stdio", "--sort", "dso,sym", "--no-children", "-n", "-g", "none"}},
		{[]string{"-children"}, []string{"report", "--stdio", "--sort", "dso,sym", "--children", "-n", "-g", "none"}},
	})
}

// perfRecordOrSkip records command with perf record args into file, and
// skips the test when perf is not installed or may not record here.
func perfRecordOrSkip(t *testing.T, file string, args []string, command ...string) {
	t.Helper()
	if err := perftest.Record(file, args, command...); err != nil {
		if errors.Is(err, perftest.ErrNotInstalled) {
			t.Skip(err)
		}
		t.Skipf("perf record %q (perf_event_open not allowed?): %v", args, err)
	}
}
